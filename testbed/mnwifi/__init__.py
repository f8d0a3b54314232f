"""Mininet-WiFi scripts on the testbed (issue 15; docs/mininet-wifi.md).

``python3 -m testbed.mnwifi script.py [args]`` runs a Mininet-WiFi ad hoc script unchanged: its
``mn_wifi`` and ``mininet`` imports resolve to this package's API (``shim/``) through an import
hook installed only inside that command, so a real Mininet-WiFi installed beside is never
shadowed. The API builds a scenario (topologies/scenario.py) and runs it with
``testbed.run.Testbed``.
"""
