"""Mininet-WiFi's mobility calls turned into trajectories for the medium (docs/mininet-wifi.md).

- ``setMobilityModel(time=t0, model='RandomWayPoint'|'RandomDirection', max_x, max_y, min_v,
  max_v, seed)`` with per-station bounds ``min_x/max_x/min_y/max_y`` and speeds ``min_v/max_v``
  from ``addStation``: each station walks from its start position from ``t0`` on.
- ``mobility(sta, 'start', time=t, position='x,y,z')`` / ``mobility(sta, 'stop', time=t,
  position=...)``: a straight line from the start to the stop position (Mininet-WiFi's
  "replaying" of a scripted path); ``startMobility``/``stopMobility`` bound it in time.

A trajectory is ``[(t_s, x, y), ...]`` (topologies/mobility.py); the run gets them as a
BonnMotion movement file, which the medium follows exactly. Pure functions of the seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from topologies.mobility import Trajectory, random_waypoint
from topologies.seeding import derive_rng

MODELS: Final = ("RandomWayPoint", "RandomDirection")
"""Mininet-WiFi mobility models reproduced here; its others (RandomWalk, TruncatedLevyWalk,
GaussMarkov, ReferencePoint, TimeVariantCommunity) are rejected with this list."""
HORIZON_S: Final = 3600.0
"""How far ahead random trajectories are drawn: a script's network lives at most this long
with moving stations (its last position is then kept)."""
DEFAULT_MIN_V: Final = 1.0
"""m/s, speeds when neither the station nor the mobility model gives any."""
DEFAULT_MAX_V: Final = 10.0


class MobilityError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Bounds:
    """Where one station may move: ``[min_x, max_x] x [min_y, max_y]``, and its speeds."""

    min_x: float
    max_x: float
    min_y: float
    max_y: float
    min_v: float
    max_v: float


def check_model(model: str) -> None:
    if model not in MODELS:
        raise MobilityError(
            f"setMobilityModel: model {model!r} is not supported here (supported: {', '.join(MODELS)})"
        )


def random_trajectory(
    model: str, start: tuple[float, float], bounds: Bounds, t0: float, seed: int, station: int
) -> Trajectory:
    """The station's walk, standing at ``start`` until ``t0``, then moving until ``HORIZON_S``."""
    check_model(model)
    b = bounds
    if b.max_v < b.min_v or b.min_v < 0:
        raise MobilityError(f"speeds min_v={b.min_v}, max_v={b.max_v}: need 0 <= min_v <= max_v")
    if b.max_x <= b.min_x or b.max_y <= b.min_y:
        raise MobilityError(f"bounds x {b.min_x}..{b.max_x}, y {b.min_y}..{b.max_y} are empty")
    sx = min(max(start[0], b.min_x), b.max_x) - b.min_x
    sy = min(max(start[1], b.min_y), b.max_y) - b.min_y
    field = (b.max_x - b.min_x, b.max_y - b.min_y)
    if model == "RandomWayPoint":
        walk = random_waypoint((sx, sy), field, b.min_v, b.max_v, 0.0, HORIZON_S, seed, station)
    else:
        walk = random_direction((sx, sy), field, b.min_v, b.max_v, HORIZON_S, seed, station)
    out: Trajectory = [(0.0, start[0], start[1])] if t0 > 0 else []
    out += [(t0 + t, x + b.min_x, y + b.min_y) for t, x, y in walk]
    return out


def random_direction(
    start: tuple[float, float],
    field_m: tuple[float, float],
    min_speed_mps: float,
    max_speed_mps: float,
    horizon_s: float,
    seed: int,
    station: int,
) -> Trajectory:
    """Random direction (Royer et al.): a uniform heading and speed, straight on to the border
    of the field, then a new heading; drawn from the station's own stream."""
    rng = derive_rng(seed, "random_direction", station)
    t, (x, y) = 0.0, start
    traj: Trajectory = [(t, x, y)]
    if max_speed_mps <= 0:
        return traj
    w, h = field_m
    while t < horizon_s:
        theta = rng.uniform(0.0, 2 * math.pi)
        speed = rng.uniform(min_speed_mps, max_speed_mps)
        dx, dy = math.cos(theta), math.sin(theta)
        # distance along (dx, dy) to the border
        cands = []
        if dx > 1e-12:
            cands.append((w - x) / dx)
        elif dx < -1e-12:
            cands.append(-x / dx)
        if dy > 1e-12:
            cands.append((h - y) / dy)
        elif dy < -1e-12:
            cands.append(-y / dy)
        dist = min(cands) if cands else 0.0
        if dist <= 1e-9 or speed <= 0:
            continue  # on the border heading out: draw again
        x, y = min(max(x + dist * dx, 0.0), w), min(max(y + dist * dy, 0.0), h)
        t += dist / speed
        traj.append((t, x, y))
    return traj


def scripted_trajectory(
    start: tuple[float, float], legs: list[tuple[float, tuple[float, float]]]
) -> Trajectory:
    """``mobility(sta, 'start'|'stop', time=, position=)`` calls as waypoints (times sorted)."""
    out: Trajectory = [(0.0, start[0], start[1])]
    for t, (x, y) in sorted(legs, key=lambda leg: leg[0]):
        if t < 0:
            raise MobilityError(f"mobility: time {t} is negative")
        out.append((t, x, y))
    return out
