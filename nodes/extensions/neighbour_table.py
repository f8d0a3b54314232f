"""Klemm et al. 2004's neighbour table from received signal strength (section 4.1), shared by the
Persistent MAC, Proactive LM and Reactive LM extensions of one station.

Section 4.1: "we used the received signal strength P_r to calculate the distance to the
transmitter of the packet. ns-2 uses the two-ray ground propagation model ... the distance d to
the transmitter of a packet can be calculated as follows: d = (P_t G_t G_r h_t^2 h_r^2 /
(P_r L))^(1/4)" (equation 1). "A table entry consists of five fields: a neighbor ID, a distance
d_1 ... the time t_1 ... and a distance d_2 to the same neighbor estimated at a second, more recent
time t_2 ... we use only two timestamps and assume linear node movement":
``d_est = d_2 + (d_2 - d_1) / (t_2 - t_1) * (t - t_2)`` (equation 2).

The propagation constants are the ``ns2-wavelan`` preset's (docs/medium.md) as named parameters.
Like ns-2's TwoRayGround (and our medium), below the crossover distance the received power follows
Friis; :func:`distance_from_rx_power` inverts that branch too, so the inversion is exact at every
distance for the medium's model (the paper's equation 1 is the two-ray branch).

Every LM extension of a station shares one :class:`KlemmStation` (neighbour table, the ordered
``on_tx_failure`` chain: Persistent MAC before Reactive LM, whatever the order of the extension
list), created by the first of them attached.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from nodes.core.events import Action
from nodes.core.hooks import Handler, Needs, NeighbourSignal, TxFailure
from nodes.core.protocol import NodeContext, ParamError, params_from_dict
from topologies import radio

NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class NeighbourTableParams:
    """Two-ray ground constants (ns2-wavelan preset) and the table's own settings."""

    tx_power_w: float = radio.NS2_TX_POWER_W
    """P_t: the default transmission power (ns-2 WaveLAN, 24.50 dBm)."""
    tx_gain: float = 1.0
    """G_t (linear)."""
    rx_gain: float = 1.0
    """G_r (linear)."""
    antenna_height_m: float = radio.NS2_ANTENNA_HEIGHT_M
    """h_t = h_r."""
    system_loss: float = radio.NS2_SYSTEM_LOSS
    """L ("set to 1 by default")."""
    frequency_hz: float = radio.NS2_FREQUENCY_HZ
    """For the Friis branch below the crossover distance."""
    speed_of_light_mps: float = radio.SPEED_OF_LIGHT_MPS
    """The medium's value (docs/medium.md)."""
    range_m: float = 250.0
    """"The default transmission range of each node is 250 m" (RXThresh of the preset)."""
    max_age_s: float = 2.0
    """A sample older than this is "deemed stale" (section 4.1; the paper gives no value)."""

    def __post_init__(self) -> None:
        for name in ("tx_power_w", "tx_gain", "rx_gain", "antenna_height_m", "system_loss", "frequency_hz"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.range_m <= 0 or self.max_age_s <= 0:
            raise ValueError("range_m and max_age_s must be > 0")

    @property
    def wavelength_m(self) -> float:
        return self.speed_of_light_mps / self.frequency_hz

    @property
    def crossover_m(self) -> float:
        """ns-2 TwoRayGround: 4 pi h_t h_r / lambda (86.2 m for the preset)."""
        return 4 * math.pi * self.antenna_height_m**2 / self.wavelength_m

    @property
    def max_age_ns(self) -> int:
        return round(self.max_age_s * NS_PER_S)


def dbm_to_w(dbm: float) -> float:
    return 10 ** ((dbm - 30) / 10)


def w_to_dbm(w: float) -> float:
    return 10 * math.log10(w) + 30


def rx_power_w(d_m: float, p: NeighbourTableParams, tx_power_w: float | None = None) -> float:
    """The forward model (ns-2 TwoRayGround): Friis below the crossover, two-ray above."""
    pt = p.tx_power_w if tx_power_w is None else tx_power_w
    h2 = p.antenna_height_m**2
    if d_m <= p.crossover_m:
        lam = p.wavelength_m
        return pt * p.tx_gain * p.rx_gain * lam * lam / ((4 * math.pi * d_m) ** 2 * p.system_loss)
    return pt * p.tx_gain * p.rx_gain * h2 * h2 / (d_m**4 * p.system_loss)


def distance_from_rx_power(pr_w: float, p: NeighbourTableParams, tx_power_w: float | None = None) -> float:
    """Equation (1), ``d = (P_t G_t G_r h_t^2 h_r^2 / (P_r L))^(1/4)``, or its Friis counterpart
    when that distance falls below the crossover."""
    pt = p.tx_power_w if tx_power_w is None else tx_power_w
    h2 = p.antenna_height_m**2
    d: float = (pt * p.tx_gain * p.rx_gain * h2 * h2 / (pr_w * p.system_loss)) ** 0.25
    if d > p.crossover_m:
        return d
    lam = p.wavelength_m
    return lam / (4 * math.pi) * math.sqrt(pt * p.tx_gain * p.rx_gain / (pr_w * p.system_loss))


def power_for_range_w(range_m: float, p: NeighbourTableParams) -> float:
    """The P_t whose received power at ``range_m`` equals the default one at ``p.range_m`` (Reactive
    LM's "high power range" of 275 m -> 0.4126 W in the two-ray branch)."""
    return p.tx_power_w * rx_power_w(p.range_m, p) / rx_power_w(range_m, p)


@dataclass(slots=True)
class NeighbourEntry:
    """Section 4.1's five fields: neighbour id, (d_1, t_1), (d_2, t_2); t_1 None with one sample."""

    neighbour: int
    d2_m: float
    t2_ns: int
    d1_m: float | None = None
    t1_ns: int | None = None

    def estimate(self, t_ns: int) -> float:
        """Equation (2) (equation (3) with ``t + 0.1 s``); the last distance with one sample."""
        if self.d1_m is None or self.t1_ns is None or self.t2_ns == self.t1_ns:
            return self.d2_m
        slope = (self.d2_m - self.d1_m) / (self.t2_ns - self.t1_ns)
        return max(0.0, self.d2_m + slope * (t_ns - self.t2_ns))


class NeighbourTable:
    """Distances to neighbours from received signal strength (section 4.1)."""

    def __init__(self, params: NeighbourTableParams | None = None) -> None:
        self.p = params or NeighbourTableParams()
        self.entries: dict[int, NeighbourEntry] = {}

    def heard(
        self, neighbour: int, rssi_dbm: float, now_ns: int, tx_power_w: float | None = None
    ) -> NeighbourEntry:
        """ "When a node receives a packet from a neighbor N_Y, it replaces the older entries of the
        table, corresponding to that neighbor, with the more recent ones." Two frames in the same
        nanosecond replace the newer sample only."""
        d = distance_from_rx_power(dbm_to_w(rssi_dbm), self.p, tx_power_w)
        e = self.entries.get(neighbour)
        if e is None:
            e = self.entries[neighbour] = NeighbourEntry(neighbour, d, now_ns)
        elif now_ns == e.t2_ns:
            e.d2_m = d
        else:
            e.d1_m, e.t1_ns, e.d2_m, e.t2_ns = e.d2_m, e.t2_ns, d, now_ns
        return e

    def fresh(self, neighbour: int, now_ns: int) -> NeighbourEntry | None:
        e = self.entries.get(neighbour)
        if e is None or now_ns - e.t2_ns > self.p.max_age_ns:
            return None
        return e

    def estimate(self, neighbour: int, t_ns: int, now_ns: int | None = None) -> float | None:
        """d_est at ``t_ns`` (None when unknown or stale at ``now_ns``, default ``t_ns``)."""
        e = self.fresh(neighbour, t_ns if now_ns is None else now_ns)
        return None if e is None else e.estimate(t_ns)

    def in_range(self, neighbour: int, now_ns: int) -> bool:
        """Persistent MAC's test: fresh information and ``d_est`` smaller than the range."""
        d = self.estimate(neighbour, now_ns)
        return d is not None and d < self.p.range_m


@dataclass(slots=True)
class KlemmStation:
    """What the LM extensions of one station share: the neighbour table, fed by every received
    frame's signal, and the station-wide ``TxFailure`` subscriber (a shared service,
    ``nodes.core.hooks.Service``; :meth:`of` creates and subscribes it)."""

    NEEDS: ClassVar[Needs] = Needs(events=frozenset({NeighbourSignal, TxFailure}))

    table: NeighbourTable
    tx_failure: list[tuple[int, Handler[TxFailure]]] = field(default_factory=list)
    """(priority, handler) for ``TxFailure``: Persistent MAC 0, Reactive LM 1."""
    peer_tx_power_w: dict[int, float] = field(default_factory=dict)
    """P_t assumed for a neighbour's frames when not the default. The paper puts P_t in the MAC
    header; our frames do not carry it, so a link Reactive LM runs at high power is assumed high
    at both ends (both raise it, section 4.2.2)."""

    @classmethod
    def of(cls, ctx: NodeContext, nt: Mapping[str, Any] | None) -> KlemmStation:
        """The station's shared state; the first LM extension attached creates it (and subscribes
        the table to ``NeighbourSignal`` before any extension reads it). Later ones must pass the
        same ``neighbour_table`` parameters, or none."""
        params = params_from_dict(NeighbourTableParams, nt, "neighbour_table")
        st = ctx.services.get(cls)
        if st is None:
            st = ctx.services.get_or_create(cls, lambda: cls(NeighbourTable(params)))
            ctx.hooks.subscribe(NeighbourSignal, st.on_neighbour_signal)
            ctx.hooks.subscribe(TxFailure, st.on_tx_failure)
        elif nt and asdict(params) != asdict(st.table.p):
            raise ParamError(
                "neighbour_table: the Klemm extensions of a station must share one table's parameters"
            )
        return st

    def on_neighbour_signal(self, ev: NeighbourSignal) -> None:
        self.table.heard(ev.neighbour, ev.rssi_dbm, ev.now_ns, self.peer_tx_power_w.get(ev.neighbour))

    def on_tx_failure(self, ev: TxFailure) -> list[Action]:
        out: list[Action] = []
        for _, fn in sorted(self.tx_failure, key=lambda x: x[0]):
            if not ev.decision.link_break:
                break
            res = fn(ev)
            if res:
                out.extend(res)
        return out
