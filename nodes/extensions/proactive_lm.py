"""Klemm et al. 2004 section 4.2.1: Proactive link management.

"Proactive LM estimates the projected distance to a neighbor in the immediate future. For example,
if the current time is t, the distance d_0.1 of a particular neighbor at (t + 0.1) s is
d_0.1 = d_2 + (d_2 - d_1) / (t_2 - t_1) * (t + 0.1 - t_2)" (equation 3). "Proactive LM informs
the routing layer as soon as d_0.1 is estimated to be greater than the transmission range. The
routing protocol then informs the packet source, which stops sending packets and initiates a route
discovery."

Realisation: at every received frame (``on_neighbour_signal``, after the shared neighbour table
took the sample) the prediction ``lookahead_s`` ahead is compared with the range; the first time
it exceeds it, the link is weak and the GDWN machinery of :mod:`nodes.extensions.reactive_lm`
(:class:`GoingDown`) marks the routes via that neighbour GDWN and sends GDWN messages upstream.
The notice is re-armed once the prediction is back within range.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodes.core.events import Action
from nodes.core.hooks import Needs, NeighbourSignal
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions.neighbour_table import NS_PER_S, KlemmStation
from nodes.extensions.reactive_lm import GoingDown


@dataclass(frozen=True, slots=True)
class ProactiveLmParams:
    lookahead_s: float = 0.1
    """"Proactive LM time to link breakage 0.1 s" (Table 1)."""
    avoid_s: float = 3.0
    """RREQs/RREPs from a weak neighbour are ignored this long ("new routes avoid weak links";
    ACTIVE_ROUTE_TIMEOUT, the paper gives no value)."""
    neighbour_table: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.lookahead_s < 0 or self.avoid_s < 0:
            raise ValueError("lookahead_s and avoid_s must be >= 0")


class ProactiveLm:
    def __init__(self, ctx: NodeContext, st: KlemmStation, gd: GoingDown, params: ProactiveLmParams) -> None:
        self.ctx = ctx
        self.st = st
        self.gd = gd
        self.p = params
        self.lookahead_ns = round(params.lookahead_s * NS_PER_S)
        self.avoid_ns = round(params.avoid_s * NS_PER_S)
        self.weak: set[int] = set()
        """Neighbours already reported weak (until predicted back in range)."""

    def predicted(self, nb: int, now_ns: int) -> float | None:
        """Equation (3): d_0.1."""
        return self.st.table.estimate(nb, now_ns + self.lookahead_ns, now_ns)

    def on_neighbour_signal(self, ev: NeighbourSignal) -> list[Action]:
        neighbour, now_ns = ev.neighbour, ev.now_ns
        d = self.predicted(neighbour, now_ns)
        if d is None or d <= self.st.table.p.range_m:
            self.weak.discard(neighbour)
            return []
        if neighbour in self.weak:
            return []
        self.weak.add(neighbour)
        return self.gd.link_going_down(neighbour, now_ns, "weak", self.avoid_ns)


PARAMS = ProactiveLmParams
NEEDS = Needs(events=frozenset({NeighbourSignal}), services=(KlemmStation, GoingDown))
"""Equation (3) on the shared table; weak links go through the GDWN machinery (AODV)."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: ProactiveLmParams) -> ProactiveLm:
    p = params
    st = KlemmStation.of(ctx, p.neighbour_table)
    gd = GoingDown.of(ctx, protocol, st)
    ext = ProactiveLm(ctx, st, gd, p)
    ctx.hooks.subscribe(NeighbourSignal, ext.on_neighbour_signal)
    return ext
