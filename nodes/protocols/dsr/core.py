"""The DSR protocol core (RFC 4728; ns-2 Monarch DSR behaviour as measured by Yu 2004, Ghanem 2008).

A sans-I/O state machine (STYLE.md): ``on_event(event, now_ns) -> list[Action]``. It composes the
structures of this package, one per file: the route cache (``route_cache``), the send buffer
(``send_buffer``), the route request table (``request_table``), the gratuitous reply table
(``grat_reply_table``) and the maintenance buffer (``maintenance``, network-layer ACKs only).
Data packets are handled on raw bytes (``srcroute``); control packets with the ``options`` codec.

Route Maintenance uses the MAC's TX status (docs/interfaces.md: ``TxStatus.ok``), which is what
ns-2's DSR used (link-layer feedback from 802.11).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from nodes.core import ipv4
from nodes.core.addr import BROADCAST, ip_to_station
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
    CrossLayerEvent,
    DataForwarded,
    EventClass,
    LinkFailure,
    LocalDelivery,
    PacketDropped,
    RouteDiscoveryJoined,
    RouteDiscoveryStarted,
)
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.events import (
    DsrCacheInsert,
    DsrCacheMiss,
    DsrCacheRemove,
    DsrCacheUse,
    DsrControlForwarded,
    DsrPacketOverheard,
    DsrPacketSalvaged,
    DsrRouteErrorReceived,
    DsrRouteErrorSent,
    DsrRouteSent,
)
from nodes.protocols.dsr.grat_reply_table import GratReplyTable
from nodes.protocols.dsr.maintenance import MaintenanceBuffer
from nodes.protocols.dsr.options import (
    MAX_OPT_ADDRESSES,
    NO_NEXT_HEADER,
    OPT_ACKREQ,
    Ack,
    AckRequest,
    DsrOption,
    DsrPacket,
    MalformedDsr,
    Pad1,
    PadN,
    RawOption,
    RouteError,
    RouteReply,
    RouteRequest,
    SourceRoute,
    build,
    parse,
)
from nodes.protocols.dsr.params import DsrParams
from nodes.protocols.dsr.request_table import Discovery, RequestTable
from nodes.protocols.dsr.route_cache import Path, loop_free, make_cache
from nodes.protocols.dsr.send_buffer import Buffered, SendBuffer


# ------------------------------------------------------------------ timer keys (one type per timer)
@dataclass(frozen=True, slots=True)
class RreqTimer:
    """No ROUTE REPLY for ``target`` within the request period: send the next request (8.2.1)."""

    target: int


@dataclass(frozen=True, slots=True)
class SendBufferTimer:
    """The send buffer's oldest packet times out (``send_buffer_timeout``, section 8.2)."""


@dataclass(frozen=True, slots=True)
class ReplyTimer:
    """A cached ROUTE REPLY to ``initiator``'s request ``rreq_id`` is due (its 8.2.5 delay)."""

    initiator: int
    rreq_id: int


@dataclass(frozen=True, slots=True)
class AckTimer:
    """No acknowledgement ``ack_id`` within the maintenance timeout (passive or network-layer)."""

    ack_id: int


SNOOP_REFRESH_NS = 1_000_000_000
"""A route snooped from a forwarded packet is re-added to the cache at most once a second (the
data path would otherwise search the cache for every packet)."""


def _inner(frame: Frame) -> bytes | None:
    """The IP packet a DSR data frame carries (DSR header removed); None for a routing packet."""
    if frame.meta.get("dsr", "data") != "data":
        return None
    try:
        return srcroute.strip(frame.packet)
    except (MalformedDsr, ValueError, IndexError):
        return None


def packet_kind(dp: DsrPacket) -> str:
    """``rreq``/``rrep``/``rerr``/``ack`` for routing packets (counter keys), else ``data``."""
    kinds = {type(o) for o in dp.options}
    for cls, name in ((RouteRequest, "rreq"), (RouteReply, "rrep"), (RouteError, "rerr"), (Ack, "ack")):
        if cls in kinds:
            return name
    return "data" if dp.next_header != NO_NEXT_HEADER else "dsr"


def full_route(dp: DsrPacket, sr: SourceRoute) -> Path:
    """Section 8.1.4: "source, Address[1], ..., Address[n], destination" (Salvage zero), else
    "Address[1], ..., Address[n], destination"."""
    head: Path = (dp.src,) if sr.salvage == 0 else ()
    return head + sr.addresses + ((dp.dst,) if dp.dst is not None else ())


def next_pos(sr: SourceRoute) -> int:
    """Index, in :func:`full_route`, of the node a packet with this option is travelling to."""
    head = 1 if sr.salvage == 0 else 0
    return head + srcroute.next_index(len(sr.addresses), sr.segs_left)


class DsrRouting(RoutingProtocol):
    """DSR (RFC 4728) with ns-2's path cache, salvaging, gratuitous Route Errors and replies.

    Cross-layer events (``EMITS``; docs/dsr.md "Events"): the shared ``LinkFailure`` (with the
    interface-queue frames of the same next hop, already removed: each is then salvaged,
    re-routed or dropped, and reported), ``PacketDropped`` (with the full source route),
    ``LocalDelivery``, ``DataForwarded`` (DSR header on), ``RouteDiscoveryStarted`` and ``RouteDiscoveryJoined``, and DSR's
    own (``nodes.protocols.dsr.events``): the ROUTE ERROR sent (subscribers may append options to
    it) and received, salvaging, the cache's insert/remove/use/miss, overheard packets, every
    route sent to a neighbour, and routing packets forwarded (editable in place).

    Extensions originate packets of their own over cached routes (never a discovery) with
    :meth:`send_options` and :meth:`send_inner_cached`.
    """

    name = "dsr"
    EMITS: ClassVar[frozenset[EventClass]] = frozenset(
        {
            LinkFailure,
            PacketDropped,
            LocalDelivery,
            DataForwarded,
            RouteDiscoveryStarted,
            RouteDiscoveryJoined,
            DsrRouteErrorSent,
            DsrRouteErrorReceived,
            DsrPacketSalvaged,
            DsrCacheInsert,
            DsrCacheRemove,
            DsrCacheUse,
            DsrCacheMiss,
            DsrPacketOverheard,
            DsrRouteSent,
            DsrControlForwarded,
        }
    )

    def __init__(self, ctx: NodeContext, params: DsrParams | None = None) -> None:
        super().__init__(ctx)
        self.p = p = params or DsrParams()
        self.me = ctx.station
        self.cache = make_cache(
            p.cache,
            self.me,
            primary_size=p.primary_cache_size,
            secondary_size=p.secondary_cache_size,
            link_size=p.link_cache_size,
            timeout_ns=p.route_cache_timeout_ns,
            bidirectional=p.bidirectional_links,
            shortest_over_both=p.cache_lookup == "shortest",
            notify=self._cache_notify,
        )
        self.send_buffer = SendBuffer(p.max_send_buffer_length, p.send_buffer_timeout_ns)
        self.requests = RequestTable(p.request_table_size, p.request_table_ids)
        self.grat_replies = GratReplyTable(p.grat_reply_holdoff_ns)
        self.maint = MaintenanceBuffer(p.rexmt_buffer_size)
        self.rreq_id = 0
        self.ack_id = 0
        self.last_rerr: RouteError | None = None
        """The Route Error to piggyback on the next Route Request (gratuitous Route Error)."""
        self.last_rerr_ns = 0
        """When ``last_rerr`` was received (``grat_rerr_max_hold_s``)."""
        self._promote_foreign = p.promote_secondary == "every_lookup"
        """Whether a lookup for another node's packet (cached reply, salvage) promotes a secondary
        hit (``promote_secondary``)."""
        self.pending_replies: dict[tuple[int, int], tuple[Path, int]] = {}
        self._snooped: dict[Path, int] = {}
        self._now = 0
        self._out: list[Action] = []

    # ------------------------------------------------------------------ plumbing
    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        self._now = now_ns
        out: list[Action] = []
        self._out = out
        if isinstance(event, FromAir):
            self._from_air(event)
        elif isinstance(event, FromLocal):
            self._from_local(event.packet)
        elif isinstance(event, TxStatus):
            self._tx_status(event)
        elif isinstance(event, Timer):
            self._timer(event.key)
        elif isinstance(event, IfqDrop):
            self._ifq_drop(event.frame)
        return out

    def _wants(self, cls: EventClass) -> bool:
        """Whether anyone subscribed to ``cls`` (events are built only then: several per packet)."""
        return self.ctx.hooks.has_subscribers(cls)

    def _emit(self, event: CrossLayerEvent) -> None:
        self._out.extend(self.ctx.hooks.emit(event))

    def _route_sent(self, route: Path, next_hop: int, kind: str) -> None:
        if self._wants(DsrRouteSent):
            self._emit(DsrRouteSent(now_ns=self._now, route=route, next_hop=next_hop, kind=kind))

    def _cache_used(self, dst: int, route: Path | None) -> None:
        if route is None:
            if self._wants(DsrCacheMiss):
                self._emit(DsrCacheMiss(now_ns=self._now, dst=dst))
        elif self._wants(DsrCacheUse):
            self._emit(DsrCacheUse(now_ns=self._now, dst=dst, route=route))

    def _cache_notify(self, event: str, route: Path, detail: str) -> None:
        if event == "insert":
            if self._wants(DsrCacheInsert):
                self._emit(DsrCacheInsert(now_ns=self._now, route=route, cache=detail))
        elif self._wants(DsrCacheRemove):
            self._emit(DsrCacheRemove(now_ns=self._now, route=route, reason=detail))

    def _drop(self, packet: bytes, reason: str, route: Path | None) -> None:
        self._out.append(Drop(packet, reason))
        if self._wants(PacketDropped):
            self._emit(PacketDropped(now_ns=self._now, packet=packet, reason=reason, route=route))

    def _send(self, packet: bytes, next_hop: int, kind: str, *, jitter_ns: int = 0, **meta: Any) -> None:
        control = kind != "data"
        if self.p.network_acks and next_hop != BROADCAST and kind != "ack":
            self.ack_id = (self.ack_id + 1) & 0xFFFF
            packet = srcroute.insert_option(
                srcroute.remove_option_type(packet, OPT_ACKREQ), AckRequest(self.ack_id).encode()
            )
            meta["ack_id"] = self.ack_id
        frame = Frame(packet, next_hop, control=control, meta={"dsr": kind, **meta})
        if "ack_id" in meta:
            self.maint.add(meta["ack_id"], frame)
        self._out.append(Send(frame, jitter_ns=jitter_ns))

    def lookup(self, dst: int) -> Path | None:
        route = self.cache.find(dst, self._now)
        self._cache_used(dst, route)
        return route

    def add_route(self, route: Path, *, primary: bool) -> None:
        if len(route) >= 2 and route[0] == self.me and loop_free(route):
            self.cache.add(route, self._now, primary=primary)

    def _learn(self, path: Path, pos: int, *, primary: bool) -> None:
        """Cache what ``path`` (with this node at ``pos``) says: forward, and back if links are
        bidirectional."""
        self.add_route(path[pos:], primary=primary)
        if self.p.bidirectional_links:
            self.add_route(tuple(reversed(path[: pos + 1])), primary=primary)

    def _learn_heard(self, path: Path, tx_pos: int, *, primary: bool) -> None:
        """Promiscuous learning: this node heard ``path[tx_pos]`` transmit, so it is a neighbour."""
        if self.me in path or not self.p.bidirectional_links:
            return
        self.add_route((self.me,) + path[tx_pos:], primary=primary)
        self.add_route((self.me,) + tuple(reversed(path[: tx_pos + 1])), primary=primary)

    # ------------------------------------------------------------------ origination
    def _from_local(self, packet: bytes) -> None:
        c = self.ctx.counters
        try:
            ipv4.check(packet)
        except ipv4.MalformedPacket as exc:
            c.malformed[str(exc)] += 1
            self._out.append(Drop(packet, "malformed"))
            return
        dst = ip_to_station(ipv4.dst(packet))
        if dst is None:
            self._out.append(Drop(packet, "not_manet_address"))
            return
        if dst == self.me:
            self._out.append(DeliverLocal(packet))
            return
        c.data_originated += 1
        self._originate(packet, dst)

    def _originate(self, packet: bytes, dst: int) -> None:
        """Section 8.1.1: send over a cached route, else buffer and discover."""
        route = self.lookup(dst)
        if route is not None:
            self._send_data(packet, route)
            return
        victim = self.send_buffer.add(packet, dst, self._now)
        if victim is not None:
            self._drop(victim.packet, "send_buffer_full", None)
        self._arm_send_buffer()
        d = self.requests.discovery(dst)
        if d is None or d.salvage_only:
            # before the request goes out: ELFN (Yu 2004 s3.2) freezes the sender here
            if self._wants(RouteDiscoveryStarted):
                self._emit(RouteDiscoveryStarted(now_ns=self._now, dst=dst, packet=packet))
        if d is None:
            self._send_rreq(self.requests.start(dst, self._now), nonprop=self.p.nonprop_request)
        elif d.salvage_only:
            # ns-2.29 getRouteForPacket: this node's own packet may have the propagating request
            # a salvaged one may not, once the non-propagating one had its arp_timeout.
            d.salvage_only = False
            if d.nonprop_pending and self._now - d.last_sent_ns > self.p.nonprop_request_timeout_ns:
                self._send_rreq(d, nonprop=False)
        elif self._wants(RouteDiscoveryJoined):
            self._emit(RouteDiscoveryJoined(now_ns=self._now, dst=dst, packet=packet))

    def _send_data(self, inner: bytes, route: Path, *, jitter_ns: int = 0) -> None:
        # Section 8.1.3: Address[1..n] are the hops between source and destination.
        pkt = srcroute.add_source_route(inner, route[1:-1])
        self._route_sent(route, route[1], "data")
        self._send(pkt, route[1], "data", jitter_ns=jitter_ns)

    def _salvage_bytes(self, inner: bytes, route: Path, salvage: int) -> bytes:
        """``inner`` with a Source Route for this node's salvage over ``route`` (section 8.3.6:
        ``Address[1]`` = this node, Segments Left = n - 1 since it sends it on at once)."""
        pkt = srcroute.add_source_route(inner, route[1:-1])
        addrs = (self.me,) + route[1:-1]
        new_sr = srcroute.source_route_bytes(addrs, len(addrs) - 1, salvage)
        return srcroute.replace_source_route(
            pkt, srcroute.find_source_route(pkt, (pkt[0] & 0x0F) * 4), new_sr
        )

    def _arm_send_buffer(self) -> None:
        t = self.send_buffer.next_expiry_ns()
        self._out.append(SetTimer(SendBufferTimer(), t) if t is not None else CancelTimer(SendBufferTimer()))

    def _flush_send_buffer(self) -> None:
        """Send what waits for destinations that now have a route (discovery done), the k-th
        packet ``k * send_buffer_spacing`` later (ns-2 acceptRouteReply)."""
        delay = 0
        for dst in self.send_buffer.dsts():
            route = self.cache.find(dst, self._now)
            if route is None:
                continue
            d = self.requests.finish(dst)
            if d is not None:
                if not d.salvage_only:
                    self.ctx.counters.sample("discovery_latency_s", (self._now - d.started_ns) / 1e9)
                self._out.append(CancelTimer(RreqTimer(dst)))
            for b in self.send_buffer.take(dst):
                self._cache_used(dst, route)
                if b.salvage:
                    self.ctx.counters.extra["salvaged"] += 1
                    self._route_sent(route, route[1], "data")
                    pkt = self._salvage_bytes(b.packet, route, b.salvage)
                    self._send(pkt, route[1], "data", jitter_ns=delay, salvaged=b.salvage)
                else:
                    self._send_data(b.packet, route, jitter_ns=delay)
                delay += self.p.send_buffer_spacing_ns
        self._arm_send_buffer()

    # ------------------------------------------------------------------ route discovery
    def _send_rreq(self, d: Discovery, *, nonprop: bool) -> None:
        """Section 8.2.1: originate a Route Request (hop limit 1 when non-propagating)."""
        p = self.p
        self.rreq_id = (self.rreq_id + 1) & 0xFFFF
        opts: list[DsrOption] = []
        if p.grat_route_errors and self.last_rerr is not None:
            # Section 4.3 / 8.3.5 "gratuitous Route Error": the last Route Error received is
            # piggybacked on the next Route Request, so that the flood purges the broken link.
            # ns-2 (sendOutRtReq): only while younger than max_err_hold, and held until a
            # propagating request has carried it.
            hold = p.grat_rerr_max_hold_ns
            if hold is None or self._now - self.last_rerr_ns < hold:
                opts.append(self.last_rerr)
                if not (nonprop and p.grat_rerr_until_propagating):
                    self.last_rerr = None
            else:
                self.last_rerr = None
        opts.append(RouteRequest(self.rreq_id, d.target, ()))
        pkt = build(self.me, None, opts, ttl=1 if nonprop else p.discovery_hop_limit)
        self._send(pkt, BROADCAST, "rreq")
        self.ctx.counters.routing_sent["rreq"] += 1
        d.last_id = self.rreq_id
        d.last_sent_ns = self._now
        if p.request_backoff == "ns2_cycles":
            # dsragent.cc BackOffTest / getRouteForPacket: a cycle is a non-propagating request
            # and, arp_timeout later, one propagating request; the next cycle starts
            # rt_rq_period * 4^k after this one began.
            if nonprop or not d.nonprop_pending:
                d.tries += 1
                d.cycle_started_ns = self._now
            d.nonprop_pending = nonprop
            cycle_end = d.cycle_started_ns + p.ns2_cycle_gap_ns(d.tries)
            wait = p.nonprop_request_timeout_ns if nonprop else cycle_end - self._now
            self._out.append(SetTimer(RreqTimer(d.target), self._now + wait))
            return
        if nonprop:
            d.nonprop_pending = True
            wait = p.nonprop_request_timeout_ns
        else:
            d.nonprop_pending = False
            d.tries += 1
            # Section 8.2: "the interval between successive Route Discoveries for this target
            # SHOULD be doubled, up to a maximum of MaxRequestPeriod".
            d.backoff_ns = (
                p.request_period_ns if d.tries == 1 else min(2 * d.backoff_ns, p.max_request_period_ns)
            )
            wait = d.backoff_ns
        self._out.append(SetTimer(RreqTimer(d.target), self._now + wait))

    def _rreq_timeout(self, target: int) -> None:
        d = self.requests.discovery(target)
        if d is None:
            return
        if not self.send_buffer.has(target):
            self.requests.finish(target)
            return
        if self.cache.find(target, self._now) is not None:
            self._flush_send_buffer()
            return
        if d.salvage_only:
            # ns-2.29 NEW_SALVAGE_LOGIC: no propagating request for another node's packet; at the
            # next cycle (rt_reqs_outstanding > dsr_salvage_max_requests) it is dropped.
            end = d.cycle_started_ns + self._salvage_wait_ns(d)
            if self._now < end:
                self._out.append(SetTimer(RreqTimer(target), end))
                return
            self._drop_salvaged(target)
            self.requests.finish(target)
            return
        if self.p.request_backoff == "ns2_cycles" and d.nonprop_pending:
            self._send_rreq(d, nonprop=False)  # the cycle's propagating request
            return
        if d.tries >= self.p.max_request_rexmt:
            self.requests.finish(target)
            for b in self.send_buffer.take(target):
                self._drop(b.packet, "no_route", None)
            self._arm_send_buffer()
            return
        self._drop_salvaged(target)  # a salvaged packet gets one cycle (NEW_SALVAGE_LOGIC)
        if not self.send_buffer.has(target):
            self.requests.finish(target)
            return
        self._send_rreq(d, nonprop=self.p.request_backoff == "ns2_cycles" and self.p.nonprop_request)

    def _salvage_wait_ns(self, d: Discovery) -> int:
        """How long a salvaged packet waits for a reply: until the next cycle would begin."""
        if self.p.request_backoff == "ns2_cycles":
            return self.p.ns2_cycle_gap_ns(max(d.tries, 1))
        return self.p.request_period_ns

    def _drop_salvaged(self, target: int) -> None:
        dropped = self.send_buffer.take_salvaged(target)
        for b in dropped:
            self._drop(b.packet, "no_route", None)
        if dropped:
            self._arm_send_buffer()

    def _recv_rreq(self, ev: FromAir, dp: DsrPacket, rreq: RouteRequest) -> None:
        """Section 8.2.2: process a received Route Request."""
        c = self.ctx.counters
        initiator = dp.src
        if initiator == self.me or self.me in rreq.addresses:
            return
        record: Path = (initiator,) + rreq.addresses + (self.me,)
        if not loop_free(record):
            c.malformed["route record loop"] += 1
            return
        c.routing_received["rreq"] += 1
        self._process_rerrs(dp, ev.packet, for_me=False, overheard=False)
        target = rreq.target == self.me
        self._learn(record, len(record) - 1, primary=target and self.p.reply_record_primary)
        if target:
            # Section 8.2.4: the target returns the accumulated route record (every copy); ns-2
            # jitters it (returnSrcRouteToRequestor, RREQ_JITTER).
            jitter = self.p.target_reply_jitter_ns
            self._send_rrep(record, jitter_ns=int(self.ctx.rng.random() * jitter) if jitter else 0)
            self._flush_if_waiting()
            return
        if self.requests.seen(initiator, rreq.rreq_id, rreq.target):
            c.extra["rreq_duplicate"] += 1
            return
        if self.p.reply_from_cache:
            cached = self.cache.find(rreq.target, self._now, promote=self._promote_foreign)
            if cached is not None:
                full = record + cached[1:]
                # Section 8.2.3: the reply MUST NOT be sent if the resulting route would contain
                # a node twice; the request is then handled as if there were no cached route.
                if loop_free(full):
                    if self.p.reply_record_primary:  # ns-2 replyFromRouteCache: addRoute
                        self.add_route(tuple(reversed(record)), primary=True)
                    self._cache_used(rreq.target, cached)
                    self._schedule_cached_reply(initiator, rreq.rreq_id, full)
                    return
                c.extra["cached_reply_loop"] += 1
        # Hop limit: the IP TTL (section 6.2 / 8.2.2).
        if dp.ttl <= 1 or len(rreq.addresses) + 1 > MAX_OPT_ADDRESSES:
            return
        opts = [
            RouteRequest(rreq.rreq_id, rreq.target, rreq.addresses + (self.me,)) if o is rreq else o
            for o in dp.options
        ]
        pkt = build(initiator, None, opts, ttl=dp.ttl - 1)
        jitter = int(self.ctx.rng.random() * self.p.broadcast_jitter_ns)
        self._send(pkt, BROADCAST, "rreq", jitter_ns=jitter)
        c.routing_forwarded["rreq"] += 1
        self._flush_if_waiting()

    def _schedule_cached_reply(self, initiator: int, rreq_id: int, full: Path) -> None:
        """Section 8.2.5 (reply storms): wait d = H * (h - 1 + r) before replying from cache."""
        self.ctx.counters.extra["cached_replies"] += 1
        hops = len(full) - 1
        delay = int(self.p.reply_storm_hop_delay_ns * (hops - 1 + self.ctx.rng.random()))
        if delay <= 0:
            self._send_rrep(full)
            return
        self.pending_replies[(initiator, rreq_id)] = (full, hops)
        self._out.append(SetTimer(ReplyTimer(initiator, rreq_id), self._now + delay))

    def _send_rrep(self, full: Path, *, grat: bool = False, jitter_ns: int = 0) -> None:
        """Originate a Route Reply for ``full`` (initiator ... target), this node on it, sent back
        along the reverse of the route's part from the initiator to this node."""
        k = full.index(self.me)
        back = tuple(reversed(full[: k + 1]))
        sr = SourceRoute(back[1:-1], len(back) - 2)
        pkt = build(self.me, full[0], [sr, RouteReply(full[1:])], ttl=self.p.ttl)
        self._route_sent(full, back[1], "rrep")
        self._send(pkt, back[1], "rrep", jitter_ns=jitter_ns)
        self.ctx.counters.routing_sent["rrep"] += 1
        if grat:
            self.ctx.counters.extra["grat_replies"] += 1

    def _flush_if_waiting(self) -> None:
        if len(self.send_buffer):
            self._flush_send_buffer()

    # ------------------------------------------------------------------ reception
    def _from_air(self, ev: FromAir) -> None:
        c = self.ctx.counters
        try:
            dp = parse(ev.packet)
        except MalformedDsr as exc:
            c.malformed[str(exc)] += 1
            if not ev.overheard:
                self._out.append(Drop(ev.packet, "malformed"))
            return
        for o in dp.options:
            if isinstance(o, RawOption):
                c.extra["unknown_option"] += 1
                # Section 8.1.6: "when these two bits are 11 ... MUST drop the packet".
                if o.action == 0x60:
                    if not ev.overheard:
                        self._out.append(Drop(ev.packet, "unknown_option"))
                    return
        if ev.overheard:
            self._overheard(ev, dp)
            return
        rreq = dp.find(RouteRequest)
        if isinstance(rreq, RouteRequest):
            self._recv_rreq(ev, dp, rreq)
            return
        sr = dp.find(SourceRoute)
        if not isinstance(sr, SourceRoute):
            if dp.dst != self.me:
                c.malformed["no source route"] += 1
                self._out.append(Drop(ev.packet, "malformed"))
                return
            self._process_options(ev, dp, None, None)
            self._deliver(ev, dp, None)
            return
        if dp.dst is None:
            c.malformed["broadcast source route"] += 1
            self._out.append(Drop(ev.packet, "malformed"))
            return
        path = full_route(dp, sr)
        pos = next_pos(sr)
        if path[pos] != self.me or (sr.segs_left > 0) == (dp.dst == self.me):
            c.malformed["not the next hop"] += 1
            self._out.append(Drop(ev.packet, "malformed"))
            return
        if loop_free(path):
            last = self._snooped.get(path)
            if last is None or self._now - last >= SNOOP_REFRESH_NS:
                if len(self._snooped) > 256:
                    self._snooped.clear()
                self._snooped[path] = self._now
                self._learn(path, pos, primary=False)
        self._process_options(ev, dp, path, pos)
        if dp.dst == self.me:
            self._deliver(ev, dp, path)
        else:
            self._forward(ev, dp, sr, path)
        self._flush_if_waiting()

    def _process_options(self, ev: FromAir, dp: DsrPacket, path: Path | None, pos: int | None) -> None:
        """Section 8.1.4: options other than the Source Route and Route Request."""
        for o in dp.options:
            if isinstance(o, RouteReply):
                rrep_path = (dp.dst,) + o.addresses if dp.dst is not None else o.addresses
                if self.me in rrep_path and loop_free(rrep_path):
                    self._learn(rrep_path, rrep_path.index(self.me), primary=True)
            elif isinstance(o, Ack):
                if o.ack_dst == self.me:
                    self.add_route((self.me, o.ack_src), primary=False)
                    pend = self.maint.pop(o.ack_id)
                    if pend is not None:
                        self._out.append(CancelTimer(AckTimer(o.ack_id)))
            elif isinstance(o, AckRequest):
                # Section 8.3.3: acknowledge to the previous hop unless the packet carries an ACK.
                if dp.find(Ack) is None:
                    ack = build(self.me, ev.src, [Ack(o.ack_id, self.me, ev.src)], ttl=1)
                    self._send(ack, ev.src, "ack")
                    self.ctx.counters.routing_sent["ack"] += 1
        self._process_rerrs(dp, ev.packet, for_me=dp.dst == self.me, overheard=False)

    def _process_rerrs(self, dp: DsrPacket, packet: bytes, *, for_me: bool, overheard: bool) -> None:
        """Section 8.3.5: remove the broken link; at the Route Error's destination, remember it
        for the next Route Request and re-send a nested Route Error's inner options."""
        opts = dp.options
        for i, o in enumerate(opts):
            if not isinstance(o, RouteError):
                continue
            link = o.link
            if link is not None:
                self.cache.remove_link(link[0], link[1], self._now)
            following = opts[i + 1 :]
            mine = for_me and o.err_dst == self.me
            if self._wants(DsrRouteErrorReceived):
                self._emit(
                    DsrRouteErrorReceived(
                        now_ns=self._now,
                        rerr=o,
                        following=tuple(following),
                        packet=packet,
                        for_me=mine,
                        overheard=overheard,
                    )
                )
            if not mine:
                continue
            self.ctx.counters.routing_received["rerr"] += 1
            if link is not None:
                self.last_rerr = o
                self.last_rerr_ns = self._now
            nxt = next((f for f in following if not isinstance(f, (Pad1, PadN, SourceRoute))), None)
            if (
                isinstance(nxt, RouteError)
                and nxt.err_src == self.me
                or isinstance(nxt, Ack)
                and nxt.ack_src == self.me
            ):
                self._resend_nested(o, nxt, following)
            break  # the first Route Error addressed here carries the nested ones after it

    def _resend_nested(
        self, rerr: RouteError, inner: RouteError | Ack, following: Sequence[DsrOption]
    ) -> None:
        """Section 8.3.5: "copy the DSR options following the current Route Error into a new
        packet with IP Source Address equal to this node's own IP address and IP Destination
        Address equal to the Acknowledgement or Error Destination Address"."""
        dst = inner.err_dst if isinstance(inner, RouteError) else inner.ack_dst
        opts = [f for f in following if not isinstance(f, SourceRoute)]
        if dst == self.me:
            return
        route = self.lookup(dst)
        if route is None:
            # No discovery for a notification (Yu 2004 section 4.3.2).
            self.ctx.counters.extra["nested_rerr_no_route"] += 1
            return
        if rerr.salvage:
            # A nonzero Salvage makes Address[1] the sending node itself (section 8.3.6).
            sr = SourceRoute((self.me,) + route[1:-1], len(route) - 2, salvage=rerr.salvage)
        else:
            sr = SourceRoute(route[1:-1], len(route) - 2)
        self._send(build(self.me, dst, [sr, *opts], ttl=self.p.ttl), route[1], "rerr")
        self.ctx.counters.routing_sent["rerr"] += 1
        self.ctx.counters.extra["nested_rerr_resent"] += 1

    def _deliver(self, ev: FromAir, dp: DsrPacket, path: Path | None) -> None:
        """Section 8.1.4: remove the DSR header and pass the rest up (nothing for No Next Header)."""
        c = self.ctx.counters
        if dp.next_header == NO_NEXT_HEADER:
            kind = packet_kind(dp)
            if kind == "rrep":
                c.routing_received["rrep"] += 1
            elif kind == "ack":
                c.routing_received["ack"] += 1
            return
        inner = srcroute.strip(ev.packet)
        c.data_delivered += 1
        self._out.append(DeliverLocal(inner))
        if self._wants(LocalDelivery):
            self._emit(LocalDelivery(now_ns=self._now, packet=inner, prev_hop=ev.src))

    def _forward(self, ev: FromAir, dp: DsrPacket, sr: SourceRoute, path: Path) -> None:
        """Section 8.1.5: decrement Segments Left and the TTL, send to the next address."""
        buf = bytearray(ev.packet)
        kind = packet_kind(dp)
        if not ipv4.decrement_ttl(buf):
            self._drop(ev.packet, "ttl_expired", path)
            return
        srcroute.advance(buf, srcroute.find_source_route(buf, dp.ihl))
        sl = sr.segs_left - 1
        nh = sr.addresses[len(sr.addresses) - sl] if sl else path[-1]
        if kind != "data" and self._wants(DsrControlForwarded):
            self._emit(
                DsrControlForwarded(now_ns=self._now, packet=buf, kind=kind, prev_hop=ev.src, next_hop=nh)
            )
        pkt = bytes(buf)
        self._route_sent(path, nh, kind)
        if kind == "data":
            self.ctx.counters.data_forwarded += 1
            if self._wants(DataForwarded):
                self._emit(DataForwarded(now_ns=self._now, packet=pkt, prev_hop=ev.src, next_hop=nh))
        else:
            rrep = dp.find(RouteReply)
            if isinstance(rrep, RouteReply) and dp.dst is not None:
                self._route_sent((dp.dst,) + rrep.addresses, nh, kind)
            self.ctx.counters.routing_forwarded[kind] += 1
        self._send(pkt, nh, kind)

    def _overheard(self, ev: FromAir, dp: DsrPacket) -> None:
        """Promiscuous ("tapping") mode: learn from overheard source routes, replies and errors."""
        if self._wants(DsrPacketOverheard):
            self._emit(DsrPacketOverheard(now_ns=self._now, packet=ev.packet, src=ev.src, dst=ev.dst))
        self._process_rerrs(dp, ev.packet, for_me=False, overheard=True)
        sr = dp.find(SourceRoute)
        if isinstance(sr, SourceRoute) and dp.dst is not None:
            path = full_route(dp, sr)
            tx = next_pos(sr) - 1
            if 0 <= tx < len(path) and path[tx] == ev.src and loop_free(path):
                if self.me in path:
                    if self.p.shorten_control_routes or packet_kind(dp) == "data":
                        self._maybe_shorten(dp, sr, path, tx)
                else:
                    self._learn_heard(path, tx, primary=False)
                self._check_reply_storm(dp, path)
        rrep = dp.find(RouteReply)
        if isinstance(rrep, RouteReply) and dp.dst is not None:
            rrep_path = (dp.dst,) + rrep.addresses
            if ev.src in rrep_path and loop_free(rrep_path):
                self._learn_heard(rrep_path, rrep_path.index(ev.src), primary=True)
        self._flush_if_waiting()

    def _maybe_shorten(self, dp: DsrPacket, sr: SourceRoute, path: Path, tx: int) -> None:
        """Section 3.4.3 / 8.1.5 automatic route shortening: this node, later on the route, heard
        the packet early; send a gratuitous Route Reply with the shorter route to the source."""
        k = path.index(self.me)
        if not self.p.grat_replies or sr.salvage != 0 or k <= tx + 1 or dp.src == self.me:
            return
        if not self.grat_replies.check_and_add(dp.src, path[tx], self._now):
            return
        short = path[: tx + 1] + path[k:]
        if loop_free(short):
            self._learn(short, tx + 1, primary=False)
            self._send_rrep(short, grat=True)

    def _check_reply_storm(self, dp: DsrPacket, path: Path) -> None:
        """Section 8.2.5: cancel a pending cached reply when the initiator already uses a route
        to the target shorter than the one this node would return."""
        for key, (full, hops) in list(self.pending_replies.items()):
            if key[0] == dp.src and full[-1] == dp.dst and len(path) - 1 < hops:
                del self.pending_replies[key]
                self._out.append(CancelTimer(ReplyTimer(*key)))
                self.ctx.counters.extra["cached_replies_cancelled"] += 1

    # ------------------------------------------------------------------ route maintenance
    def _tx_status(self, ev: TxStatus) -> None:
        f = ev.frame
        if f.next_hop == BROADCAST or "dsr" not in f.meta:
            return
        ack_id = f.meta.get("ack_id")
        if ev.ok:
            if ack_id is not None and self.maint.get(ack_id) is not None:
                self._out.append(SetTimer(AckTimer(ack_id), self._now + self.p.passive_ack_timeout_ns))
            return
        if ack_id is not None:
            self.maint.pop(ack_id)
        self.link_failed(f)

    def _ack_timeout(self, ack_id: int) -> None:
        pend = self.maint.get(ack_id)
        if pend is None:
            return
        if pend.retries < self.p.max_maint_rexmt:
            pend.retries += 1
            self._out.append(Send(pend.frame))
            return
        self.maint.pop(ack_id)
        self.link_failed(pend.frame)

    def link_failed(self, frame: Frame) -> None:
        """Section 8.3: the link to ``frame.next_hop`` is broken.

        Remove it from the cache, then handle the frame and every interface-queue frame with the
        same next hop (section 3.4.2): the node's own data is routed again; other packets cause a
        Route Error to their source (one per source) and are salvaged (section 8.3.6) or dropped;
        a Route Error that meets the broken link causes a nested Route Error (section 8.3.4).
        """
        nh = frame.next_hop
        queued = self.ctx.ifq.remove_if(lambda f: f.next_hop == nh and "dsr" in f.meta)
        for pend in self.maint.remove_next_hop(nh):
            self._out.append(CancelTimer(AckTimer(pend.ack_id)))
        self.ctx.counters.extra["link_failures"] += 1
        if self._wants(LinkFailure):
            self._emit(
                LinkFailure(
                    now_ns=self._now,
                    next_hop=nh,
                    frame=frame,
                    queued=tuple(queued),
                    packets=tuple(p for p in map(_inner, [frame, *queued]) if p is not None),
                )
            )
        self.cache.remove_link(self.me, nh, self._now)
        groups: dict[int, tuple[Path, int, list[bytes]]] = {}
        self._undeliverable(frame, nh, groups, report=True)
        failed_origins = set(groups)
        # ns-2 xmitFailed: only the failed packet causes a Route Error; the queued packets go
        # through undeliverablePkt (their losses still listed on that Route Error's event).
        per_source = self.p.link_failure_rerrs == "per_source"
        for f in queued:
            self._undeliverable(f, nh, groups, report=per_source)
        for err_dst, (back, salvage, pkts) in groups.items():
            optional = not per_source and err_dst not in failed_origins
            self._send_rerr(err_dst, back, salvage, pkts, nh, [], optional=optional)

    def _undeliverable(
        self, f: Frame, nh: int, groups: dict[int, tuple[Path, int, list[bytes]]], *, report: bool
    ) -> None:
        """Handle one packet the broken link could not carry; ``groups`` collects the packets per
        Route Error destination. ``report`` False (a queued packet under ``link_failure_rerrs =
        failed_packet``): no nested Route Error, the packet is salvaged like any other."""
        pkt = f.packet
        kind = f.meta.get("dsr", "data")
        if kind in ("ack", "rreq"):
            return
        try:
            dp = parse(pkt)
        except MalformedDsr:
            self._out.append(Drop(pkt, "malformed"))
            return
        sr = dp.find(SourceRoute)
        if not isinstance(sr, SourceRoute) or dp.dst is None:
            self._drop(pkt, "link_failure", None)
            return
        path = full_route(dp, sr)
        j = next_pos(sr)
        if j < 1 or j >= len(path) or path[j - 1] != self.me:
            self._drop(pkt, "link_failure", path)
            return
        origin = path[0]
        has_rerr = dp.find(RouteError) is not None
        if kind == "data" and origin == self.me and sr.salvage == 0:
            # Our own data packet: route it again (cache or discovery); not a salvage.
            self._originate(srcroute.strip(pkt), dp.dst)
            return
        if origin != self.me:
            back = tuple(reversed(path[:j]))
            if has_rerr and report:
                # Section 8.3.4: a Route Error that meets a broken link: nested Route Error to its
                # source, carrying the Route Error (and what follows it).
                nested = self._nested_options(dp, sr.salvage)
                self._send_rerr(origin, back, sr.salvage, [pkt], nh, nested)
                self._drop(pkt, "link_failure", path)
                return
            if origin in groups:
                groups[origin][2].append(pkt)
            else:
                groups[origin] = (back, sr.salvage, [pkt])
        elif has_rerr or kind == "rrep":
            # Our own routing packet: another cached route if there is one, else it is lost.
            route = self.cache.find(dp.dst, self._now)
            if route is None:
                self._drop(pkt, "link_failure", path)
                return
            new_sr = srcroute.source_route_bytes(route[1:-1], len(route) - 2, sr.salvage)
            self._send(
                srcroute.replace_source_route(pkt, srcroute.find_source_route(pkt, dp.ihl), new_sr),
                route[1],
                kind,
            )
            return
        self._salvage(pkt, dp, sr, path, kind)

    def _salvage(self, pkt: bytes, dp: DsrPacket, sr: SourceRoute, path: Path, kind: str) -> None:
        """Section 8.3.6: "if the node has another route to the packet's IP Destination Address
        in its Route Cache, the node SHOULD 'salvage' the packet rather than discarding it"."""
        assert dp.dst is not None
        if not self.p.salvage:
            self._drop(pkt, "link_failure", path)
            return
        if sr.salvage >= self.p.max_salvage_count:
            self._drop(pkt, "salvage_limit", path)
            return
        route = self.cache.find(dp.dst, self._now, promote=self._promote_foreign)
        self._cache_used(dp.dst, route)
        if route is None and self.p.salvage_request and kind == "data":
            self._salvage_later(pkt, dp.dst, sr.salvage + 1)
            return
        if route is None:
            self._drop(pkt, "link_failure", path)
            return
        if not self.p.salvage_bad_replies and self._bad_reply(dp, path[next_pos(sr)]):
            self._drop(pkt, "link_failure", path)  # ns-2: DROP_RTR_MAC_CALLBACK
            return
        # Address[1] is the salvaging node itself; Segments Left = n, then one step forward.
        addrs = (self.me,) + route[1:-1]
        new_sr = srcroute.source_route_bytes(addrs, len(addrs) - 1, sr.salvage + 1)
        new = srcroute.replace_source_route(pkt, srcroute.find_source_route(pkt, dp.ihl), new_sr)
        self.ctx.counters.extra["salvaged"] += 1
        if self._wants(DsrPacketSalvaged):
            self._emit(
                DsrPacketSalvaged(
                    now_ns=self._now, packet=new, old_route=path, new_route=route, salvage=sr.salvage + 1
                )
            )
        self._route_sent(route, route[1], kind)
        self._send(new, route[1], kind, salvaged=sr.salvage + 1)

    def _salvage_later(self, pkt: bytes, dst: int, salvage: int) -> None:
        """ns-2.29 ``NEW_SALVAGE_LOGIC`` (``salvage_request``): no cached route, so the packet waits
        in the send buffer and one non-propagating Route Request asks the neighbours."""
        victim = self.send_buffer.add(srcroute.strip(pkt), dst, self._now, salvage=salvage)
        if victim is not None:
            self._drop(victim.packet, "send_buffer_full", None)
        self._arm_send_buffer()
        self.ctx.counters.extra["salvage_buffered"] += 1
        if self.requests.discovery(dst) is None:
            d = self.requests.start(dst, self._now)
            d.salvage_only = True
            self._send_rreq(d, nonprop=self.p.nonprop_request)
            d.cycle_started_ns = self._now

    def _bad_reply(self, dp: DsrPacket, nh: int) -> bool:
        """ns-2 ``dsragent_dont_salvage_bad_replies`` (undeliverablePkt): the packet is a Route
        Reply whose returned route holds the failed link, either way round
        (``dsragent_require_bi_routes``), and nothing else worth salvaging (no Route Error)."""
        rrep = dp.find(RouteReply)
        if not isinstance(rrep, RouteReply) or dp.find(RouteError) is not None or dp.dst is None:
            return False
        route = (dp.dst,) + rrep.addresses
        links = set(zip(route, route[1:], strict=False))
        return (self.me, nh) in links or (nh, self.me) in links

    def _nested_options(self, dp: DsrPacket, salvage: int) -> list[DsrOption]:
        """Section 8.3.4: the Route Error and Acknowledgement options of the triggering packet, in
        order, stopping at the first whose total salvage count would exceed MAX_SALVAGE_COUNT."""
        out: list[DsrOption] = []
        started = False
        for o in dp.options:
            if isinstance(o, RouteError):
                if o.salvage + salvage > self.p.max_salvage_count:
                    break
                started = True
            elif not started or isinstance(o, (SourceRoute, Pad1, PadN, AckRequest)):
                continue
            out.append(o)
        return out

    def _send_rerr(
        self,
        err_dst: int,
        back: Path,
        salvage: int,
        packets: list[bytes],
        nh: int,
        nested: list[DsrOption],
        *,
        optional: bool = False,
    ) -> None:
        """Section 8.3.4: originate a NODE_UNREACHABLE Route Error to ``err_dst`` along ``back``
        (the reverse of the route the packet travelled to this node); an ``optional`` one only
        if a subscriber of ``DsrRouteErrorSent`` appends an option to it."""
        rerr = RouteError(self.me, err_dst, unreachable=nh, salvage=salvage)
        extra: list[DsrOption] = []
        if self._wants(DsrRouteErrorSent):
            self._emit(
                DsrRouteErrorSent(
                    now_ns=self._now,
                    rerr=rerr,
                    dst=err_dst,
                    extra_options=extra,
                    packets=tuple(packets),
                    link=(self.me, nh),
                    optional=optional,
                )
            )
        if optional and not extra:
            return
        sr = SourceRoute(back[1:-1], len(back) - 2)
        self._send(build(self.me, err_dst, [sr, rerr, *nested, *extra], ttl=self.p.ttl), back[1], "rerr")
        self.ctx.counters.routing_sent["rerr"] += 1
        if nested:
            self.ctx.counters.extra["nested_rerr_sent"] += 1

    # ------------------------------------------------------------------ for extensions
    def _collect(self, fn: Any) -> list[Action]:
        """Run ``fn`` with a fresh output list (callable from hooks and from outside on_event)."""
        saved, self._out = self._out, []
        try:
            fn()
            return self._out
        finally:
            self._out = saved

    def send_options(
        self, dst: int, options: Sequence[DsrOption], *, route: Path | None = None, kind: str = "rerr"
    ) -> list[Action] | None:
        """Originate a routing packet (a Source Route, then ``options``) to ``dst`` over ``route``
        or a cached route; None when there is none: no Route Discovery for a notification (Yu
        2004 s4.1 "No route discovery is initiated at any intermediate node")."""
        r = route if route is not None else self.cache.find(dst, self._now)
        if r is None or len(r) < 2 or r[0] != self.me or r[-1] != dst:
            return None

        def go() -> None:
            sr = SourceRoute(r[1:-1], len(r) - 2)
            self._route_sent(r, r[1], kind)
            self._send(build(self.me, dst, [sr, *options], ttl=self.p.ttl), r[1], kind)
            self.ctx.counters.routing_sent[kind] += 1

        return self._collect(go)

    def send_inner_cached(self, inner: bytes, dst: int) -> list[Action] | None:
        """Send an IP packet whose IP source may be another node (a copy of a TCP ACK, BEAD) to
        ``dst`` over a cached route; None without one. When the IP source is not this node it
        leaves as this node's salvage (section 8.3.6: ``Address[1]`` = this node, Salvage 1),
        which is how ns-2 sends Yu's retransmitted ACK (``new_p.src <- net_id``)."""
        r = self.cache.find(dst, self._now)
        if r is None or len(r) < 2:
            return None

        def go() -> None:
            if ip_to_station(ipv4.src(inner)) == self.me:
                self._send_data(inner, r)
                return
            self._route_sent(r, r[1], "data")
            self._send(self._salvage_bytes(inner, r, 1), r[1], "data", salvaged=1)

        return self._collect(go)

    # ------------------------------------------------------------------ timers and queue
    def _timer(self, key: object) -> None:
        if isinstance(key, RreqTimer):
            self._rreq_timeout(key.target)
        elif isinstance(key, SendBufferTimer):
            for b in self.send_buffer.expire(self._now):
                self._expired(b)
            self._arm_send_buffer()
        elif isinstance(key, ReplyTimer):
            pending = self.pending_replies.pop((key.initiator, key.rreq_id), None)
            if pending is not None:
                self._send_rrep(pending[0])
        elif isinstance(key, AckTimer):
            self._ack_timeout(key.ack_id)

    def _expired(self, b: Buffered) -> None:
        self._drop(b.packet, "send_buffer_timeout", None)

    def _ifq_drop(self, frame: Frame) -> None:
        if frame.meta.get("dsr") == "data":
            route: Path | None = None
            try:
                dp = parse(frame.packet)
                sr = dp.find(SourceRoute)
                if isinstance(sr, SourceRoute):
                    route = full_route(dp, sr)
            except MalformedDsr:
                pass
            if self._wants(PacketDropped):
                self._emit(
                    PacketDropped(now_ns=self._now, packet=frame.packet, reason="ifq_full", route=route)
                )

    def ip_packet(self, packet: bytes) -> bytes:
        """Section 8.1.4: the datagram without the DSR Options header (b"" for a DSR packet that
        carries none: Next Header 59, a routing packet of its own)."""
        if len(packet) < 24 or packet[9] != ipv4.IPPROTO_DSR:
            return packet
        ihl = (packet[0] & 0x0F) * 4
        if len(packet) < ihl + 4 or packet[ihl] == NO_NEXT_HEADER:
            return b""
        return srcroute.strip(packet)

    def state(self) -> dict[str, Any]:
        return {
            "cache": self.cache.state(),
            "send_buffer": len(self.send_buffer),
            "discoveries": sorted(self.requests.discoveries),
        }
