"""Klemm et al. 2004 section 4.2.2 (Reactive link management) and section 4.2.3 (the modified
AODV with the GOING DOWN route state, shared with Proactive LM).

Section 4.2.2: "Reactive LM temporarily increases the transmission range of a node to re-establish
a broken link. ... A node N_X tries to set up a high power link if the RTS-CTS handshake (to a
neighbor N_Y) with default transmission power is not successful. N_X therefore sends RTSs with
high transmission power. N_Y must also switch to high transmission power to send the CTS. ... N_X
and N_Y also send the DATA and the ACK packets with high power. When Reactive LM at N_X establishes
the temporary high power link to N_Y, it stimulates the routing protocol to begin a new route
discovery." "nodes must not broadcast Route Request messages from AODV with high transmission
power since new routes should consist of default power links only."

Section 4.2.3: "If N_X receives a packet for N_D, it will forward the packet. If it receives an
RREQ for N_D, in lieu of responding with a RREP it broadcasts the RREQ. If an application at N_X
wants to send packets to N_D, the modified AODV will initiate a route discovery." "The modified
AODV then, sends a GDWN packet to its active neighbor N_1, which also sends a GDWN packet to N_0.
All three nodes ... change the route state for destination N_4 from UP to GDWN. N_1 and N_2 keep
forwarding transit TCP packets towards N_4, but N_0 stops sending packets and initiates a route
discovery." "If the MAC protocol reports a link breakage, the modified AODV behaves like the
original AODV".

Realisation (docs/extensions-aodv.md):

- :class:`GoingDown` is the GDWN machinery on the AODV core's events (a shared service): routes via a weak or
  high-power link become ``RouteState.GDWN`` (the core already forwards on GDWN routes and
  rebroadcasts RREQs instead of answering from them); the GDWN message is a RERR with our 'G' flag
  (a reserved bit of RFC 3561 section 5.3) sent to the routes' precursors, which do the same
  upstream; a station that originated traffic to such a destination rediscovers (destination
  sequence number + 1, as a local repair does, so that only a fresh route answers). RREQs and
  RREPs from weak or high-power neighbours are ignored ("new routes avoid weak and high-power
  links").
- :class:`ReactiveLm`: at ``TxFailure`` of a unicast data frame, the frame is sent again at
  the high power (``Frame.tx_power_dbm``) and ``SetPower(neighbour, high)`` keeps DATA, CTS and
  ACK to that neighbour at high power; the routes via it go GDWN. The paper's receiver learns
  the power from the RTS; our router never sees RTSs, so the other end raises its power when its
  own neighbour table predicts the link beyond the default range (the same distance, seen from
  the other side). Control frames (RREQ, RREP, RERR) are never sent at high power. The power
  returns to the default once no route uses the neighbour or the high-power link breaks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from nodes.core.addr import ip_to_station
from nodes.core.events import Action, Send, SetPower
from nodes.core.hooks import LinkFailure, Needs, NeighbourSignal, TxFailure
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions import core_api
from nodes.extensions.neighbour_table import (
    NS_PER_S,
    KlemmStation,
    NeighbourTable,
    power_for_range_w,
    w_to_dbm,
)
from nodes.extensions.persistent_mac import resend
from nodes.protocols.aodv.events import (
    AodvIpForward,
    AodvRouteErrorReceived,
    AodvRouteReply,
    AodvRouteRequest,
    AodvRouteStateChange,
)
from nodes.protocols.aodv.protocol import AodvRouting
from nodes.protocols.aodv.route_table import RouteEntry, RouteState
from nodes.protocols.aodv.seqno import seq_inc

META_HIGH = "klemm_high_power"
"""Frame.meta key of a frame Reactive LM sent at high power."""


class GoingDown:
    """Section 4.2.3's modified AODV, on the core's events; one per station (a shared service:
    :meth:`of`)."""

    NEEDS: ClassVar[Needs] = Needs(
        events=frozenset({AodvRouteErrorReceived, AodvRouteRequest, AodvRouteReply, AodvIpForward}),
        core=AodvRouting,
        services=(KlemmStation,),
    )

    def __init__(self, ctx: NodeContext, proto: AodvRouting, table: NeighbourTable) -> None:
        self.ctx = ctx
        self.proto = proto
        self.table = table
        self.avoid_until: dict[int, int] = {}
        """Weak neighbours: RREQs/RREPs from them are ignored until then (ns)."""
        self.high_power: dict[int, int] = {}
        """Reactive LM's high-power links: neighbour -> since (ns)."""
        self.originated: dict[int, int] = {}
        """Destinations this station sent data to -> last time (ns): the source rediscovers."""
        self.log = ctx.log.getChild(f"klemm.sta{ctx.station}")
        h = ctx.hooks
        h.subscribe(AodvRouteErrorReceived, self.on_route_error)
        h.subscribe(AodvRouteRequest, self.on_route_request)
        h.subscribe(AodvRouteReply, self.on_route_reply)
        h.subscribe(AodvIpForward, self.on_data_forward)

    @classmethod
    def of(cls, ctx: NodeContext, proto: RoutingProtocol, st: KlemmStation) -> GoingDown:
        """The station's one GDWN machinery (``ctx.services``), created on first use."""
        aodv = core_api(proto, AodvRouting)
        return ctx.services.get_or_create(cls, lambda: cls(ctx, aodv, st.table))

    # ---------------------------------------------------------------- notifications from the MAC
    def link_going_down(self, nb: int, now_ns: int, reason: str, avoid_ns: int) -> list[Action]:
        """ "Proactive and Reactive LM inform the routing protocol of either weak or high power
        links": routes via ``nb`` go GDWN, GDWN messages go to their precursors."""
        self.avoid_until[nb] = max(self.avoid_until.get(nb, 0), now_ns + avoid_ns)
        self.ctx.counters.extra[f"klemm_{reason}_links"] += 1
        self.log.debug("link to %d %s", nb, reason)
        routes = [e for e in self.proto.table.via(nb, now_ns) if e.state is RouteState.VALID]
        return self._going_down(routes, now_ns, forwarded=False)

    def _going_down(self, routes: list[RouteEntry], now_ns: int, forwarded: bool) -> list[Action]:
        acts: list[Action] = []
        unreachable: list[tuple[int, int]] = []
        recipients: set[int] = set()
        for e in routes:
            self.proto.table.set_state(e, RouteState.GDWN, now_ns)
            self.ctx.counters.extra["klemm_gdwn_routes"] += 1
            if e.precursors:
                unreachable.append((e.dst, e.dest_seq_no))
                recipients |= e.precursors
            acts += self._rediscover(e, now_ns)
        if unreachable:
            self.ctx.counters.extra["klemm_gdwn_sent"] += 1
            acts += self.proto.send_rerr(
                unreachable, recipients, now_ns, going_down=True, forwarded=forwarded
            )
        return acts

    def _rediscover(self, e: RouteEntry, now_ns: int) -> list[Action]:
        last = self.originated.get(e.dst)
        if last is None or now_ns - last > self.proto.p.active_route_timeout_ns:
            return []
        # "N_0 stops sending packets and initiates a route discovery". Like a local repair
        # (RFC 3561 section 6.12) the destination sequence number is incremented first, so only
        # the destination or a fresher route answers, and its RREP replaces the GDWN route.
        if e.valid_seq_no:
            e.dest_seq_no = seq_inc(e.dest_seq_no)
        self.ctx.counters.extra["klemm_gdwn_rediscoveries"] += 1
        return self.proto.start_discovery(e.dst, now_ns)

    def avoid(self, nb: int, now_ns: int) -> bool:
        return nb in self.high_power or self.avoid_until.get(nb, 0) > now_ns

    # ---------------------------------------------------------------- AODV hooks
    def on_route_error(self, ev: AodvRouteErrorReceived) -> list[Action]:
        rerr, prev_hop, now_ns = ev.rerr, ev.prev_hop, ev.now_ns
        if not rerr.going_down:
            return []
        self.ctx.counters.extra["klemm_gdwn_received"] += 1
        routes: list[RouteEntry] = []
        for ip, _seq in rerr.unreachable:
            dst = ip_to_station(ip)
            e = None if dst is None else self.proto.table.usable(dst, now_ns)
            if e is not None and e.next_hop == prev_hop and e.state is RouteState.VALID:
                routes.append(e)
        return self._going_down(routes, now_ns, forwarded=True)

    def on_route_request(self, ev: AodvRouteRequest) -> None:
        # "the routing layer should take care to avoid temporary high power links as well as weak
        # links (links that might fail soon)" (section 1).
        if self.avoid(ev.prev_hop, ev.now_ns):
            ev.decision.accept = False
            self.ctx.counters.extra["klemm_rreq_ignored"] += 1

    def on_route_reply(self, ev: AodvRouteReply) -> None:
        if self.avoid(ev.prev_hop, ev.now_ns):
            ev.decision.accept = False
            self.ctx.counters.extra["klemm_rrep_ignored"] += 1

    def on_data_forward(self, ev: AodvIpForward) -> None:
        if ev.prev_hop is None:
            dst = ip_to_station(bytes(ev.packet[16:20]))
            if dst is not None:
                self.originated[dst] = ev.now_ns


@dataclass(frozen=True, slots=True)
class ReactiveLmParams:
    high_power_range_m: float = 275.0
    """"The temporary high power transmission range for Reactive LM is set to 275 m"."""
    lookahead_s: float = 0.1
    """The far end raises its power when it predicts the neighbour beyond the default range this
    far ahead (stands in for the RTS carrying P_t; the value of Proactive LM's section 5)."""
    avoid_s: float = 3.0
    """RREQs/RREPs from a high-power neighbour are ignored this long after it went weak (and while
    the link is at high power). ACTIVE_ROUTE_TIMEOUT; the paper gives no value."""
    neighbour_table: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.high_power_range_m <= 0 or self.lookahead_s < 0 or self.avoid_s < 0:
            raise ValueError("high_power_range_m > 0, lookahead_s >= 0, avoid_s >= 0")


class ReactiveLm:
    def __init__(self, ctx: NodeContext, st: KlemmStation, gd: GoingDown, params: ReactiveLmParams) -> None:
        self.ctx = ctx
        self.st = st
        self.gd = gd
        self.p = params
        self.high_power_w = power_for_range_w(params.high_power_range_m, st.table.p)
        self.high_power_dbm = w_to_dbm(self.high_power_w)
        """P_t of the high-power range (26.16 dBm for 275 m with the ns2-wavelan preset)."""
        self.lookahead_ns = round(params.lookahead_s * NS_PER_S)
        self.avoid_ns = round(params.avoid_s * NS_PER_S)

    def _raise(self, nb: int, now_ns: int) -> list[Action]:
        self.gd.high_power[nb] = now_ns
        self.st.peer_tx_power_w[nb] = self.high_power_w
        self.ctx.counters.extra["klemm_high_power_on"] += 1
        return [SetPower(nb, self.high_power_dbm)] + self.gd.link_going_down(
            nb, now_ns, "high_power", self.avoid_ns
        )

    def on_tx_failure(self, ev: TxFailure) -> list[Action]:
        frame, now_ns = ev.frame, ev.now_ns
        nb = frame.next_hop
        # Control frames (RREP, RERR) stay at default power: "new routes should consist of default
        # power links only". A failure at high power is a real link break. Only a failed RTS-CTS
        # handshake (no DATA attempt) raises the power: "if the RTS-CTS handshake (to a neighbor
        # N_Y) with default transmission power is not successful"; a DATA frame that got its CTS
        # but no ACK is AODV's ordinary link failure.
        if frame.control or ev.data_attempts > 0 or frame.meta.get(META_HIGH) or nb in self.gd.high_power:
            return []
        ev.decision.link_break = False
        self.ctx.counters.extra["klemm_high_power_resends"] += 1
        again = resend(frame, tx_power_dbm=self.high_power_dbm, meta={META_HIGH: True})
        return [Send(again)] + self._raise(nb, now_ns)

    def on_neighbour_signal(self, ev: NeighbourSignal) -> list[Action]:
        nb, now_ns = ev.neighbour, ev.now_ns
        if nb in self.gd.high_power:
            return []
        d = self.st.table.estimate(nb, now_ns + self.lookahead_ns, now_ns)
        if d is None or d <= self.st.table.p.range_m:
            return []
        table = self.gd.proto.table
        if not table.via(nb, now_ns) and not any(nb in e.precursors for e in table if e.usable):
            return []
        return self._raise(nb, now_ns)

    def on_link_failure(self, ev: LinkFailure) -> list[Action]:
        next_hop = ev.next_hop
        if self.gd.high_power.pop(next_hop, None) is None:
            return []
        self.st.peer_tx_power_w.pop(next_hop, None)
        self.ctx.counters.extra["klemm_high_power_off"] += 1
        return [SetPower(next_hop, None)]

    def on_route_state_change(self, ev: AodvRouteStateChange) -> list[Action]:
        """ "temporary": back to the default power once no route uses the neighbour."""
        new, now_ns = ev.new, ev.now_ns
        if new is not None and new is not RouteState.INVALID:
            return []
        acts: list[Action] = []
        table = self.gd.proto.table
        for nb in list(self.gd.high_power):
            if not table.via(nb, now_ns):
                del self.gd.high_power[nb]
                self.st.peer_tx_power_w.pop(nb, None)
                self.ctx.counters.extra["klemm_high_power_off"] += 1
                acts.append(SetPower(nb, None))
        return acts


PARAMS = ReactiveLmParams
NEEDS = Needs(
    events=frozenset({NeighbourSignal, LinkFailure, AodvRouteStateChange}), services=(KlemmStation, GoingDown)
)
"""The shared table and its ``TxFailure`` subscriber, the GDWN machinery (AODV), and the power
back to the default when the link breaks or no route uses it."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: ReactiveLmParams) -> ReactiveLm:
    p = params
    st = KlemmStation.of(ctx, p.neighbour_table)
    gd = GoingDown.of(ctx, protocol, st)
    ext = ReactiveLm(ctx, st, gd, p)
    st.tx_failure.append((1, ext.on_tx_failure))
    ctx.hooks.subscribe(NeighbourSignal, ext.on_neighbour_signal)
    ctx.hooks.subscribe(LinkFailure, ext.on_link_failure)
    ctx.hooks.subscribe(AodvRouteStateChange, ext.on_route_state_change)
    return ext
