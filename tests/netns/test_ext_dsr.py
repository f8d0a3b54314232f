"""EPLN (Yu 2004 s4.3, Algorithm 2) end to end on the real station stack: the testbed's 4-station
DSR chain (ns2-wavelan, the real medium and routers), kernel TCP via iperf3 sta1 -> sta4, EPLN
turned on only by the scenario's ``routing.extensions`` (the orchestrator runs the endpoint agent
and loads the BPF side), and an outage of the sta2-sta3 link mid-flow.

    sta1 (sender) -- sta2 -- X -- sta3 -- sta4 (iperf3 server)

Invariants (router counters, ``routers/sta<N>.counters.json``): sta2 records the lost segments in
its drop_list and sends a ROUTE ERROR with a conn_list; sta1 hands the notices to TCP (Algorithm
2) and its agent retransmits a reported segment early. DSR-Update (s2.2) on the same chain: sta2
notifies sta1, which learned the broken link from it. About 30 s each.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nodes.tcpctl import kernel as K
from testbed import run as tbrun
from testbed.medium import MEDIUM_BIN

pytestmark = [pytest.mark.netns]
RESULTS = Path(os.environ.get("TCPCTL_RESULTS", "results"))
T_FLOW, T_OUT, OUTAGE_S, DURATION_S = 1.0, 4.0, 4.0, 12.0


@pytest.fixture(autouse=True)
def _prereq() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not K.TCPCTL_OBJ.exists():
        pytest.skip("BPF objects not built (make -C nodes/tcpctl/bpf)")
    if not MEDIUM_BIN.exists():
        pytest.skip("medium not built (make medium)")


def counters(run_dir: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for f in sorted((run_dir / "routers").glob("sta*.counters.json")):
        out[int(f.name[3:].split(".")[0])] = json.loads(f.read_text())["counters"]
    return out


def wait_for(pred: Any, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def chain(name: str, extensions: list[str]) -> dict[str, Any]:
    """The 4-station DSR chain with one TCP flow sta1 -> sta4 and ``extensions``."""
    return {
        "name": name,
        "duration_s": DURATION_S,
        "field": {"x_m": 800, "y_m": 100},
        "stations": {"count": 4, "placement": {"kind": "line", "spacing_m": 200, "origin": [0, 50]}},
        "radio": {"preset": "ns2-wavelan"},
        "mobility": {"model": "static"},
        "traffic": {"tcp": [{"src": 1, "dst": 4, "start_s": T_FLOW, "cc": "reno", "max_window_pkts": 12}]},
        "routing": {"protocol": "dsr", "extensions": extensions},
        "tcp": {"cc": "reno"},
    }


def extra_of(c: dict[int, dict[str, Any]], prefix: str) -> dict[int, dict[str, int]]:
    """Each station's ``extra`` counters whose names start with ``prefix``."""
    return {s: {k: v for k, v in c[s].get("extra", {}).items() if k.startswith(prefix)} for s in c}


def run_with_outage(tmp_path: Path, sc: dict[str, Any], station: int, counter: str) -> tuple[Path, bool]:
    """Run ``sc``, take the sta2-sta3 link down at ``T_OUT`` for ``OUTAGE_S``; whether
    ``station``'s ``extra`` counter ``counter`` rose above 0 within 5 s of the break."""
    path = tmp_path / f"{sc['name']}.json"
    path.write_text(json.dumps(sc))
    tb = tbrun.Testbed(
        path, experiment="ext-dsr-netns", out_root=RESULTS, router_target="nodes.router.main:run", quiet=True
    )
    err: list[BaseException] = []

    def go() -> None:
        try:
            tb.run()
        except BaseException as exc:  # reported below
            err.append(exc)

    tb.__enter__()
    th = threading.Thread(target=go, daemon=True)
    try:
        th.start()
        time.sleep(max(0.0, T_OUT - tb.now_s()))
        tb.medium("set_link", a=2, b=3, loss=1.0)
        got = wait_for(lambda: extra_of(counters(tb.dir), counter).get(station, {}).get(counter, 0) > 0, 5)
        time.sleep(max(0.0, T_OUT + OUTAGE_S - tb.now_s()))
        tb.medium("set_link", a=2, b=3, loss=None)
        th.join(DURATION_S + 60)
    finally:
        tb.stop()
    if err:
        raise err[0]
    return tb.dir, got


def test_epln_conn_list_and_early_retransmission(tmp_path: Path) -> None:
    run_dir, got_rerr = run_with_outage(tmp_path, chain("epln-dsr", ["epln"]), 2, "epln_conn_list_sent")
    c = counters(run_dir)
    extra = extra_of(c, "epln")
    (run_dir / "ext_dsr_test.json").write_text(json.dumps({"got_rerr": got_rerr, "epln": extra}, indent=1))
    assert got_rerr, extra  # within 5 s of the break
    assert extra[2].get("epln_drop_list_records", 0) >= 1, extra  # sta2 recorded what it dropped
    assert c[2]["routing_sent"].get("rerr", 0) >= 1, extra
    assert extra[1].get("epln_icmp_to_tcp", 0) >= 1, extra  # the notices reached the sender
    assert extra[1].get("epln_early_retransmissions", 0) >= 1, extra  # and it retransmitted early
    # the sender's endpoint agent counts its copies per connection in the router's counters
    ep = json.loads((run_dir / "routers" / "sta1.counters.json").read_text())["endpoint"]["conns"]
    assert any(v["agent_rexmt"] >= 1 for k, v in ep.items() if k.endswith(":5201")), ep


def test_dsr_update_notifies_the_neighbour_that_learned_the_broken_link(tmp_path: Path) -> None:
    """DSR-Update (Yu 2004 s2.2) on the real stack: sta2 forwarded sta4's Route Reply to sta1 (and
    sta1's ACKs came back through it), so sta1 learned the link sta2-sta3 from sta2. When sta2's
    frames to sta3 fail, sta2 sends sta1 a cache update (a one-hop ROUTE ERROR with option 18),
    and sta1's router takes it (sta3, the unreachable end, is never told)."""
    run_dir, got = run_with_outage(tmp_path, chain("dsr-update", ["dsr_update"]), 1, "dsr_update_received")
    c = counters(run_dir)
    extra = extra_of(c, "dsr_update")
    assert got, extra  # within 5 s of the break
    assert extra[2].get("dsr_update_sent", 0) >= 1, extra
    assert extra[3].get("dsr_update_received", 0) == 0, extra
    assert c[2]["routing_sent"].get("rerr", 0) >= 1, extra
