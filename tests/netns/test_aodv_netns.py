"""AODV end to end (issue 4 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium, the AODV core in every station's router. Skipped unless root and the medium is built
(tests/netns/conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from netns_helpers import LINE, middle_station_moves, overhead, run, rwp20, scenario, tcp


@pytest.mark.netns
def test_chain5_carries_tcp(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "aodv-chain5",
        "aodv",
        duration_s=14,
        field={"x_m": 1000, "y_m": 1000},
        stations={"count": 5, "positions": LINE},
        mobility={"model": "static"},
        traffic={"tcp": [tcp(1, 5, 1, 10)]},
        capture={"pcap": True, "stations": [3]},
    )
    run_dir, summary, c = run(path, tmp_path, "test-aodv-chain5")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert c[1]["routing_sent"].get("rreq", 0) >= 1  # discovery by expanding ring
    assert c[5]["routing_sent"].get("rrep", 0) >= 1  # answered by the destination
    assert all(c[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert c[1]["samples"]["discovery_latency_s"]["n"] >= 1
    assert all(not c[s]["malformed"] for s in c)
    # the middle station's radiotap capture: tshark decodes its AODV frames and sees the TCP flow
    pcaps = sorted(run_dir.rglob("*.pcap*"))
    assert pcaps, "no capture written"

    def tshark(display_filter: str, field: str) -> list[str]:
        out = subprocess.run(
            ["tshark", "-r", str(pcaps[0]), "-Y", display_filter, "-T", "fields", "-e", field],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return out.stdout.split()

    assert set(tshark("aodv", "aodv.type")) >= {"1", "2"}  # RREQ and RREP
    assert len(tshark("tcp", "tcp.srcport")) > 100


@pytest.mark.netns
def test_middle_station_moves_away_rerr_new_route_flow_continues(tmp_path: Path) -> None:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s: the MAC reports the broken link, the
    upstream node sends a RERR, sta1 rediscovers (over sta6) and the TCP flow goes on."""
    path = middle_station_moves(tmp_path, "aodv")
    _, summary, c = run(path, tmp_path, "test-aodv-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    rerr = sum(x["routing_sent"].get("rerr", 0) for x in c.values())
    assert rerr >= 1, "a broken link produces a ROUTE ERROR"
    assert sum(x["extra"].get("aodv_link_breaks", 0) for x in c.values()) >= 1
    # the first route and a new one: either end may rediscover (sta5's RREQ for its ACKs also
    # gives sta1 a reverse route, RFC 3561 section 6.5), so count both ends' discoveries
    discoveries = sum(c[s]["samples"].get("discovery_latency_s", {}).get("n", 0) for s in (1, 5))
    assert discoveries >= 2
    assert c[6]["data_forwarded"] > 0  # the flow continued over the new station


@pytest.mark.netns
@pytest.mark.slow
def test_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup with AODV: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s,
    120 s, one TCP flow: it completes with throughput above zero and the overhead is reported."""
    path = rwp20(tmp_path, "aodv")
    _, summary, c = run(path, tmp_path, "test-aodv-rwp20")
    (flow,) = summary["flows"]
    assert flow["throughput_bps"] > 0
    assert overhead(c) > 0
    assert summary["routing_packets"] == overhead(c)
    assert sum(x["routing_sent"].get("rreq", 0) for x in c.values()) >= 1
