"""Klemm 2004's combined scheme (Persistent MAC, Proactive and Reactive LM) on AODV end to end: real namespaces, real kernel TCP, the
real medium (two-ray ground, RSSI per frame). The middle station of a chain walks away slowly; the
neighbours' signal-strength tables predict the break, the routes go GDWN (GDWN RERRs upstream), the
source rediscovers over a station that arrived beside the chain, and the TCP flow continues.
Skipped unless root and the medium is built (tests/netns/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from netns_helpers import run, scenario, tcp

CHAIN = [[0, 100], [220, 100], [440, 100], [660, 100], [880, 100], [440, 990]]
"""Five stations 220 m apart (each hears only its neighbours) and sta6 far away."""


@pytest.mark.netns
def test_middle_station_walks_away_gdwn_before_the_break_flow_continues(tmp_path: Path) -> None:
    moves = tmp_path / "walk.tcl"
    # sta3 ($node_(2)) walks north at 12 m/s from 3 s: sta2/sta4 are 250 m away at ~12.9 s.
    moves.write_text(
        "$node_(2) set X_ 440.0\n$node_(2) set Y_ 100.0\n$node_(2) set Z_ 0.0\n"
        '$ns_ at 3.0 "$node_(2) setdest 440.0 400.0 12.0"\n'
    )
    path = scenario(
        tmp_path,
        "aodv-klemm-walk",
        "aodv",
        duration_s=20,
        field={"x_m": 1000, "y_m": 1000},
        stations={"count": 6, "positions": CHAIN},
        mobility={"model": "ns2", "file": str(moves)},
        traffic={"tcp": [tcp(1, 5, 1, 17)]},
        events=[{"t_s": 2, "op": "move", "station": 6, "x": 440, "y": 20}],
    )
    sc = yaml.safe_load(path.read_text())
    sc["routing"]["extensions"] = ["persistent_mac", "proactive_lm", "reactive_lm"]
    path.write_text(yaml.safe_dump(sc))
    _, summary, c = run(path, tmp_path, "test-ext-aodv-walk")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    ex = {s: c[s]["extra"] for s in c}
    weak = sum(ex[s].get("klemm_weak_links", 0) for s in (2, 3, 4))
    assert weak >= 1, "the neighbours predicted the link break 0.1 s ahead"
    assert sum(ex[s].get("klemm_gdwn_routes", 0) for s in c) >= 1
    assert sum(c[s]["routing_sent"].get("gdwn", 0) for s in c) >= 1, "GDWN messages go upstream"
    assert sum(ex[s].get("klemm_gdwn_rediscoveries", 0) for s in (1, 5)) >= 1
    assert c[6]["data_forwarded"] > 0, "the flow continued over the new station"
