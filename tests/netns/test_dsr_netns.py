"""DSR end to end (issue 3 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium. Skipped unless root and the medium is built (tests/netns/conftest.py). The protocol's
behaviour is asserted exactly in virtual time (tests/unit/dsr/,
tests/unit/test_protocols_positions.py); this is the same story once for real, checked against the
medium's counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from netns_helpers import check_ground_truth, check_rwp20, middle_station_moves, run, rwp20


@pytest.mark.netns
def test_discovery_then_middle_station_leaves_route_error_and_flow_continues(tmp_path: Path) -> None:
    """The 5-station line (200 m apart): sta1 discovers sta5 and 2, 3, 4 forward the TCP flow.
    sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s: the link 2 -> 3 (or 3 -> 4) breaks, a
    ROUTE ERROR goes out, the packets are salvaged or the route rediscovered over sta6, and the TCP
    flow goes on through sta6."""
    path = middle_station_moves(tmp_path, "dsr")
    run_dir, summary, counters = run(path, tmp_path, "test-dsr-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert counters[1]["routing_sent"].get("rreq", 0) >= 1
    assert counters[5]["routing_sent"].get("rrep", 0) >= 1
    assert all(counters[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert counters[1]["samples"]["discovery_latency_s"]["n"] >= 1
    rerrs = sum(c["routing_sent"].get("rerr", 0) for c in counters.values())
    assert rerrs >= 1
    repaired = sum(c["extra"].get("salvaged", 0) for c in counters.values()) + counters[1][
        "routing_sent"
    ].get("rreq", 0)
    assert repaired >= 2
    assert counters[6]["data_forwarded"] > 0  # the flow continued over the new station
    check_ground_truth("dsr", path, run_dir, summary, counters)


@pytest.mark.netns
@pytest.mark.slow
def test_ghanem_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s, 120 s, one TCP:
    routers and medium agree frame by frame (DSR broadcasts exactly its RREQs), the overhead lies
    within the medium's counts, and the flow received no more than the path's capacity allows while
    it existed (from the stations' trajectories)."""
    path = rwp20(tmp_path, "dsr")
    run_dir, summary, counters = run(path, tmp_path, "test-dsr-rwp20")
    check_rwp20("dsr", path, run_dir, summary, counters)
