"""The orchestrator: stations (one netns each), the medium, routers, traffic, results, teardown.

Public API (docs/orchestrator.md)::

    from testbed.run import Testbed, run_scenario
    with Testbed("topologies/chain5.yaml", seed=1, experiment="demo") as tb:
        print(tb.sta1.cmd("ping -c1 10.0.0.5"))
        tb.run()                      # the scenario's flows for its duration; summary.json
    run_dir = run_scenario("topologies/chain5.yaml", seed=1, experiment="demo")

This package file imports nothing, so that ``testbed.clean`` and the zygote start fast.
"""
