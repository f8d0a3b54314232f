"""Station trajectories: piecewise-linear waypoints, seeded random waypoint, queries.

Issue 6, item 5. A trajectory is a list of waypoints ``(t_s, x_m, y_m)`` with non-decreasing
times; the position is linear between waypoints and constant before the first and after the last
(a pause is two waypoints at the same place). This is exactly the medium config's
``stations[].trajectory`` (docs/interfaces.md, section 3), so the medium evaluates positions at
each frame's time, with no ticks.

Random waypoint as used by Yu 2004, Ghanem 2008 and Klemm 2004 (ns-2 ``setdest``): a station picks
a destination uniformly in the field and a speed uniformly in ``[min_speed, max_speed]``, moves
there in a straight line, pauses ``pause_s``, and repeats. Yu 2004's "speed v +- 1 m/s" is
``min_speed_mps: v-1, max_speed_mps: v+1``; Klemm 2004's "minimum speed 10 % of the maximum" is
``min_speed_fraction: 0.1``. A warm-up (Klemm: 300 s) is simulated and cut off, so t = 0 of the
run finds the stations mid-walk, away from the uniform start.

This module is the math alone; ``topologies.layout.trajectories`` applies it (and the movement
files) to a scenario.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from topologies.seeding import derive_rng

Waypoint = tuple[float, float, float]
Trajectory = list[Waypoint]


def _index(traj: Trajectory, t: float) -> int:
    """Number of waypoints at or before ``t``."""
    return bisect_right(traj, t, key=lambda w: w[0])


def position_at(traj: Trajectory, t: float) -> tuple[float, float]:
    """Position at time ``t`` (seconds): linear between waypoints, constant outside them."""
    if not traj:
        raise ValueError("empty trajectory")
    i = _index(traj, t)
    if i == 0:
        return traj[0][1], traj[0][2]
    if i == len(traj):
        return traj[-1][1], traj[-1][2]
    t0, x0, y0 = traj[i - 1]
    t1, x1, y1 = traj[i]
    if t1 <= t0:
        return x1, y1
    f = (t - t0) / (t1 - t0)
    return x0 + f * (x1 - x0), y0 + f * (y1 - y0)


def velocity_at(traj: Trajectory, t: float) -> tuple[float, float]:
    """Velocity (m/s, x and y) at time ``t``; at a waypoint, that of the segment starting there."""
    if not traj:
        raise ValueError("empty trajectory")
    i = _index(traj, t)
    if i == 0 or i == len(traj):
        return 0.0, 0.0
    t0, x0, y0 = traj[i - 1]
    t1, x1, y1 = traj[i]
    if t1 <= t0:
        return 0.0, 0.0
    return (x1 - x0) / (t1 - t0), (y1 - y0) / (t1 - t0)


def speed_at(traj: Trajectory, t: float) -> float:
    vx, vy = velocity_at(traj, t)
    return math.hypot(vx, vy)


def legs(traj: Trajectory) -> list[tuple[float, float, float]]:
    """The moving segments as ``(t_start, t_end, speed_mps)``; pauses are left out."""
    out: list[tuple[float, float, float]] = []
    for (t0, x0, y0), (t1, x1, y1) in zip(traj, traj[1:], strict=False):
        d = math.hypot(x1 - x0, y1 - y0)
        if d > 0 and t1 > t0:
            out.append((t0, t1, d / (t1 - t0)))
    return out


def cut(traj: Trajectory, start_s: float) -> Trajectory:
    """The trajectory from ``start_s`` on, with times shifted so that ``start_s`` becomes 0."""
    x, y = position_at(traj, start_s)
    out: Trajectory = [(0.0, x, y)]
    out.extend((t - start_s, wx, wy) for t, wx, wy in traj if t > start_s)
    return out


def random_waypoint(
    start: tuple[float, float],
    field_m: tuple[float, float],
    min_speed_mps: float,
    max_speed_mps: float,
    pause_s: float,
    horizon_s: float,
    seed: int,
    station: int,
) -> Trajectory:
    """One station's random-waypoint walk from ``start`` at t = 0 until past ``horizon_s``.

    Draws come from the station's own stream (``derive_rng(seed, "random_waypoint", station)``):
    per leg, the destination x, then y, then the speed. The walk starts moving at t = 0 and
    pauses ``pause_s`` at each destination. A maximum speed of 0 means the station stays put.
    """
    rng = derive_rng(seed, "random_waypoint", station)
    t, (x, y) = 0.0, start
    traj: Trajectory = [(t, x, y)]
    if max_speed_mps <= 0:
        return traj
    while t < horizon_s:
        nx, ny = rng.uniform(0.0, field_m[0]), rng.uniform(0.0, field_m[1])
        speed = rng.uniform(min_speed_mps, max_speed_mps)
        if speed <= 0:
            break  # only possible when min = max = 0, excluded above; kept as a guard
        t += math.hypot(nx - x, ny - y) / speed
        x, y = nx, ny
        traj.append((t, x, y))
        if pause_s > 0:
            t += pause_s
            traj.append((t, x, y))
    return traj
