"""AODV end to end (issue 4 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium, the AODV core in every station's router. Skipped unless root and the medium is built
(tests/netns/conftest.py). The protocol's behaviour is asserted exactly in virtual time
(tests/unit/aodv/, tests/unit/test_protocols_positions.py); this is the same story once for real,
checked against the medium's counts and a capture."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from netns_helpers import check_ground_truth, check_rwp20, middle_station_moves, run, rwp20


@pytest.mark.netns
def test_discovery_then_middle_station_moves_away_rerr_new_route_flow_continues(tmp_path: Path) -> None:
    """The 5-station line (200 m apart): sta1 discovers sta5 (RREQ by expanding ring, RREP from the
    destination) and 2, 3, 4 forward the TCP flow. sta6 arrives beside sta3 at 4 s; sta3 leaves at
    8 s: the MAC reports the broken link, the upstream node sends a RERR, sta1 rediscovers (over
    sta6) and the TCP flow goes on. The radiotap captures of sta3's two neighbours show it all to
    tshark (the RERR comes from sta2 for the data or from sta4 for the ACKs, whichever direction
    the break is met in first; the other may have learnt the new route by then)."""
    path = middle_station_moves(tmp_path, "aodv", capture={"pcap": True, "stations": [2, 4]})
    run_dir, summary, c = run(path, tmp_path, "test-aodv-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert c[1]["routing_sent"].get("rreq", 0) >= 1  # discovery by expanding ring
    assert c[5]["routing_sent"].get("rrep", 0) >= 1  # answered by the destination
    assert all(c[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert all(not c[s]["malformed"] for s in c)
    rerr = sum(x["routing_sent"].get("rerr", 0) for x in c.values())
    assert rerr >= 1, "a broken link produces a ROUTE ERROR"
    assert sum(x["extra"].get("aodv_link_breaks", 0) for x in c.values()) >= 1
    # the first route and a new one: either end may rediscover (sta5's RREQ for its ACKs also
    # gives sta1 a reverse route, RFC 3561 section 6.5), so count both ends' discoveries
    discoveries = sum(c[s]["samples"].get("discovery_latency_s", {}).get("n", 0) for s in (1, 5))
    assert discoveries >= 2
    assert c[6]["data_forwarded"] > 0  # the flow continued over the new station
    check_ground_truth("aodv", path, run_dir, summary, c)
    # sta2's and sta4's captures: tshark decodes the AODV frames (RREQ, RREP, RERR) and sees the
    # TCP flow
    pcaps = sorted(run_dir.rglob("*.pcap*"))
    assert len(pcaps) == 2, pcaps

    def tshark(display_filter: str, field: str) -> list[str]:
        out = []
        for pcap in pcaps:
            res = subprocess.run(
                ["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-e", field],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            out += res.stdout.split()
        return out

    assert set(tshark("aodv", "aodv.type")) >= {"1", "2", "3"}  # RREQ, RREP and RERR
    assert len(tshark("tcp", "tcp.srcport")) > 100


@pytest.mark.netns
@pytest.mark.slow
def test_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup with AODV: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s,
    120 s, one TCP flow: routers and medium agree frame by frame, the overhead lies within the
    medium's counts, and the flow received no more than the path's capacity allows while it
    existed (from the stations' trajectories)."""
    path = rwp20(tmp_path, "aodv")
    run_dir, summary, c = run(path, tmp_path, "test-aodv-rwp20")
    check_rwp20("aodv", path, run_dir, summary, c)
