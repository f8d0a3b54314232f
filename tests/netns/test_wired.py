"""The wired example (topologies/wired-gateway.yaml): a TCP flow from a wired server through a
gateway station to a station 3 MANET hops away, on the run's own Open vSwitch; and cleanup of
that OVS after the runner is SIGKILLed (issue 15)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import netns, procs
from testbed import run as tbrun
from testbed.cleanup import clean_leftovers
from testbed.naming import RUN_ROOT
from testbed.registry import Registry
from testbed.wired import ovs_available

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "topologies" / "wired-gateway.yaml"


@pytest.mark.netns
def test_wired_server_to_station_three_hops_away(tmp_path: Path) -> None:
    with tbrun.Testbed(SCENARIO, out_root=tmp_path, experiment="wired", quiet=True) as tb:
        assert tb.wired is not None
        want = "ovs" if ovs_available() is None else "bridge"
        assert tb.wired.backend == want
        pcap = tmp_path / "h1.pcap"
        cap = tb.h1.popen(["tcpdump", "-ni", "h1-eth0", "-U", "-w", str(pcap), "tcp"], role="tcpdump")
        summary = tb.run()
        cap.send_signal(signal.SIGINT)
        cap.wait(5)
        if want == "ovs":  # the bridge is the run's own, in its control namespace
            assert tb.wired.vsctl("list-br").split() == [f"mt{tb.run_id}-s1"]
        run_dir = tb.dir
    (flow,) = summary["flows"]
    assert (flow["src"], flow["dst"]) == ("h1", 4)
    assert flow["throughput_bps"] is not None and flow["throughput_bps"] > 50_000, flow
    assert isinstance(flow["tcp_timeouts"], int), flow  # the server's kernel counter, like any flow
    assert summary["hosts"]["h1"]["tcp_timeouts"] == flow["tcp_timeouts"]
    assert summary["wired"]["gateway"] == 1
    # tcpdump on the wired port saw the flow (data from h1 to sta4)
    seen = subprocess.run(
        ["tcpdump", "-nr", str(pcap), "src 10.1.0.1 and dst 10.0.0.4"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    assert len(seen) > 100
    # every packet of the flow crossed the MANET inside IP-in-IP: the gateway wrapped, sta4 unwrapped
    gw = json.loads((run_dir / "routers" / "sta1.counters.json").read_text())["io"]
    dst = json.loads((run_dir / "routers" / "sta4.counters.json").read_text())["io"]
    assert gw["ipip_encapsulated"] > 100 and dst["ipip_decapsulated"] > 100
    assert dst["ipip_encapsulated"] > 50  # the ACKs going back


@pytest.mark.netns
def test_make_clean_removes_ovs_after_sigkill(tmp_path: Path) -> None:
    if ovs_available() is not None:
        pytest.skip(f"Open vSwitch not available: {ovs_available()}")
    runner = subprocess.Popen(
        [sys.executable, "-m", "testbed.run", str(SCENARIO), "--out", str(tmp_path), "--experiment", "kill"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    reg: Registry | None = None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            for path in RUN_ROOT.glob("*/registry.json"):
                try:
                    r = Registry.load(path)
                except (ValueError, KeyError, FileNotFoundError):
                    continue
                if r.runner.get("pid") == runner.pid and any(
                    p["role"].startswith("router") for p in r.processes
                ):
                    reg = r
            if reg is not None:
                break
            time.sleep(0.2)
        assert reg is not None, "the run did not come up"
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(5)
    ovs = [p for p in reg.processes if p["role"] in ("ovsdb-server", "ovs-vswitchd")]
    assert len(ovs) == 2 and all(procs.is_same(p["pid"], p["start_time"]) for p in ovs)  # orphaned
    rep = clean_leftovers(run_ids=[reg.run_id])
    assert rep.ovs == [reg.run_id]
    assert not any(procs.is_same(p["pid"], p["start_time"]) for p in ovs)
    assert netns.list_ours(reg.run_id) == [] and not (RUN_ROOT / reg.run_id).exists()
    assert not os.path.exists(reg.ovs_dir or "/nonexistent-ovs-dir")


@pytest.mark.netns
def test_linux_bridge_fallback(tmp_path: Path) -> None:
    overrides = {"wired.backend": "bridge", "traffic": {}, "duration_s": 5}
    with tbrun.Testbed(
        SCENARIO, out_root=tmp_path, experiment="wired", overrides=overrides, quiet=True
    ) as tb:
        assert tb.wired is not None and tb.wired.backend == "bridge"
        assert tb.wired.procs == []  # no OVS daemon for a Linux bridge
        res = tb.h1.cmd("ping -c3 -i0.3 -W3 10.0.0.4")
        assert " 0% packet loss" in res.stdout or "3 received" in res.stdout, res
        back = tb.sta4.cmd("ping -c2 -i0.3 -W3 10.1.0.1")
        assert back.rc == 0, back
