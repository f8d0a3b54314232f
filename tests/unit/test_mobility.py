"""Mobility: exact piecewise-linear motion, seeded random waypoint, ns-2 and BonnMotion files."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Any

import pytest

from topologies import MovementFileError, bonnmotion, ns2
from topologies.generate import random_scenario
from topologies.layout import trajectories
from topologies.mobility import (
    Trajectory,
    cut,
    legs,
    position_at,
    random_waypoint,
    speed_at,
    velocity_at,
)
from topologies.scenario import Scenario, scenario_from_dict


def rwp_scenario(n: int = 10, duration_s: float = 300, **mobility: Any) -> Scenario:
    data = random_scenario(n, 1000, 750, 10, duration_s=duration_s)
    data["mobility"] = {"model": "random_waypoint", "max_speed_mps": 10, "min_speed_mps": 2, **mobility}
    return scenario_from_dict(data)


def test_station_at_10_mps_covers_100_m_in_10_s() -> None:
    trajs = ns2.import_text(
        '$node_(0) set X_ 0\n$node_(0) set Y_ 0\n$ns_ at 2.0 "$node_(0) setdest 300 400 10"\n'
    )
    traj = trajs[1]
    assert math.dist(position_at(traj, 2.0), position_at(traj, 12.0)) == pytest.approx(100, abs=0.1)
    assert position_at(traj, 1.0) == (0.0, 0.0)  # before the move
    assert position_at(traj, 52.0) == pytest.approx((300, 400))  # arrived after 500 m / 10 m/s
    assert position_at(traj, 1000.0) == (300.0, 400.0)
    assert velocity_at(traj, 5.0) == pytest.approx((6.0, 8.0))
    assert speed_at(traj, 1.0) == 0.0 and speed_at(traj, 60.0) == 0.0


def test_random_waypoint_at_fixed_speed_covers_distance_exactly() -> None:
    traj = random_waypoint((0, 0), (1000, 1000), 10, 10, 0, 500, seed=4, station=1)
    for t0, t1, speed in legs(traj):
        assert speed == pytest.approx(10)
        if t1 - t0 >= 10:
            assert math.dist(position_at(traj, t0), position_at(traj, t0 + 10)) == pytest.approx(100, abs=0.1)


def test_position_between_waypoints_is_linear_and_pauses_hold() -> None:
    traj: Trajectory = [(0.0, 0.0, 0.0), (10.0, 100.0, 0.0), (15.0, 100.0, 0.0), (20.0, 100.0, 50.0)]
    assert position_at(traj, 5.0) == (50.0, 0.0)
    assert position_at(traj, 12.5) == (100.0, 0.0)
    assert velocity_at(traj, 12.5) == (0.0, 0.0)
    assert velocity_at(traj, 15.0) == (0.0, 10.0)  # at a waypoint: the segment starting there
    assert position_at(traj, 17.5) == (100.0, 25.0)
    assert position_at(traj, -1.0) == (0.0, 0.0)


def test_random_waypoint_speeds_are_uniform() -> None:
    lo, hi = 2.0, 10.0
    speeds = [
        s
        for sid in range(1, 41)
        for _, _, s in legs(random_waypoint((500, 375), (1000, 750), lo, hi, 0, 3000, 11, sid))
    ]
    n = len(speeds)
    assert n > 1000
    assert all(lo <= s <= hi for s in speeds)
    # Kolmogorov-Smirnov against Uniform[lo, hi]; 1.63/sqrt(n) is the 1 % critical value.
    speeds.sort()
    d = max(
        max((i + 1) / n - (s - lo) / (hi - lo), (s - lo) / (hi - lo) - i / n) for i, s in enumerate(speeds)
    )
    assert d < 1.63 / math.sqrt(n)
    # Coarse bins as a second, readable check: each tenth of the range holds 10 % +- 3 %.
    bins = [0] * 10
    for s in speeds:
        bins[min(int((s - lo) / (hi - lo) * 10), 9)] += 1
    assert all(abs(b / n - 0.1) < 0.03 for b in bins), bins


def test_yu_and_klemm_speed_conventions() -> None:
    sc = rwp_scenario(min_speed_mps=None, min_speed_fraction=0.1, max_speed_mps=20)
    speeds = [s for traj in trajectories(sc).values() for _, _, s in legs(traj)]
    assert speeds and min(speeds) >= 2.0 and max(speeds) <= 20.0
    yu_sc = rwp_scenario(min_speed_mps=9, max_speed_mps=11)
    yu_speeds = [s for traj in trajectories(yu_sc).values() for _, _, s in legs(traj)]
    assert min(yu_speeds) >= 9 and max(yu_speeds) <= 11


def test_random_waypoint_stays_in_the_field_and_pauses() -> None:
    sc = rwp_scenario(pause_s=5)
    for traj in trajectories(sc).values():
        assert all(0 <= x <= 1000 and 0 <= y <= 750 for _, x, y in traj)
        times = [t for t, _, _ in traj]
        assert times == sorted(times)
        assert traj[-1][0] >= sc.duration_s  # covers the whole run
        moving = legs(traj)
        for (_, end, _), (start, _, _) in zip(moving, moving[1:], strict=False):
            assert start - end == pytest.approx(5)


def test_same_seed_same_trajectories_other_seed_other() -> None:
    sc = rwp_scenario()
    assert trajectories(sc, 1) == trajectories(sc, 1)
    assert trajectories(sc, 1) != trajectories(sc, 2)
    assert trajectories(sc) == trajectories(sc, sc.seed)
    # Streams are per station: adding stations does not change the others' walks.
    bigger = rwp_scenario(n=12)
    assert {k: v for k, v in trajectories(bigger, 1).items() if k <= 10} == trajectories(sc, 1)


def test_static_stations_have_one_point() -> None:
    data = random_scenario(6, 1000, 750, 10)
    data["stations"]["static"] = [1, 6]
    trajs = trajectories(scenario_from_dict(data))
    assert len(trajs[1]) == 1 and len(trajs[6]) == 1
    assert len(trajs[2]) > 1
    data["mobility"] = {"model": "static"}
    assert all(len(t) == 1 for t in trajectories(scenario_from_dict(data)).values())


def test_warmup_is_cut_off() -> None:
    walk = random_waypoint((0, 0), (1000, 750), 5, 10, 2, 400, 3, 1)
    after = cut(walk, 100)
    assert after[0][0] == 0.0
    for t in (0.0, 7.3, 55.0, 250.0):
        assert position_at(after, t) == pytest.approx(position_at(walk, t + 100))
    sc = rwp_scenario(warmup_s=100)
    assert all(traj[0][0] == 0.0 for traj in trajectories(sc).values())
    placed = sc.placed_positions()
    assert sc.initial_positions() != placed  # they have been walking for 100 s


def test_zero_max_speed_stays_put() -> None:
    assert random_waypoint((1, 2), (100, 100), 0, 0, 0, 100, 1, 1) == [(0.0, 1, 2)]


def max_position_error(a: dict[int, Trajectory], b: dict[int, Trajectory], until: float) -> float:
    assert a.keys() == b.keys()
    times = [i * 0.37 for i in range(int(until / 0.37) + 1)]
    times += [t for traj in a.values() for t, _, _ in traj]
    return max(math.dist(position_at(a[k], t), position_at(b[k], t)) for k in a for t in times)


@pytest.mark.parametrize("pause", [0.0, 3.0])
def test_ns2_round_trip(pause: float) -> None:
    sc = rwp_scenario(pause_s=pause, warmup_s=20)
    data = sc.model_dump()
    data["stations"]["static"] = [3]
    sc = Scenario.model_validate(data)
    trajs = trajectories(sc, 5)
    text = ns2.export_text(trajs)
    assert "$node_(0) set X_" in text and "$node_(9) set Y_" in text and "$node_(10)" not in text
    back = ns2.import_text(text)
    assert max_position_error(trajs, back, sc.duration_s + 50) < 1e-6
    assert ns2.import_text(ns2.export_text(back)) == back


def test_ns2_import_setdest_semantics() -> None:
    text = """\
# a comment
$node_(0) set X_ 0.0
$node_(0) set Y_ 0.0
$node_(0) set Z_ 0.0
$node_(1) set X_ 5.0
$node_(1) set Y_ 5.0
$god_ set-dist 0 1 1
$ns_ at 10.0 "$node_(0) setdest 100.0 0.0 10.0"
$ns_ at 15.0 "$node_(0) setdest 50.0 50.0 5.0"
$ns_ at 1.0 "$node_(0) setdest 0.0 0.0 1.0"
$ns_ at 30.0 "$god_ set-dist 0 1 2"
"""
    trajs = ns2.import_text(text)
    assert set(trajs) == {1, 2}  # ns-2 nodes 0 and 1 are stations 1 and 2
    assert trajs[2] == [(0.0, 5.0, 5.0)]
    t = trajs[1]
    assert position_at(t, 10.0) == (0.0, 0.0)
    # Redirected at t = 15 from (50, 0): to (50, 50) at 5 m/s takes 10 s.
    assert position_at(t, 15.0) == pytest.approx((50, 0))
    assert position_at(t, 20.0) == pytest.approx((50, 25))
    assert position_at(t, 25.0) == pytest.approx((50, 50))
    assert position_at(t, 99.0) == pytest.approx((50, 50))


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            '$node_(0) set X_ 0\n$node_(0) set Y_ 0\n$ns_ at 1 "$node_(0) fly 1 2"\n',
            3,
            "not an ns-2 movement line",
        ),
        ("$node_(0) set X_ 0\n$node_(0) set Y_ abc\n", 2, "not a number"),
        ('$node_(0) set X_ 0\n$ns_ at 1.0 "$node_(0) setdest 1 2 3"\n', 1, "no initial X_ and Y_"),
        ('$ns_ at 1.0 "$node_(4) setdest 1 2 3"\n', 1, "no initial X_ and Y_"),
        (
            '$node_(0) set X_ 0\n$node_(0) set Y_ 0\n$ns_ at -1 "$node_(0) setdest 1 2 3"\n',
            3,
            "negative time",
        ),
    ],
)
def test_ns2_errors_name_file_line_and_reason(text: str, line: int, words: str) -> None:
    with pytest.raises(MovementFileError) as info:
        ns2.import_text(text, "moves.tcl")
    assert str(info.value).startswith(f"moves.tcl:{line}: ")
    assert words in str(info.value)


def test_bonnmotion_import() -> None:
    text = "0.0 10.0 20.0 10.0 110.0 20.0 15.0 110.0 20.0\n\n0.0 5.0 5.0\n"
    trajs = bonnmotion.import_text(text, "x.movements")
    assert trajs == {1: [(0.0, 10.0, 20.0), (10.0, 110.0, 20.0), (15.0, 110.0, 20.0)], 2: [(0.0, 5.0, 5.0)]}
    assert position_at(trajs[1], 5.0) == (60.0, 20.0)
    assert velocity_at(trajs[1], 5.0) == (10.0, 0.0)
    three_d = bonnmotion.import_text("0 1 2 3 10 11 12 13\n", dims=3)
    assert three_d == {1: [(0.0, 1.0, 2.0), (10.0, 11.0, 12.0)]}


def test_bonnmotion_gz_file_and_round_trip(tmp_path: Path) -> None:
    trajs = trajectories(rwp_scenario(n=4), 2)
    path = tmp_path / "s.movements.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(bonnmotion.export_text(trajs))
    assert bonnmotion.import_file(path) == trajs


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("0 1 2\n0 1 2 5\n", 2, "not a multiple of 3"),
        ("0 1 2 5 x 3\n", 1, "'x' is not a number"),
        ("0 1 2\n\n10 1 2 5 3 3\n", 3, "before the previous"),
    ],
)
def test_bonnmotion_errors_name_file_line_and_reason(text: str, line: int, words: str) -> None:
    with pytest.raises(MovementFileError) as info:
        bonnmotion.import_text(text, "b.movements")
    assert str(info.value).startswith(f"b.movements:{line}: ")
    assert words in str(info.value)
