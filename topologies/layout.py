"""Where a scenario's stations are: trajectories and positions at t = 0, and who reaches whom.

The pure trajectory math (waypoints, random waypoint) is ``topologies.mobility``; movement files
are ``topologies.ns2`` and ``topologies.bonnmotion``. This module applies them to a scenario
(issue 6, item 5). ``topologies.routes`` builds static routes on ``neighbours``.
"""

from __future__ import annotations

import math

from topologies import bonnmotion, ns2
from topologies.mobility import Trajectory, cut, position_at, random_waypoint
from topologies.schema import BonnMotionMobility, Ns2Mobility, RandomWaypoint, ScenarioFields, StaticMobility


def trajectories(scenario: ScenarioFields, seed: int | None = None) -> dict[int, Trajectory]:
    """Every station's trajectory for a run of ``scenario`` with ``seed`` (default: its seed).

    Static stations (``scenario.static_ids()``) get one waypoint. Movement files give the moving
    stations; a station a file does not mention stays at its placed position.
    """
    run_seed = scenario.seed if seed is None else seed
    placed = scenario.placed_positions(run_seed)
    static = scenario.static_ids()
    mob = scenario.mobility
    moving: dict[int, Trajectory] = {}
    if isinstance(mob, RandomWaypoint):
        field = (scenario.field.x_m, scenario.field.y_m)
        horizon = mob.warmup_s + scenario.duration_s
        for sid in scenario.station_ids:
            if sid in static:
                continue
            walk = random_waypoint(
                placed[sid], field, mob.min_speed, mob.max_speed_mps, mob.pause_s, horizon, run_seed, sid
            )
            moving[sid] = cut(walk, mob.warmup_s) if mob.warmup_s > 0 else walk
    elif isinstance(mob, Ns2Mobility):
        moving = ns2.import_file(mob.file)
    elif isinstance(mob, BonnMotionMobility):
        moving = bonnmotion.import_file(mob.file, dims=mob.dims)
    out: dict[int, Trajectory] = {}
    for sid in scenario.station_ids:
        if sid in moving and sid not in static:
            out[sid] = moving[sid]
        elif sid in moving:
            _, x0, y0 = moving[sid][0]
            out[sid] = [(0.0, x0, y0)]
        else:
            x, y = placed[sid]
            out[sid] = [(0.0, x, y)]
    return out


def initial_positions(scenario: ScenarioFields, seed: int | None = None) -> dict[int, tuple[float, float]]:
    """Where every station is at t = 0 of the run (after any random-waypoint warm-up)."""
    if isinstance(scenario.mobility, StaticMobility):
        return scenario.placed_positions(seed)
    trajs = trajectories(scenario, seed)
    return {sid: position_at(traj, 0.0) for sid, traj in trajs.items()}


def neighbours(scenario: ScenarioFields, seed: int | None = None) -> dict[int, list[int]]:
    """Who reaches whom at t = 0: p2p hops if given, else distance <= nominal range."""
    ids = scenario.station_ids
    adj: dict[int, list[int]] = {i: [] for i in ids}
    if scenario.p2p is not None:
        for a, b in scenario.p2p.hops:
            adj[a].append(b)
            adj[b].append(a)
    else:
        pos = initial_positions(scenario, seed)
        r = scenario.nominal_range_m()
        for i in ids:
            for j in ids:
                if i != j and math.dist(pos[i], pos[j]) <= r:
                    adj[i].append(j)
    return {i: sorted(set(v)) for i, v in adj.items()}
