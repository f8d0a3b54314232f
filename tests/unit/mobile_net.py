"""A virtual-time network whose links come from positions (issue 13 item 4).

:class:`MobileNetwork` is ``nodes.core.sim.SimNetwork`` (the real ``NodeRuntime`` and protocol
cores, the same idealised MAC) with the explicit link graph replaced by geometry: station ``a``
reaches station ``b`` at virtual time t when their distance on their trajectories
(``topologies.mobility``: piecewise-linear waypoints, a jump is two waypoints at the same time) is
within the radio model's decode range (``topologies.radio``: the range the medium computes from the
same preset), at the frame's transmit power. Every reception carries the received power at that
distance (two-ray ground as ns-2 and the medium compute it), so signal-strength extensions (Klemm
2004) see a walk as they would on the medium. Nothing else is modelled: no carrier sense,
contention or collisions (the medium's job, tested in ``medium/``).

The scenarios below are the geometry of the real-namespace tests (tests/netns/netns_helpers.py
``LINE`` and ``middle_station_moves``, tests/netns/test_ext_aodv.py ``CHAIN``), so the behaviour
those tests check once in wall-clock time is checked here exactly, in virtual time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from nodes.core.clock import NS_PER_S
from nodes.core.events import Frame, FromAir
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.core.sim import SimNetwork
from topologies.mobility import Trajectory, position_at
from topologies.radio import NS2_WAVELAN, RadioModel, dbm_to_w, w_to_dbm

LINE: list[tuple[float, float]] = [(0, 50), (200, 50), (400, 50), (600, 50), (800, 50)]
"""Five stations 200 m apart: with the 250 m ns-2 WaveLAN range each hears only its neighbours."""

FAR = (400.0, 1900.0)
"""Out of everybody's range (the middle station's exile, the newcomer's start)."""


def rx_power_dbm(radio: RadioModel, d_m: float, tx_power_dbm: float | None = None) -> float:
    """Median received power at ``d_m`` (ns-2 ``TwoRayGround``: Friis below the crossover
    distance, ``Pt Gt Gr ht^2 hr^2 / (d^4 L)`` at and beyond it; ``free_space``: Friis)."""
    pt_w = dbm_to_w(radio.tx_power_dbm if tx_power_dbm is None else tx_power_dbm)
    gains = 10 ** ((radio.tx_gain_dbi + radio.rx_gain_dbi) / 10)
    d = max(d_m, 1e-3)
    friis = pt_w * gains * radio.wavelength_m**2 / ((4 * math.pi * d) ** 2 * radio.system_loss)
    if radio.propagation == "free_space" or (radio.propagation == "two_ray_ground" and d < radio.crossover_m):
        return w_to_dbm(friis)
    if radio.propagation == "two_ray_ground":
        return w_to_dbm(pt_w * gains * radio.antenna_height_m**4 / (d**4 * radio.system_loss))
    raise ValueError(f"MobileNetwork models two_ray_ground and free_space, not {radio.propagation}")


def still(x: float, y: float) -> Trajectory:
    return [(0.0, x, y)]


def jumps(start: tuple[float, float], *moves: tuple[float, float, float]) -> Trajectory:
    """A station at ``start`` moved at once to ``(x, y)`` at each ``(t_s, x, y)`` (the medium's
    scripted ``move``)."""
    traj: Trajectory = [(0.0, *start)]
    for t, x, y in moves:
        traj += [(t, *traj[-1][1:]), (t, x, y)]
    return traj


def walk(start: tuple[float, float], t0_s: float, to: tuple[float, float], speed_mps: float) -> Trajectory:
    """At ``start`` until ``t0_s``, then straight to ``to`` at ``speed_mps`` (ns-2 ``setdest``)."""
    d = math.dist(start, to)
    return [(0.0, *start), (t0_s, *start), (t0_s + d / speed_mps, *to)]


class MobileNetwork(SimNetwork):
    """``SimNetwork`` with links and received power derived from positions (module docstring).
    ``link_up``/``link_down`` have no effect here: move the stations instead."""

    def __init__(
        self,
        trajectories: dict[int, Trajectory],
        make_protocol: Callable[[NodeContext], RoutingProtocol],
        *,
        radio: RadioModel = NS2_WAVELAN,
        seed: int = 1,
        **kw: object,
    ) -> None:
        if sorted(trajectories) != list(range(1, len(trajectories) + 1)):
            raise ValueError("trajectories must be given for stations 1..n")
        self.trajectories = trajectories
        self.radio = radio
        self._tx_power: dict[int, float | None] = {}
        super().__init__(len(trajectories), make_protocol, (), seed=seed, **kw)  # type: ignore[arg-type]

    def position(self, s: int, t_ns: int | None = None) -> tuple[float, float]:
        t = self.now_ns if t_ns is None else t_ns
        return position_at(self.trajectories[s], t / NS_PER_S)

    def distance(self, a: int, b: int, t_ns: int | None = None) -> float:
        return math.dist(self.position(a, t_ns), self.position(b, t_ns))

    def range_m(self, tx_power_dbm: float | None = None) -> float:
        return self.radio.distance_for_dbm(self.radio.rx_threshold_dbm, tx_power_dbm)

    def in_range(self, a: int, b: int, t_ns: int | None = None) -> bool:
        """Does a frame ``a`` is sending now (at its power) decode at ``b``?"""
        return self.distance(a, b, t_ns) <= self.range_m(self._tx_power.get(a))

    # SimNetwork's link graph, replaced by the geometry
    def neighbours(self, s: int) -> list[int]:
        return [b for b in self.nodes if b != s and self.in_range(s, b)]

    def _delivered_ok(self, a: int, b: int) -> bool:
        if not self.in_range(a, b):
            return False
        p = self.loss.get(frozenset((a, b)), 0.0)
        return p <= 0.0 or self.rng.random() >= p

    def _transmit(self, src: int, frame: Frame) -> None:
        self._tx_power[src] = frame.tx_power_dbm  # one frame at a time per station (NodeRuntime)
        super()._transmit(src, frame)

    def _rx(self, station: int, ev: FromAir) -> None:
        rssi = rx_power_dbm(self.radio, self.distance(ev.src, station), self._tx_power.get(ev.src))
        super()._rx(station, replace(ev, rssi_dbm=rssi))
