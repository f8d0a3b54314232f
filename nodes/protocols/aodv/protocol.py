"""The AODV protocol core (RFC 3561 section 6): a sans-I/O state machine.

``on_event(event, now_ns) -> list[Action]``; no sockets, no clock reads, randomness from
``ctx.rng`` (STYLE.md). It composes one structure per file, like ns-3's AODV model: the routing
table with precursor lists (``route_table``), the duplicate-RREQ cache (``id_cache``), the route
discoveries in progress (``request_table``), the neighbour table (``neighbours``), the buffer of
packets awaiting a route (``send_buffer``) and the rate limiters (``rate_limit``).

Data packets are forwarded hop by hop on raw bytes (``nodes.core.ipv4``): destination lookup,
TTL decrement with an incremental checksum, active-route lifetime refresh. Control messages are
IPv4/UDP port 654 packets built and parsed with ``struct`` (``wire``, ``messages``). Link breaks
come from the MAC's per-frame TX status (``TxStatus(ok=False)``: link-layer feedback); HELLO
messages are available (``enable_hello``) but off by default.

Cross-layer events (``EMITS``; docs/aodv.md "Events"; a subscriber may return actions): the
shared ``LinkFailure`` (``frame`` None when a HELLO timeout found the break; ``queued``: the
interface-queue frames to that next hop, taken out), ``PacketDropped``, ``LocalDelivery``,
``DataForwarded``, ``RouteDiscoveryStarted``, ``RouteDiscoveryJoined``, ``NeighbourSignal`` (every received frame),
``MacOutcome`` (every TX status) and ``TxFailure`` (a failed unicast before it is a link break;
``decision.link_break=False`` keeps the link), and AODV's own (``events``): RERR, RREQ and RREP
received (the last two with a mutable decision), route state changes, and ``AodvIpForward``
(the outgoing data packet, editable in place).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from nodes.core import ipv4
from nodes.core.addr import BROADCAST, ip_to_station, station_ip_int
from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import (
    Action,
    CancelTimer,
    DeliverLocal,
    Drop,
    Event,
    Frame,
    FromAir,
    FromLocal,
    IfqDrop,
    Send,
    SetTimer,
    Timer,
    TxStatus,
)
from nodes.core.hooks import (
    DataForwarded,
    EventClass,
    LinkFailure,
    LocalDelivery,
    MacOutcome,
    NeighbourSignal,
    PacketDropped,
    RouteDiscoveryJoined,
    RouteDiscoveryStarted,
    TxFailure,
    TxFailureDecision,
)
from nodes.core.protocol import NodeContext, RoutingProtocol

from . import wire
from .events import (
    AodvIpForward,
    AodvRouteErrorReceived,
    AodvRouteReply,
    AodvRouteRequest,
    AodvRouteStateChange,
    RrepDecision,
    RreqDecision,
)
from .id_cache import IdCache
from .messages import MalformedMessage, Message, Rerr, Rrep, RrepAck, Rreq, decode, type_name
from .neighbours import NeighbourTable
from .params import AodvParams
from .rate_limit import RateLimiter
from .request_table import (
    Discovery,
    Ns2LastTtl,
    RequestTable,
    TraversalHistory,
    first_ttl,
    next_attempt,
    ns2_next_ttl,
    ns2_timeout_ns,
    timeout_ns,
)
from .route_table import RouteEntry, RouteState, RoutingTable, is_fresher
from .send_buffer import SendBuffer
from .seqno import seq_ge, seq_gt, seq_inc, seq_max


# ------------------------------------------------------------------ timer keys (one type per timer)
@dataclass(frozen=True, slots=True)
class RreqTimer:
    """The route discovery for ``dst`` waited its ring-traversal time, or the RREQ rate limit
    let it go (section 6.3)."""

    dst: int


@dataclass(frozen=True, slots=True)
class RepairTimer:
    """The local repair of the route to ``dst`` has had its time (``local_repair_failure``
    "rediscover": ns-2's LocalRepairTimer)."""

    dst: int


@dataclass(frozen=True, slots=True)
class HelloTimer:
    """The next HELLO is due (section 6.9)."""


@dataclass(frozen=True, slots=True)
class RrepAckTimer:
    """No RREP-ACK from ``neighbour`` within NEXT_HOP_WAIT (section 6.8)."""

    neighbour: int


TIMER_KEYS = (RreqTimer, RepairTimer, HelloTimer, RrepAckTimer)
"""The types of every timer key this core sets."""


class AodvRouting(RoutingProtocol):
    name = "aodv"
    EMITS: ClassVar[frozenset[EventClass]] = frozenset(
        {
            LinkFailure,
            PacketDropped,
            LocalDelivery,
            DataForwarded,
            RouteDiscoveryStarted,
            RouteDiscoveryJoined,
            NeighbourSignal,
            MacOutcome,
            TxFailure,
            AodvRouteErrorReceived,
            AodvRouteRequest,
            AodvRouteReply,
            AodvRouteStateChange,
            AodvIpForward,
        }
    )

    def __init__(self, ctx: NodeContext, params: AodvParams | None = None) -> None:
        super().__init__(ctx)
        self.p = p = params or AodvParams()
        self.log = ctx.log.getChild(f"aodv.sta{ctx.station}")
        self.me = ctx.station
        self.my_ip = station_ip_int(ctx.station)
        self.seq_no = 0
        """Our own destination sequence number (section 6.1)."""
        self.rreq_id = 0
        self.table = RoutingTable(p.delete_period_ns, self.log)
        self.ids = IdCache(p.path_discovery_time_ns)
        self.requests = RequestTable()
        self.ns2_last_ttl = Ns2LastTtl()
        """ns-2's rt_req_last_ttl per destination (``rreq_schedule`` "ns2")."""
        self.traversal = TraversalHistory(p.traversal_history)
        """Per-hop discovery latencies (``adaptive_traversal_time``, ns-2's PerHopTime)."""
        self.neighbours = NeighbourTable()
        self.buffer = SendBuffer(p.send_buffer_len, p.send_buffer_timeout_ns)
        self.rreq_rate = RateLimiter(p.rreq_ratelimit)
        self.rerr_rate = RateLimiter(p.rerr_ratelimit)
        self.last_broadcast_ns: int | None = None
        self._ip_id = 0
        self.started_ns = 0
        """When the node started: ns-2's time zero (its route-purge ticks, ``rreq_schedule``
        "ns2", and ``local_repair_wait_from_start`` count from it)."""

    # ================================================================ entry points
    def start(self, now_ns: int) -> list[Action]:
        self.started_ns = now_ns
        if not self.p.enable_hello:
            return []
        return [SetTimer(HelloTimer(), now_ns + self.p.hello_interval_ns + self._jitter())]

    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        if isinstance(event, FromAir):
            acts = self._on_air(event, now_ns)
        elif isinstance(event, FromLocal):
            acts = self._on_local(event.packet, now_ns)
        elif isinstance(event, TxStatus):
            acts = self._on_tx_status(event, now_ns)
        elif isinstance(event, Timer):
            acts = self._on_timer(event.key, now_ns)
        elif isinstance(event, IfqDrop):
            acts = self._on_ifq_drop(event, now_ns)
        else:  # pragma: no cover - exhaustive
            acts = []
        if self.table.changes:
            acts += self._report_changes(now_ns)
        return acts

    def state(self) -> dict[str, Any]:
        return {
            "seq_no": self.seq_no,
            "rreq_id": self.rreq_id,
            "routes": [e.to_dict() for e in sorted(self.table, key=lambda e: e.dst)],
            "discoveries": self.requests.destinations(),
            "send_buffer": len(self.buffer),
        }

    # ================================================================ events
    def _on_air(self, ev: FromAir, now: int) -> list[Action]:
        self.neighbours.heard(ev.src, now, ev.rssi_dbm, ev.snr_db)
        acts: list[Action] = []
        hooks = self.ctx.hooks
        if hooks.has_subscribers(NeighbourSignal):
            acts += hooks.emit(
                NeighbourSignal(now_ns=now, neighbour=ev.src, rssi_dbm=ev.rssi_dbm, snr_db=ev.snr_db)
            )
        if ev.overheard:
            return acts
        packet = ev.packet
        try:
            ihl = ipv4.check(packet)
        except ipv4.MalformedPacket as exc:
            self.ctx.counters.malformed[str(exc)] += 1
            return acts + [Drop(packet, "malformed")]
        if wire.is_aodv(packet, ihl):
            ip_dst = int.from_bytes(packet[16:20], "big")
            if ip_dst == wire.LIMITED_BROADCAST or ip_dst == self.my_ip:
                return acts + self._on_control(packet, ihl, ev.src, now)
        return acts + self._on_data_from_air(packet, ev.src, now)

    def _on_local(self, packet: bytes, now: int) -> list[Action]:
        c = self.ctx.counters
        try:
            ipv4.check(packet)
        except ipv4.MalformedPacket as exc:
            c.malformed[str(exc)] += 1
            return [Drop(packet, "malformed")]
        dst = ip_to_station(packet[16:20])
        if dst is None:
            return [Drop(packet, "not_manet_address")]
        if dst == self.me:
            return [DeliverLocal(packet)]
        c.data_originated += 1
        e = self.table.lookup(dst, now)
        if e is not None and e.usable:
            return self._send_data(packet, e, None, False, now)
        acts = self._buffer(dst, packet, None, False, now)
        if e is None or e.state is not RouteState.REPAIRING:
            if dst not in self.requests and self.ctx.hooks.has_subscribers(RouteDiscoveryStarted):
                acts += self.ctx.hooks.emit(RouteDiscoveryStarted(now_ns=now, dst=dst, packet=packet))
            elif dst in self.requests and self.ctx.hooks.has_subscribers(RouteDiscoveryJoined):
                acts += self.ctx.hooks.emit(RouteDiscoveryJoined(now_ns=now, dst=dst, packet=packet))
            acts += self._start_discovery(dst, now)
        return acts

    def _on_tx_status(self, ev: TxStatus, now: int) -> list[Action]:
        acts: list[Action] = []
        hooks = self.ctx.hooks
        if hooks.has_subscribers(MacOutcome):
            acts += hooks.emit(
                MacOutcome(
                    now_ns=now,
                    frame=ev.frame,
                    ok=ev.ok,
                    rts_attempts=ev.rts_attempts,
                    data_attempts=ev.data_attempts,
                )
            )
        if not ev.ok and ev.frame.next_hop != BROADCAST:
            decision = TxFailureDecision()
            if hooks.has_subscribers(TxFailure):
                acts += hooks.emit(
                    TxFailure(
                        now_ns=now,
                        frame=ev.frame,
                        rts_attempts=ev.rts_attempts,
                        data_attempts=ev.data_attempts,
                        decision=decision,
                    )
                )
            if decision.link_break and ev.frame.control and not self.p.control_failure_breaks_link:
                # ns-2 aodv.cc rt_ll_failed: "Non-data packets and Broadcast Packets can be
                # dropped" (no link break); section 6.11 case (i) is a break "while transmitting
                # data".
                acts.append(Drop(ev.frame.packet, "aodv_control_tx_failed"))
            elif decision.link_break:
                acts += self._link_break(ev.frame.next_hop, ev.frame, now)
        return acts

    def _on_timer(self, key: Hashable, now: int) -> list[Action]:
        if isinstance(key, RreqTimer):
            return self._on_rreq_timeout(key.dst, now)
        if isinstance(key, RepairTimer):
            return self._on_repair_timer(key.dst, now)
        if isinstance(key, HelloTimer):
            return self._on_hello_timer(now)
        if isinstance(key, RrepAckTimer):
            # Section 6.8: no RREP-ACK within NEXT_HOP_WAIT -> blacklist for BLACKLIST_TIMEOUT.
            self.neighbours.blacklist(key.neighbour, now + self.p.blacklist_timeout_ns)
            self.ctx.counters.extra["aodv_blacklisted"] += 1
        return []

    def _on_ifq_drop(self, ev: IfqDrop, now: int) -> list[Action]:
        hooks = self.ctx.hooks
        if ev.frame.control or not hooks.has_subscribers(PacketDropped):
            return []
        return hooks.emit(PacketDropped(now_ns=now, packet=ev.frame.packet, reason="ifq_full"))

    # ================================================================ data path
    def _on_data_from_air(self, packet: bytes, prev: int, now: int) -> list[Action]:
        dst = ip_to_station(packet[16:20])
        if dst is None:
            return [Drop(packet, "not_manet_address")]
        if dst == self.me:
            self.ctx.counters.data_delivered += 1
            # Section 6.2: the reverse path's lifetime is refreshed by data too.
            art = self.p.active_route_timeout_ns
            src = ip_to_station(packet[12:16])
            if src is not None:
                self.table.refresh(src, now, art)
            self.table.refresh(prev, now, art)
            acts: list[Action] = [DeliverLocal(packet)]
            if self.ctx.hooks.has_subscribers(LocalDelivery):
                acts += self.ctx.hooks.emit(LocalDelivery(now_ns=now, packet=packet, prev_hop=prev))
            return acts
        e = self.table.lookup(dst, now)
        if e is not None and e.usable:
            return self._send_data(packet, e, prev, False, now)
        if e is not None and e.state is RouteState.REPAIRING:
            # Section 6.12: "data packets SHOULD be buffered" while the route is repaired.
            return self._buffer(dst, packet, prev, False, now)
        # Section 6.11 case (ii): "if it gets a data packet destined to a node for which it does
        # not have an active route and is not repairing (if using local repair)".
        unreachable_seq = 0
        recipients = {prev}
        if e is not None:
            if e.valid_seq_no and self.p.no_route_bumps_seq_no:
                e.dest_seq_no = seq_inc(e.dest_seq_no)
            unreachable_seq = e.dest_seq_no
            recipients |= e.precursors
        acts = self._send_rerr([(dst, unreachable_seq)], recipients, now)
        return acts + self._drop(packet, "no_route", now)

    def _send_data(
        self, packet: bytes, e: RouteEntry, prev: int | None, ttl_done: bool, now: int
    ) -> list[Action]:
        buf: bytearray | None = None
        if prev is not None:
            if not ttl_done:
                buf = bytearray(packet)
                if not ipv4.decrement_ttl(buf):
                    return self._drop(packet, "ttl_expired", now)
            self.ctx.counters.data_forwarded += 1
        # Section 6.2: "Each time a route is used to forward a data packet, its Active Route
        # Lifetime field of the source, destination and the next hop on the path to the
        # destination is updated to be no less than the current time plus ACTIVE_ROUTE_TIMEOUT."
        # "... the Active Route Lifetime for the previous hop, along the reverse path back to the
        # IP source, is also updated".
        art = self.p.active_route_timeout_ns
        table = self.table
        table.refresh(e.dst, now, art)
        table.refresh(e.next_hop, now, art)
        src = ip_to_station(packet[12:16])
        if src is not None and src != self.me:
            table.refresh(src, now, art)
        if prev is not None:
            table.refresh(prev, now, art)
        nh = e.next_hop
        hooks = self.ctx.hooks
        extra: list[Action] = []
        if hooks.has_subscribers(AodvIpForward):
            if buf is None:
                buf = bytearray(packet)
            extra = hooks.emit(AodvIpForward(now_ns=now, packet=buf, prev_hop=prev, next_hop=nh))
        out = packet if buf is None else bytes(buf)
        if prev is not None and hooks.has_subscribers(DataForwarded):
            extra += hooks.emit(DataForwarded(now_ns=now, packet=out, prev_hop=prev, next_hop=nh))
        return [Send(Frame(out, nh, meta={"prev_hop": prev}))] + extra

    def _buffer(self, dst: int, packet: bytes, prev: int | None, ttl_done: bool, now: int) -> list[Action]:
        acts: list[Action] = []
        for b in self.buffer.enqueue(dst, packet, now, prev, ttl_done):
            reason = "send_buffer_timeout" if b.expires_ns <= now else "send_buffer_full"
            acts += self._drop(b.packet, reason, now)
        return acts

    def _flush(self, dst: int, e: RouteEntry, now: int) -> list[Action]:
        acts: list[Action] = []
        for b in self.buffer.purge(now):
            acts += self._drop(b.packet, "send_buffer_timeout", now)
        for b in self.buffer.take(dst):
            acts += self._send_data(b.packet, e, b.prev_hop, b.ttl_done, now)
        return acts

    def _drop_buffered(self, dst: int, reason: str, now: int) -> list[Action]:
        acts: list[Action] = []
        for b in self.buffer.take(dst):
            acts += self._drop(b.packet, reason, now)
        return acts

    def _drop(self, packet: bytes, reason: str, now: int) -> list[Action]:
        acts: list[Action] = [Drop(packet, reason)]
        if self.ctx.hooks.has_subscribers(PacketDropped):
            acts += self.ctx.hooks.emit(PacketDropped(now_ns=now, packet=packet, reason=reason))
        return acts

    # ================================================================ route discovery (6.3, 6.4)
    def _start_discovery(self, dst: int, now: int) -> list[Action]:
        ns2 = self.p.rreq_schedule == "ns2"
        d = self.requests.get(dst)
        if d is not None:
            # ns-2 aodv.cc AODV::rt_resolve: every packet we originate calls sendRequest, which
            # sends the next RREQ once rt_req_timeout has passed.
            if ns2 and not d.rate_limited and now >= d.next_rreq_ns:
                return self._ns2_send_request(d, now)
            return []
        if ns2:
            d = self.requests.add(Discovery(dst, 0, now))
            ns2_next_ttl(self.p, d, self._ns2_last(dst))
        else:
            e = self.table.lookup(dst, now)
            d = self.requests.add(Discovery(dst, first_ttl(self.p, None if e is None else e.hop_count), now))
        return self._send_rreq(d, now)

    def _ns2_last(self, dst: int) -> int | None:
        return self.ns2_last_ttl.last(self.p, dst, self.table.down_hop_count.get(dst))

    def _purge_tick_at_or_after(self, t: int) -> int:
        """The first of ns-2's route-purge ticks (AODV::rt_purge every ``route_purge_interval``
        from the node's start) at or after ``t``."""
        step = self.p.route_purge_interval_ns
        k = max(0, -(-(t - self.started_ns) // step))
        return self.started_ns + k * step

    def _ns2_send_request(self, d: Discovery, now: int) -> list[Action]:
        """ns-2 aodv.cc AODV::sendRequest for a destination still without a route."""
        p = self.p
        key = RreqTimer(d.dst)
        if now < d.next_rreq_ns:
            return [SetTimer(key, self._purge_tick_at_or_after(d.next_rreq_ns))]
        if d.floods > p.rreq_retries:
            # "if (rt->rt_req_cnt > RREQ_RETRIES) { rt->rt_req_timeout = CURRENT_TIME +
            # MAX_RREQ_TIMEOUT; rt->rt_req_cnt = 0;" and the waiting packets are dropped.
            d.next_rreq_ns = now + p.max_rreq_timeout_ns
            d.floods = 0
            self.ctx.counters.extra["aodv_discovery_failed"] += 1
            acts = self._drop_buffered(d.dst, "no_route", now) if p.hold_down_drops_buffer else []
            return acts + [SetTimer(key, self._purge_tick_at_or_after(d.next_rreq_ns))]
        ns2_next_ttl(p, d, d.ttl)
        return self._send_rreq(d, now)

    def _ns2_purge_tick(self, d: Discovery, now: int) -> list[Action]:
        """ns-2 aodv.cc AODV::rt_purge for a route that is not up: "if there is a packet for
        this destination waiting in the sendbuffer, then send out route request"."""
        acts: list[Action] = []
        for b in self.buffer.purge(now):
            acts += self._drop(b.packet, "send_buffer_timeout", now)
        e = self.table.lookup(d.dst, now)
        if self.buffer.has(d.dst) or (e is not None and e.state is RouteState.GDWN):
            # (A GDWN route: Klemm's source rediscovers while it still sends on it.)
            return acts + self._ns2_send_request(d, now)
        if e is not None and e.state is RouteState.REPAIRING:
            # Still in repair: packets that arrive are buffered and the next tick asks again.
            return acts + [SetTimer(RreqTimer(d.dst), self._purge_tick_at_or_after(now + 1))]
        self.requests.pop(d.dst)
        return acts

    def _rreq_wait_ns(self, d: Discovery) -> int:
        """How long the RREQ just sent for ``d`` waits for a RREP (``rreq_schedule``)."""
        ntt = self._node_traversal_ns(d.dst)
        if self.p.rreq_schedule == "ns2":
            return ns2_timeout_ns(self.p, d, ntt)
        return timeout_ns(self.p, d, ntt)

    def _send_rreq(self, d: Discovery, now: int) -> list[Action]:
        key = RreqTimer(d.dst)
        # Section 6.3: "An originating node SHOULD NOT originate more than RREQ_RATELIMIT RREQ
        # messages per second." The RREQ waits until the limiter lets it go.
        if not self.rreq_rate.allow(now):
            d.rate_limited = True
            self.ctx.counters.extra["aodv_rreq_ratelimited"] += 1
            return [SetTimer(key, self.rreq_rate.next_allowed_ns(now))]
        d.rate_limited = False
        # Section 6.3: "Immediately before a node originates a route discovery, it MUST increment
        # its own sequence number."
        self.seq_no = seq_inc(self.seq_no)
        self.rreq_id = (self.rreq_id + 1) & 0xFFFF_FFFF
        # "Before broadcasting the RREQ, the originating node buffers the RREQ ID and the
        # Originator IP address (its own address) of the RREQ for PATH_DISCOVERY_TIME."
        self.ids.add(self.me, self.rreq_id, now)
        e = self.table.lookup(d.dst, now)
        # "The Destination Sequence Number field in the RREQ message is the last known
        # destination sequence number for this destination ... If no sequence number is known,
        # the unknown sequence number flag MUST be set."
        known = e is not None and e.valid_seq_no
        rreq = Rreq(
            rreq_id=self.rreq_id,
            dest_ip=station_ip_int(d.dst),
            dest_seq_no=e.dest_seq_no if e is not None and known else 0,
            orig_ip=self.my_ip,
            orig_seq_no=self.seq_no,
            hop_count=0,
            gratuitous=self.p.gratuitous_rrep,
            destination_only=self.p.destination_only,
            unknown_seq_no=not known,
        )
        self.log.debug("RREQ %d for %d ttl %d", self.rreq_id, d.dst, d.ttl)
        d.last_rreq_ns = now
        self.ns2_last_ttl.set(d.dst, d.ttl)  # "remember the TTL used for the next time"
        wait = self._rreq_wait_ns(d)
        at = now + wait
        if self.p.rreq_schedule == "ns2":
            d.next_rreq_ns = at
            at = self._purge_tick_at_or_after(at)
        return [self._broadcast(rreq, d.ttl, "rreq", False, now), SetTimer(key, at)]

    def _node_traversal_ns(self, dst: int) -> int | None:
        """NODE_TRAVERSAL_TIME for the waits of a discovery of ``dst``: the measured per-hop
        latency with ``adaptive_traversal_time`` (ns-2 PerHopTime), else None (the parameter)."""
        return self.traversal.per_hop_ns(dst) if self.p.adaptive_traversal_time else None

    def _on_rreq_timeout(self, dst: int, now: int) -> list[Action]:
        d = self.requests.get(dst)
        if d is None:
            return []
        if d.rate_limited:
            return self._send_rreq(d, now)
        if self._valid(dst, now) is not None:
            return self._route_found(dst, now)
        if d.local_repair and self.p.local_repair_failure == "rerr":
            self.requests.pop(dst)
            return self._repair_failed(dst, now)
        if self.p.rreq_schedule == "ns2":
            return self._ns2_purge_tick(d, now)
        if not next_attempt(self.p, d):
            # Section 6.3: after RREQ_RETRIES at the maximum TTL "all data packets destined for
            # the corresponding destination SHOULD be dropped from the buffer".
            self.requests.pop(dst)
            self.ctx.counters.extra["aodv_discovery_failed"] += 1
            return self._drop_buffered(dst, "no_route", now)
        acts: list[Action] = []
        for b in self.buffer.purge(now):
            acts += self._drop(b.packet, "send_buffer_timeout", now)
        return acts + self._send_rreq(d, now)

    def _valid(self, dst: int, now: int) -> RouteEntry | None:
        """The VALID route to ``dst``: what ends a discovery. A GDWN route (Klemm's going-down
        state) carries data but does not end the rediscovery the extension started for it."""
        e = self.table.lookup(dst, now)
        return e if e is not None and e.state is RouteState.VALID else None

    def _route_found(self, dst: int, now: int, by_rrep: bool = False) -> list[Action]:
        """A usable route to ``dst`` may now exist: finish its discovery and flush the buffer.
        ``by_rrep``: a RREP brought it (a per-hop latency sample, as ns-2's recvReply takes)."""
        d = self.requests.get(dst)
        if d is None:
            return []
        e = self._valid(dst, now)
        if e is None:
            return []
        self.requests.pop(dst)
        if by_rrep and not d.rate_limited:
            self.traversal.add(dst, now - d.last_rreq_ns, e.hop_count)
        acts: list[Action] = [CancelTimer(RreqTimer(dst))]
        if d.local_repair and self.p.local_repair_failure == "rediscover":
            acts.append(CancelTimer(RepairTimer(dst)))
        if d.local_repair:
            # Section 6.12: "If ... the hop count of the newly determined route to the destination
            # is greater than the hop count of the previously known route the node SHOULD issue a
            # RERR message for the destination, with the 'N' bit set."
            if e.hop_count > d.old_hop_count and e.precursors:
                acts += self._send_rerr([(dst, e.dest_seq_no)], set(e.precursors), now, no_delete=True)
        else:
            self.ctx.counters.sample("discovery_latency_s", (now - d.started_ns) / NS_PER_S)
        return acts + self._flush(dst, e, now)

    # ================================================================ control messages
    def _on_control(self, packet: bytes, ihl: int, prev: int, now: int) -> list[Action]:
        c = self.ctx.counters
        payload = wire.udp_payload(packet, ihl)
        if payload is None:
            c.malformed["aodv_bad_udp_length"] += 1
            return [Drop(packet, "aodv_malformed")]
        try:
            msg = decode(payload)
        except MalformedMessage as exc:
            c.malformed[f"aodv_{exc.reason}"] += 1
            return [Drop(packet, "aodv_unknown_type" if exc.reason == "unknown_type" else "aodv_malformed")]
        ip_src = int.from_bytes(packet[12:16], "big")
        ip_dst = int.from_bytes(packet[16:20], "big")
        if ip_src == self.my_ip:
            return []
        if isinstance(msg, Rrep) and ip_dst == wire.LIMITED_BROADCAST and msg.dest_ip == ip_src:
            c.routing_received["hello"] += 1
            return self._recv_hello(msg, prev, now)
        if isinstance(msg, Rreq | Rrep) and (
            ip_to_station(msg.dest_ip) is None or ip_to_station(msg.orig_ip) is None
        ):
            return self._bad_address(packet)
        c.routing_received[type_name(msg)] += 1
        if isinstance(msg, Rreq):
            return self._recv_rreq(msg, packet, packet[8], prev, now)
        if isinstance(msg, Rrep):
            return self._recv_rrep(msg, packet, prev, now)
        if isinstance(msg, Rerr):
            return self._recv_rerr(msg, prev, now)
        # RREP-ACK (section 6.8): the neighbour hears us; stop its blacklist timer.
        return [CancelTimer(RrepAckTimer(prev))]

    def _bad_address(self, packet: bytes) -> list[Action]:
        self.ctx.counters.malformed["aodv_bad_address"] += 1
        return [Drop(packet, "aodv_malformed")]

    # ---------------------------------------------------------------- RREQ (6.5, 6.6)
    def _recv_rreq(self, m: Rreq, packet: bytes, ttl: int, prev: int, now: int) -> list[Action]:
        orig = ip_to_station(m.orig_ip)
        dest = ip_to_station(m.dest_ip)
        if orig is None or dest is None:
            return self._bad_address(packet)
        if orig == self.me:
            return []
        if self.neighbours.blacklisted(prev, now):
            # Section 6.8: "the node ignores all RREQs received from any node in its blacklist set".
            return [Drop(packet, "aodv_blacklisted")]
        # Section 6.5: "the node first creates or updates a route to the previous hop without a
        # valid sequence number".
        acts = self._update_neighbour_route(prev, now)
        if self.ids.seen(orig, m.rreq_id, now):
            return acts + [Drop(packet, "aodv_rreq_duplicate")]
        # "First, it first increments the hop count value in the RREQ by one".
        hc = min(m.hop_count + 1, 255)
        fwd = None if dest == self.me else self.table.lookup(dest, now)
        # Section 6.6: "A node generates a RREP if either: (i) it is itself the destination, or
        # (ii) it has an active route to the destination, the destination sequence number in the
        # node's existing route table entry for the destination is valid and greater than or
        # equal to the Destination Sequence Number of the RREQ (comparison using signed 32-bit
        # arithmetic), and the "destination only" ('D') flag is NOT set."
        can_reply = dest == self.me or (
            fwd is not None
            and fwd.state is RouteState.VALID
            and fwd.valid_seq_no
            and not m.destination_only
            and (m.unknown_seq_no or seq_ge(fwd.dest_seq_no, m.dest_seq_no))
        )
        decision = RreqDecision(reply=can_reply)
        if self.ctx.hooks.has_subscribers(AodvRouteRequest):
            acts += self.ctx.hooks.emit(
                AodvRouteRequest(now_ns=now, rreq=m, prev_hop=prev, decision=decision)
            )
        if not decision.accept:
            # A vetoed copy (Klemm's weak or high-power neighbour) is as if unheard: its RREQ ID
            # is not recorded, so a later copy over a good link is still processed.
            return acts + [Drop(packet, "aodv_rreq_vetoed")]
        self.ids.add(orig, m.rreq_id, now)
        rev = self._update_reverse_route(orig, m.orig_seq_no, hc, prev, now)
        acts += self._route_found(orig, now)
        if dest == self.me:
            return acts + self._reply_as_destination(m, rev, now)
        if can_reply and decision.reply and fwd is not None:
            return acts + self._reply_as_intermediate(m, rev, fwd, now)
        if ttl > 1 and decision.forward:
            # Section 6.5: "the Destination Sequence number for the requested destination is set
            # to the maximum of the corresponding value received in the RREQ message, and the
            # destination sequence value currently maintained by the node for the requested
            # destination. However, the forwarding node MUST NOT modify its maintained value".
            dseq, unknown = m.dest_seq_no, m.unknown_seq_no
            if fwd is not None and fwd.valid_seq_no and (unknown or seq_gt(fwd.dest_seq_no, dseq)):
                dseq, unknown = fwd.dest_seq_no, False
            out = dataclasses.replace(m, hop_count=hc, dest_seq_no=dseq, unknown_seq_no=unknown)
            acts.append(self._broadcast(out, ttl - 1, "rreq", True, now))
        return acts

    def _update_reverse_route(self, orig: int, orig_seq: int, hc: int, prev: int, now: int) -> RouteEntry:
        p = self.p
        # Section 6.5: "MinimalLifetime = (current time + 2*NET_TRAVERSAL_TIME -
        # 2*HopCount*NODE_TRAVERSAL_TIME)"; the lifetime becomes max(ExistingLifetime,
        # MinimalLifetime). (ns-2: REV_ROUTE_LIFE instead, ``reverse_route_life``.)
        minimal = now + p.reverse_route_lifetime_ns(hc)
        e = self.table.lookup(orig, now)
        if e is None:
            return self.table.add(RouteEntry(orig, prev, hc, orig_seq, True, minimal))
        if (
            p.reverse_route_fresher_only
            and e.usable
            and e.valid_seq_no
            and not (seq_gt(orig_seq, e.dest_seq_no) or (orig_seq == e.dest_seq_no and hc < e.hop_count))
        ):
            # Section 6.2: "The route is only updated if the new sequence number is either (i)
            # higher ..., or (ii) the sequence numbers are equal, but the hop count ... is
            # smaller"; the lifetime is still extended (ns-2 recvRequest: rt_expire = max(...)).
            e.expires_ns = max(e.expires_ns, minimal)
            return e
        # "the Originator Sequence Number from the RREQ is compared to the corresponding
        # destination sequence number in the route table entry and copied if greater than the
        # existing value there; the valid sequence number field is set to true; the next hop in
        # the routing table becomes the node from which the RREQ was received; the hop count is
        # copied from the Hop Count in the RREQ message".
        if not e.valid_seq_no or seq_gt(orig_seq, e.dest_seq_no):
            e.dest_seq_no = orig_seq
        e.valid_seq_no = True
        moved = e.next_hop != prev
        e.next_hop, e.hop_count = prev, hc
        if orig in self.requests:
            self.ns2_last_ttl.set(orig, hc)  # ns-2 recvRequest: rt_req_last_ttl = rq_hop_count
        if e.usable and not (moved and e.state is RouteState.GDWN):
            e.expires_ns = max(e.expires_ns, minimal)
        else:
            e.expires_ns = minimal
            self.table.set_state(e, RouteState.VALID, now)
        return e

    def _update_neighbour_route(self, nb: int, now: int) -> list[Action]:
        art = now + self.p.active_route_timeout_ns
        e = self.table.lookup(nb, now)
        if e is None:
            self.table.add(RouteEntry(nb, nb, 1, 0, False, art))
        elif e.usable and e.next_hop == nb and e.hop_count == 1:
            e.expires_ns = max(e.expires_ns, art)
        else:
            e.next_hop, e.hop_count, e.expires_ns = nb, 1, art
            self.table.set_state(e, RouteState.VALID, now)
        return self._route_found(nb, now)

    def _reply_as_destination(self, m: Rreq, rev: RouteEntry, now: int) -> list[Action]:
        # Section 6.1: "Immediately before a destination node originates a RREP in response to a
        # RREQ, it MUST update its own sequence number to the maximum of its current sequence
        # number and the destination sequence number in the RREQ packet."
        if not m.unknown_seq_no:
            self.seq_no = seq_max(self.seq_no, m.dest_seq_no)
        # Section 6.6.1: "The destination node copies the value MY_ROUTE_TIMEOUT into the
        # Lifetime field of the RREP. ... the Hop Count field is set to zero".
        rrep = Rrep(
            dest_ip=self.my_ip,
            dest_seq_no=self.seq_no,
            orig_ip=m.orig_ip,
            lifetime_ms=self.p.my_route_timeout_ns // NS_PER_MS,
            hop_count=0,
        )
        return self._send_rrep(rev.next_hop, rrep, False, now)

    def _reply_as_intermediate(self, m: Rreq, rev: RouteEntry, fwd: RouteEntry, now: int) -> list[Action]:
        # Section 6.6.2: "it copies its known sequence number for the destination into the
        # Destination Sequence Number field ... placing the last hop node ... into the precursor
        # list for the forward route entry ... placing the next hop towards the destination in
        # the precursor list for the reverse route entry ... The Lifetime field of the RREP is
        # calculated by subtracting the current time from the expiration time in its route table
        # entry."
        fwd.precursors.add(rev.next_hop)
        rev.precursors.add(fwd.next_hop)
        rrep = Rrep(
            dest_ip=m.dest_ip,
            dest_seq_no=fwd.dest_seq_no,
            orig_ip=m.orig_ip,
            lifetime_ms=max(0, fwd.expires_ns - now) // NS_PER_MS,
            hop_count=fwd.hop_count,
        )
        acts = self._send_rrep(rev.next_hop, rrep, False, now)
        if m.gratuitous:
            # Section 6.6.3: "If the RREQ has the 'G' flag set, and the intermediate node returns
            # a RREP to the originating node, it MUST also unicast a gratuitous RREP to the
            # destination node." Its fields describe the route back to the originator.
            g = Rrep(
                dest_ip=m.orig_ip,
                dest_seq_no=m.orig_seq_no,
                orig_ip=m.dest_ip,
                lifetime_ms=max(0, rev.expires_ns - now) // NS_PER_MS,
                hop_count=rev.hop_count,
            )
            self.ctx.counters.extra["aodv_gratuitous_rrep"] += 1
            acts += self._send_rrep(fwd.next_hop, g, False, now)
        return acts

    # ---------------------------------------------------------------- RREP (6.7)
    def _recv_rrep(self, m: Rrep, packet: bytes, prev: int, now: int) -> list[Action]:
        dest = ip_to_station(m.dest_ip)
        orig = ip_to_station(m.orig_ip)
        if dest is None or orig is None:
            return self._bad_address(packet)
        acts: list[Action] = []
        decision = RrepDecision()
        if self.ctx.hooks.has_subscribers(AodvRouteReply):
            acts += self.ctx.hooks.emit(AodvRouteReply(now_ns=now, rrep=m, prev_hop=prev, decision=decision))
        if not decision.accept:
            return acts + [Drop(packet, "aodv_rrep_vetoed")]
        acts += self._update_neighbour_route(prev, now)
        if m.ack_required:
            # Section 6.7: a RREP with the 'A' bit set is answered with a RREP-ACK.
            acts.append(self._unicast(prev, RrepAck(), "rrep_ack", False, 1))
        if dest == self.me:
            return acts + [Drop(packet, "aodv_rrep_for_self")]
        # Section 6.7: "the node first increments the hop count value in the RREP by one".
        hc = min(m.hop_count + 1, 255)
        e = self.table.lookup(dest, now)
        updated = is_fresher(e, m.dest_seq_no, hc)
        if updated:
            # "the route table entry is ... marked as active, the destination sequence number is
            # marked as valid, the next hop ... is assigned to be the node from which the RREP is
            # received ... the hop count is set to the value of the New Hop Count, the expiry time
            # is set to the current time plus the value of the Lifetime in the RREP message, and
            # the destination sequence number is the Destination Sequence Number in the RREP".
            expires = now + m.lifetime_ms * NS_PER_MS
            if e is None:
                e = self.table.add(RouteEntry(dest, prev, hc, m.dest_seq_no, True, expires))
            else:
                e.next_hop, e.hop_count, e.dest_seq_no = prev, hc, m.dest_seq_no
                e.valid_seq_no, e.expires_ns = True, expires
                self.table.set_state(e, RouteState.VALID, now)
            self.ns2_last_ttl.set(dest, hc)  # ns-2 recvReply: rt_req_last_ttl = rp_hop_count
            acts += self._route_found(dest, now, by_rrep=True)
        if orig == self.me:
            return acts
        if not updated or e is None:
            # "If the current node is not the node indicated by the Originator IP Address in the
            # RREP message AND a forward route has been created or updated ..., the node ...
            # forwards the RREP towards the originator".
            return acts + [Drop(packet, "aodv_rrep_stale")]
        rev = self.table.usable(orig, now)
        if rev is None:
            return acts + [Drop(packet, "aodv_rrep_no_reverse_route")]
        # "When any node transmits a RREP, the precursor list for the corresponding destination
        # node is updated by adding to it the next hop node to which the RREP is forwarded. Also,
        # at each node the (reverse) route used to forward a RREP has its lifetime changed to be
        # the maximum of (existing-lifetime, (current time + ACTIVE_ROUTE_TIMEOUT)). Finally, the
        # precursor list for the next hop towards the destination is updated to contain the next
        # hop towards the source."
        e.precursors.add(rev.next_hop)
        rev.expires_ns = max(rev.expires_ns, now + self.p.active_route_timeout_ns)
        rev.precursors.add(e.next_hop)  # as ns-3: RERRs about the originator reach this side too
        nbr = self.table.usable(prev, now)
        if nbr is not None:
            nbr.precursors.add(rev.next_hop)
        out = dataclasses.replace(m, hop_count=hc, ack_required=False)
        return acts + self._send_rrep(rev.next_hop, out, True, now)

    def _send_rrep(self, nb: int, rrep: Rrep, forwarded: bool, now: int) -> list[Action]:
        if self.p.rrep_ack:
            rrep = dataclasses.replace(rrep, ack_required=True)
            return [
                self._unicast(nb, rrep, "rrep", forwarded, self.p.control_ttl),
                SetTimer(RrepAckTimer(nb), now + self.p.next_hop_wait_ns),
            ]
        return [self._unicast(nb, rrep, "rrep", forwarded, self.p.control_ttl)]

    # ---------------------------------------------------------------- HELLO (6.9)
    def _on_hello_timer(self, now: int) -> list[Action]:
        p = self.p
        acts: list[Action] = []
        for nb in self.neighbours.hello_lost(now, p.hello_lifetime_ns, p.delete_period_ns):
            self.ctx.counters.extra["aodv_hello_loss"] += 1
            acts += self._link_break(nb, None, now)
        # "A node SHOULD only use hello messages if it is part of an active route. Every
        # HELLO_INTERVAL milliseconds, the node checks whether it has sent a broadcast ... within
        # the last HELLO_INTERVAL. If it has not, it MAY broadcast a RREP with TTL = 1".
        self.table.purge(now)
        active = any(e.usable for e in self.table)
        quiet = self.last_broadcast_ns is None or now - self.last_broadcast_ns >= p.hello_interval_ns
        if active and quiet:
            hello = Rrep(
                dest_ip=self.my_ip,
                dest_seq_no=self.seq_no,
                orig_ip=self.my_ip,
                lifetime_ms=p.hello_lifetime_ns // NS_PER_MS,
                hop_count=0,
            )
            acts.append(self._broadcast(hello, 1, "hello", False, now))
        acts.append(SetTimer(HelloTimer(), now + p.hello_interval_ns))
        return acts

    def _recv_hello(self, m: Rrep, prev: int, now: int) -> list[Action]:
        # "Whenever a node receives a Hello message from a neighbor, the node SHOULD make sure
        # that it has an active route to the neighbor, and create one if necessary. ... the
        # Lifetime of the route to the neighbor ... [is] ALLOWED_HELLO_LOSS * HELLO_INTERVAL".
        self.neighbours.hello(prev, now)
        life = now + self.p.hello_lifetime_ns
        e = self.table.lookup(prev, now)
        if e is None:
            self.table.add(RouteEntry(prev, prev, 1, m.dest_seq_no, True, life))
        else:
            if e.usable and e.next_hop == prev and e.hop_count == 1:
                e.expires_ns = max(e.expires_ns, life)
            else:
                e.next_hop, e.hop_count, e.expires_ns = prev, 1, life
                self.table.set_state(e, RouteState.VALID, now)
            if not e.valid_seq_no or seq_gt(m.dest_seq_no, e.dest_seq_no):
                e.dest_seq_no, e.valid_seq_no = m.dest_seq_no, True
        return self._route_found(prev, now)

    # ================================================================ route maintenance (6.11)
    def _invalidate(self, e: RouteEntry, now: int, seq: int | None = None) -> None:
        # Section 6.11: "1. The destination sequence number of this routing entry, if it exists
        # and is valid, is incremented for cases (i) and (ii) above, and copied from the incoming
        # RERR in case (iii) above. 2. The entry is invalidated by marking the route entry as
        # invalid 3. The Lifetime field is updated to current time plus DELETE_PERIOD."
        if seq is not None:
            e.dest_seq_no = seq
        elif e.valid_seq_no:
            e.dest_seq_no = seq_inc(e.dest_seq_no)
        self.table.set_state(e, RouteState.INVALID, now)
        e.expires_ns = now + self.p.delete_period_ns

    def _link_break(self, nh: int, frame: Frame | None, now: int) -> list[Action]:
        """Section 6.11 case (i): "if it detects a link break for the next hop of an active route
        in its routing table while transmitting data"."""
        p = self.p
        if p.repair_only_failed_packet and frame is not None:
            e = self._repairing_route_of(frame, now)
            if e is not None:
                # ns-2 rt_ll_failed -> local_rt_repair again: the packet joins the repair's buffer.
                return self._after_break(frame, e.dst, set(), now)
        affected = self.table.via(nh, now)
        repair_dst, repair_src = self._repair_candidate(frame, affected, now)
        # ns-2 rt_ll_failed's local-repair branch: "local_rt_repair(rt, p); return;" -- nothing
        # else changes (``repair_only_failed_packet``).
        repair_only = repair_dst is not None and p.repair_only_failed_packet
        if not repair_only:
            self.neighbours.remove(nh)
        if p.link_break_prunes_precursors and not repair_only:
            for entry in self.table:
                entry.precursors.discard(nh)
        unreachable: list[tuple[int, int]] = []
        recipients: set[int] = set()
        for e in affected:
            if e.dst == repair_dst or repair_only:
                continue
            self._invalidate(e, now)
            # "The RERR should contain those destinations that are part of the created list of
            # unreachable destinations and have a non-empty precursor list."
            if e.precursors:
                unreachable.append((e.dst, e.dest_seq_no))
                recipients |= e.precursors
                e.precursors.clear()
        self.ctx.counters.extra["aodv_link_breaks"] += 1
        acts: list[Action] = []
        queued = [] if repair_only else self.ctx.ifq.remove_if(lambda f: f.next_hop == nh)
        frames = ([frame] if frame is not None else []) + queued
        if self.ctx.hooks.has_subscribers(LinkFailure):
            acts += self.ctx.hooks.emit(
                LinkFailure(
                    now_ns=now,
                    next_hop=nh,
                    frame=frame,
                    queued=tuple(queued),
                    packets=tuple(f.packet for f in frames if not f.control),
                )
            )
        acts += self._send_rerr(unreachable, recipients, now)
        restart: set[int] = set()
        for f in frames:
            acts += self._after_break(f, repair_dst, restart, now)
        if repair_dst is not None:
            acts += self._start_local_repair(repair_dst, repair_src, now)
        for dst in sorted(restart):
            acts += self._start_discovery(dst, now)
        return acts

    def _repairing_route_of(self, frame: Frame, now: int) -> RouteEntry | None:
        """The route in repair that a failed transit data ``frame`` was heading along, if any."""
        if frame.control or frame.meta.get("prev_hop") is None or len(frame.packet) < 20:
            return None
        dst = ip_to_station(frame.packet[16:20])
        e = self.table.lookup(dst, now) if dst is not None else None
        return e if e is not None and e.state is RouteState.REPAIRING else None

    def _repair_candidate(
        self, frame: Frame | None, affected: list[RouteEntry], now: int
    ) -> tuple[int | None, int | None]:
        """Section 6.12: "When a link break in an active route occurs, the node upstream of that
        break MAY choose to repair the link locally if the destination was no farther than
        MAX_REPAIR_TTL hops away." Only for transit data (the source rediscovers itself). With
        ``local_repair_rule = "ns2"`` also only when the packet has come farther than it still has
        to go (aodv.cc rt_ll_failed: "if the broken link is closer to the dest than source,
        attempt a local repair. Otherwise, bring down the route": ``num_forwards > rt_hops``)."""
        if not self.p.local_repair or frame is None or frame.control or frame.meta.get("prev_hop") is None:
            return None, None
        dst = ip_to_station(frame.packet[16:20]) if len(frame.packet) >= 20 else None
        src = ip_to_station(frame.packet[12:16]) if len(frame.packet) >= 20 else None
        for e in affected:
            if e.dst == dst and e.hop_count <= self.p.max_repair_ttl:
                if self.p.local_repair_rule == "ns2":
                    back = self.table.lookup(src, now) if src is not None else None
                    if back is None or back.hop_count <= e.hop_count:
                        return None, None
                return dst, src
        return None, None

    def _after_break(self, f: Frame, repair_dst: int | None, restart: set[int], now: int) -> list[Action]:
        """A frame that can no longer go to its next hop: re-buffer or drop it."""
        if f.control:
            return [Drop(f.packet, "aodv_control_link_failure")]
        packet = f.packet
        dst = ip_to_station(packet[16:20]) if len(packet) >= 20 else None
        prev = f.meta.get("prev_hop")
        if dst is not None and dst == repair_dst:
            return self._buffer(dst, packet, prev, True, now)
        if (
            dst is not None
            and prev is None
            and packet[12:16] == self.ctx.ip
            and self.p.source_rebuffers_on_break
        ):
            # Our own packet: keep it and rediscover (the route is invalid now).
            self.ctx.counters.extra["aodv_rebuffered"] += 1
            restart.add(dst)
            return self._buffer(dst, packet, None, False, now)
        return self._drop(packet, "link_failure", now)

    def _start_local_repair(self, dst: int, src: int | None, now: int) -> list[Action]:
        e = self.table.lookup(dst, now)
        if e is None or not e.usable:
            return []
        p = self.p
        running = self.requests.get(dst)
        # Section 6.12: "the node increments the sequence number for the destination and then
        # broadcasts a RREQ for that destination. The TTL of the RREQ should initially be set to
        # the following value: max(MIN_REPAIR_TTL, 0.5 * #hops) + LOCAL_ADD_TTL, where #hops is
        # the number of hops to the sender (originator) of the currently undeliverable packet."
        # MIN_REPAIR_TTL "should be the last known hop count to the destination".
        if e.valid_seq_no and p.local_repair_bumps_seq_no:
            e.dest_seq_no = seq_inc(e.dest_seq_no)
        self.table.set_state(e, RouteState.REPAIRING, now)
        self.ctx.counters.extra["aodv_local_repairs"] += 1
        acts: list[Action] = []
        if running is not None:
            # A discovery for the destination is under way (Klemm's source rediscovering its GDWN
            # route): it becomes the repair, and the route is in repair all the same (ns-2's
            # local_rt_repair marks it RTF_IN_REPAIR whatever sendRequest does), so no packet
            # takes the dead hop.
            running.local_repair, running.old_hop_count = True, e.hop_count
            d = running
        else:
            d = self.requests.add(Discovery(dst, 0, now, local_repair=True, old_hop_count=e.hop_count))
            acts = self._first_repair_rreq(d, e, src, now)
        if p.local_repair_failure == "rediscover":
            # ns-2 aodv.cc AODV::local_rt_repair: "schedule(&lrtimer, p->copy(),
            # rt->rt_req_timeout)", an absolute time used as a delay.
            wait = self._rreq_wait_ns(d)
            since_start = now - self.started_ns if p.local_repair_wait_from_start else 0
            acts.append(SetTimer(RepairTimer(dst), now + since_start + wait))
        return acts

    def _first_repair_rreq(self, d: Discovery, e: RouteEntry, src: int | None, now: int) -> list[Action]:
        p = self.p
        if p.rreq_schedule == "ns2":
            # ns-2 local_rt_repair -> sendRequest: the TTL from max(rt_req_last_ttl,
            # rt_last_hop_count), NETWORK_DIAMETER for a route never brought down here.
            ns2_next_ttl(p, d, self._ns2_last(d.dst))
        else:
            back = self.table.lookup(src, now) if src is not None else None
            hops_back = back.hop_count if back is not None else 0
            d.ttl = min(max(e.hop_count, hops_back // 2) + p.local_add_ttl, p.net_diameter)
        return self._send_rreq(d, now)

    def _on_repair_timer(self, dst: int, now: int) -> list[Action]:
        """ns-2 aodv.cc LocalRepairTimer::handle: "route is yet to be repaired ... bring down the
        route" (rt_down) -- and nothing else: no RERR, the buffered packets stay and the
        discovery goes on from this node (``local_repair_failure`` "rediscover")."""
        e = self.table.lookup(dst, now)
        if e is not None and e.state is RouteState.REPAIRING:
            self.table.set_state(e, RouteState.INVALID, now)
            e.expires_ns = now + self.p.delete_period_ns
            self.ctx.counters.extra["aodv_local_repair_failed"] += 1
        return []

    def _repair_failed(self, dst: int, now: int) -> list[Action]:
        e = self.table.lookup(dst, now)
        acts: list[Action] = []
        if e is not None and e.state is RouteState.REPAIRING:
            self.table.set_state(e, RouteState.INVALID, now)
            e.expires_ns = now + self.p.delete_period_ns
            if e.precursors:
                acts += self._send_rerr([(dst, e.dest_seq_no)], set(e.precursors), now)
                e.precursors.clear()
        self.ctx.counters.extra["aodv_local_repair_failed"] += 1
        return acts + self._drop_buffered(dst, "no_route", now)

    def _recv_rerr(self, m: Rerr, prev: int, now: int) -> list[Action]:
        acts: list[Action] = []
        if self.ctx.hooks.has_subscribers(AodvRouteErrorReceived):
            acts += self.ctx.hooks.emit(AodvRouteErrorReceived(now_ns=now, rerr=m, prev_hop=prev))
        if m.going_down:
            return acts  # Klemm's GDWN notice: for the extension that sent it, not an error
        # Section 6.11 case (iii): "the list should consist of those destinations in the RERR for
        # which there exists a corresponding entry in the local routing table that has the
        # transmitter of the received RERR as the next hop."
        unreachable: list[tuple[int, int]] = []
        recipients: set[int] = set()
        for ip, seq in m.unreachable:
            dst = ip_to_station(ip)
            if dst is None:
                continue
            e = self.table.usable(dst, now)
            if e is None or e.next_hop != prev:
                continue
            if self.p.rerr_seq_check and e.valid_seq_no and seq_gt(e.dest_seq_no, seq):
                continue  # ns-2 recvError: only if rt_seqno <= the RERR's
            if m.no_delete:
                # Section 6.12: "Upon receiving a RERR message with the 'N' flag set, a node MUST
                # NOT delete the route to that destination. The only action taken should be the
                # retransmission of the message, if the RERR arrived from the next hop along that
                # route, and if there are one or more precursor nodes for that route".
                if e.precursors:
                    unreachable.append((dst, seq))
                    recipients |= e.precursors
                continue
            self._invalidate(e, now, seq)
            if self.p.rerr_flushes_ifq:
                for f in self.ctx.ifq.remove_if(lambda f: f.next_hop == prev):
                    acts += (
                        [Drop(f.packet, "aodv_rerr_ifq_flush")]
                        if f.control
                        else self._drop(f.packet, "aodv_rerr_ifq_flush", now)
                    )
            if e.precursors:
                unreachable.append((dst, seq))
                recipients |= e.precursors
                e.precursors.clear()
        return acts + self._send_rerr(unreachable, recipients, now, no_delete=m.no_delete, forwarded=True)

    # ---------------------------------------------------------------- for extensions
    def start_discovery(self, dst: int, now_ns: int) -> list[Action]:
        """Start a route discovery for ``dst`` (none if one is running), e.g. Klemm's source
        rediscovering a GDWN route."""
        return self._start_discovery(dst, now_ns)

    def send_rerr(
        self,
        unreachable: list[tuple[int, int]],
        recipients: Iterable[int],
        now_ns: int,
        *,
        going_down: bool = False,
        forwarded: bool = False,
    ) -> list[Action]:
        """A RERR (section 6.11 rules: unicast to one recipient, else broadcast, TTL 1, rate
        limit); ``going_down`` sets the 'G' flag (Klemm's GDWN message, docs/extensions-aodv.md)."""
        return self._send_rerr(unreachable, recipients, now_ns, going_down=going_down, forwarded=forwarded)

    def _send_rerr(
        self,
        unreachable: list[tuple[int, int]],
        recipients: Iterable[int],
        now: int,
        *,
        no_delete: bool = False,
        forwarded: bool = False,
        going_down: bool = False,
    ) -> list[Action]:
        """Section 6.11: "In case there is only one unique neighbor that needs to receive the
        RERR, the RERR SHOULD be unicast toward that neighbor. Otherwise the RERR is typically
        sent to the local broadcast address (Destination IP == 0xFFFFFFFF, TTL == 1)"."""
        nbs = sorted(set(recipients) - {self.me})
        if not unreachable or not nbs:
            return []
        acts: list[Action] = []
        for i in range(0, len(unreachable), 255):
            chunk = unreachable[i : i + 255]
            rerr = Rerr(tuple((station_ip_int(d), s) for d, s in chunk), no_delete, going_down)
            # "A node should not generate more than RERR_RATELIMIT RERR messages per second."
            if not self.rerr_rate.allow(now):
                acts.append(Drop(rerr.encode(), "aodv_rerr_ratelimit"))
                continue
            kind = "gdwn" if going_down else "rerr"
            if len(nbs) == 1:
                acts.append(self._unicast(nbs[0], rerr, kind, forwarded, 1))
            else:
                acts.append(self._broadcast(rerr, 1, kind, forwarded, now))
        return acts

    # ================================================================ output
    def _packet(self, dst_ip: int, ttl: int, msg: Message) -> bytes:
        self._ip_id = (self._ip_id + 1) & 0xFFFF
        return wire.build(self.my_ip, dst_ip, ttl, msg.encode(), self._ip_id)

    def _count(self, kind: str, forwarded: bool) -> None:
        c = self.ctx.counters
        (c.routing_forwarded if forwarded else c.routing_sent)[kind] += 1

    def _unicast(self, nb: int, msg: Message, kind: str, forwarded: bool, ttl: int) -> Send:
        self._count(kind, forwarded)
        return Send(Frame(self._packet(station_ip_int(nb), ttl, msg), nb, control=True, meta={"aodv": kind}))

    def _broadcast(self, msg: Message, ttl: int, kind: str, forwarded: bool, now: int) -> Send:
        self._count(kind, forwarded)
        self.last_broadcast_ns = now
        frame = Frame(
            self._packet(wire.LIMITED_BROADCAST, ttl, msg), BROADCAST, control=True, meta={"aodv": kind}
        )
        return Send(frame, self._jitter() if forwarded or self.p.jitter_originated else 0)

    def _jitter(self) -> int:
        j = self.p.max_broadcast_jitter_ns
        return int(self.ctx.rng.random() * j) if j > 0 else 0

    def _report_changes(self, now: int) -> list[Action]:
        acts: list[Action] = []
        hooks = self.ctx.hooks
        for _ in range(16):  # subscribers may change states again; bounded
            changes = self.table.drain_changes()
            if not changes or not hooks.has_subscribers(AodvRouteStateChange):
                break
            for dst, old, new in changes:
                acts += hooks.emit(AodvRouteStateChange(now_ns=now, dst=dst, old=old, new=new))
        return acts
