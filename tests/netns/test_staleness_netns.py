"""testbed.staleness on a real run: real namespaces, kernel TCP and the medium. A station walks
out of its neighbour's range under static routes, so the sender keeps using the broken link: the
first give-up is fresh, the later ones reuse a break already detected, and the age the tool
derives from the trajectories agrees with the distance the medium recorded at each give-up.
Skipped unless root and the medium is built (tests/netns/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netns_helpers import run, scenario, tcp

from testbed.staleness import between, classify, load_run

SPEED_MPS = 20.0


@pytest.mark.netns
def test_a_station_walking_away_fresh_then_reused_ages_match_the_medium(tmp_path: Path) -> None:
    moves = tmp_path / "walk.tcl"
    # sta2 ($node_(1)) starts 200 m from sta1 and walks away at 20 m/s from 3 s: 250 m at 5.5 s
    moves.write_text(
        "$node_(1) set X_ 200.0\n$node_(1) set Y_ 50.0\n$node_(1) set Z_ 0.0\n"
        f'$ns_ at 3.0 "$node_(1) setdest 990.0 50.0 {SPEED_MPS}"\n'
    )
    path = scenario(
        tmp_path,
        "staleness-walk",
        "static",
        duration_s=14,
        field={"x_m": 1000, "y_m": 100},
        stations={"count": 2, "positions": [[0, 50], [200, 50]]},
        mobility={"model": "ns2", "file": str(moves)},
        traffic={"tcp": [tcp(1, 2, 1, 12)]},
    )
    run_dir, _, _ = run(path, tmp_path, "test-staleness")
    failures, trajectories, range_m = load_run(run_dir)
    out = classify(between(failures, 1, 2), trajectories, range_m)
    assert len(out) >= 2, out
    assert out[0].cls == "fresh" and out[0].out_of_range_s < 1.0, out[0]
    assert out[0].t_s >= 5.4, out[0]  # not before sta2 left the range
    assert any(s.cls == "reused" for s in out), out  # static routes keep the broken link
    assert all(s.cls != "undetected" for s in out), out
    for s in out:  # the trajectories' age agrees with the medium's distance at the give-up
        assert abs(s.out_of_range_s - (s.distance_m - range_m) / SPEED_MPS) < 0.3, s
