"""DSR end to end (issue 3 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium. Skipped unless root and the medium is built (tests/netns/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netns_helpers import LINE, middle_station_moves, overhead, run, rwp20, scenario, tcp


@pytest.mark.netns
def test_chain5_discovers_route_and_carries_tcp(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "dsr-chain5",
        "dsr",
        duration_s=15,
        field={"x_m": 1000, "y_m": 1000},
        stations={"count": 5, "positions": LINE},
        mobility={"model": "static"},
        traffic={"tcp": [tcp(1, 5, 1, 10)]},
    )
    _, summary, counters = run(path, tmp_path, "test-dsr-chain5")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert counters[1]["routing_sent"].get("rreq", 0) >= 1
    assert counters[5]["routing_sent"].get("rrep", 0) >= 1
    assert all(counters[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert counters[1]["samples"]["discovery_latency_s"]["n"] >= 1


@pytest.mark.netns
def test_middle_station_leaves_route_error_and_flow_continues(tmp_path: Path) -> None:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s: the link 2 -> 3 (or 3 -> 4) breaks,
    a ROUTE ERROR goes out, the packets are salvaged or the route rediscovered over sta6, and the
    TCP flow goes on through sta6."""
    path = middle_station_moves(tmp_path, "dsr")
    _, summary, counters = run(path, tmp_path, "test-dsr-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    rerrs = sum(c["routing_sent"].get("rerr", 0) for c in counters.values())
    assert rerrs >= 1
    repaired = sum(c["extra"].get("salvaged", 0) for c in counters.values()) + counters[1][
        "routing_sent"
    ].get("rreq", 0)
    assert repaired >= 2
    assert counters[6]["data_forwarded"] > 0  # the flow continued over the new station


@pytest.mark.netns
@pytest.mark.slow
def test_ghanem_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s, 120 s, one TCP."""
    path = rwp20(tmp_path, "dsr")
    _, summary, counters = run(path, tmp_path, "test-dsr-rwp20")
    (flow,) = summary["flows"]
    assert flow["throughput_bps"] > 0
    assert overhead(counters) > 0
    assert summary["routing_packets"] == overhead(counters)
