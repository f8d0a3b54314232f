"""DSR parameters: RFC 4728 section 9 constants, plus the ns-2 (Monarch DSR) cache sizes the
papers ran with, each one named field (STYLE.md "Parameters and time").

Times are written in seconds (scenario files stay readable); the core reads the ``*_ns``
properties, which are derived, never second literals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from nodes.core.clock import seconds
from nodes.protocols.profiles import ProfileTable, RoutingProfile, check_table

CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "cache": ("path", "link"),
    "request_backoff": ("doubling", "ns2_cycles"),
    "link_failure_rerrs": ("per_source", "failed_packet"),
    "cache_lookup": ("primary_first", "shortest"),
    "promote_secondary": ("every_lookup", "own_packets"),
}
"""The values each string-valued behaviour field accepts (checked in ``__post_init__``)."""

NS2_BACKOFF_BASE: Final = 4
"""dsragent.cc ``BackOffTest``: the wait grows by ``1 << 2`` = 4 per Route Request cycle."""


@dataclass(frozen=True, slots=True)
class DsrParams:
    # ---- RFC 4728 section 9 -------------------------------------------------------------
    broadcast_jitter_s: float = 0.010
    """BroadcastJitter: a rebroadcast Route Request waits uniform [0, this) (ctx.rng)."""
    route_cache_timeout_s: float = 300.0
    """RouteCacheTimeout (MaxCacheLifetime): a cache entry not used or re-learned for this long
    expires (purged lazily). ns-2's path cache has no timeout; 300 s is rarely reached there."""
    send_buffer_timeout_s: float = 30.0
    """SendBufferTimeout: a packet waiting for a route is dropped after this long."""
    max_send_buffer_length: int = 50
    """MaxSendBufferLength (RFC 4728 section 9 gives no value): the oldest packet goes when
    full. ns-2: ``SEND_BUF_SIZE`` 64 in dsragent.h, ``stickPacketInSendBuffer`` drops the oldest
    (ns-2.1b8a and ns-2.29 alike; the ``ns2`` profile's value)."""
    request_table_size: int = 64
    """RequestTableSize: initiators remembered for duplicate Route Request detection."""
    request_table_ids: int = 16
    """RequestTableIds: Route Request ids remembered per initiator."""
    max_request_rexmt: int = 16
    """MaxRequestRexmt: propagating Route Requests per discovery before the buffered packets
    for that target are dropped."""
    max_request_period_s: float = 10.0
    """MaxRequestPeriod: the cap of the exponential backoff between Route Requests."""
    request_period_s: float = 0.5
    """RequestPeriod: the wait after the first propagating Route Request (then doubled)."""
    nonprop_request_timeout_s: float = 0.030
    """NonpropRequestTimeout: the wait after a non-propagating (hop limit 1) Route Request."""
    rexmt_buffer_size: int = 50
    """RexmtBufferSize: packets awaiting a network-layer acknowledgement (maintenance buffer)."""
    max_maint_rexmt: int = 2
    """MaxMaintRexmt: retransmissions of an unacknowledged packet (network-layer ACKs only; with
    link-layer feedback the MAC's retry limit plays this role)."""
    try_passive_acks: int = 1
    """TryPassiveAcks: kept for completeness; passive ACKs are not used (link-layer feedback)."""
    passive_ack_timeout_s: float = 0.100
    """PassiveAckTimeout; also the network-layer ACK timeout when ``network_acks`` is on."""
    grat_reply_holdoff_s: float = 1.0
    """GratReplyHoldoff: one gratuitous Route Reply per (source, transmitter) per this time."""
    max_salvage_count: int = 15
    """MAX_SALVAGE_COUNT: a packet salvaged this many times is not salvaged again."""
    discovery_hop_limit: int = 255
    """DiscoveryHopLimit: IP TTL of a propagating Route Request."""

    # ---- route cache (section 4.1; ns-2 mobicache) ----------------------------------------
    cache: str = "path"
    """``path``: ns-2's path cache (primary + secondary, FIFO); ``link``: a link cache."""
    primary_cache_size: int = 30
    """ns-2 mobicache primary cache: routes this node discovered (Route Replies)."""
    secondary_cache_size: int = 64
    """ns-2 mobicache secondary cache: routes snooped from forwarded or overheard packets."""
    link_cache_size: int = 512
    """Links held by the link cache (FIFO eviction beyond that)."""

    # ---- options (ns-2 dsragent switches) -------------------------------------------------
    nonprop_request: bool = True
    """Start each discovery with a non-propagating Route Request (ns-2 ring zero search)."""
    reply_from_cache: bool = True
    """Intermediate nodes answer Route Requests from their caches (section 8.2.3)."""
    reply_storm_hop_delay_s: float = 0.001
    """Section 8.2.5 H: a cached reply waits H * (h - 1 + r), r uniform [0, 1), h = its hops."""
    salvage: bool = True
    """Salvage packets over another cached route after a link failure (section 8.3.6)."""
    grat_route_errors: bool = True
    """Piggyback the last Route Error received on the next Route Request (section 4.3)."""
    grat_replies: bool = True
    """Automatic route shortening with gratuitous Route Replies in promiscuous mode (3.4.3)."""
    bidirectional_links: bool = True
    """802.11 unicast needs both directions, so a heard link is cached both ways."""
    network_acks: bool = False
    """Request a network-layer ACK from each next hop (section 8.3.3) instead of relying on the
    MAC's TX status; for links without feedback."""
    ttl: int = 64
    """IP TTL of the routing packets this node originates (Route Reply, Route Error, ACK)."""

    # ---- behaviours where ns-2 and RFC 4728 differ (issue 46; docs/dsr.md "Profiles") ------
    grat_rerr_until_propagating: bool = False
    """Keep the held (gratuitous) Route Error until a *propagating* Route Request carries it.
    False (legacy): the next Route Request carries it, usually the non-propagating one (hop limit
    1), and it is cleared there, so the flood 30 ms later purges nothing beyond one hop. True
    (ns-2): dsragent.cc ``DSRAgent::sendOutRtReq``, ns-2.1b8a and ns-2.29 alike: the error rides
    on every request while held and ``route_error_held`` is cleared only ``if (max_prop > 0)``.
    RFC 4728 section 8.2.1 / 8.3.5 name no request type (the ``rfc`` profile keeps the legacy
    rule)."""
    grat_rerr_max_hold_s: float | None = None
    """The age limit of a held Route Error: one older than this is no longer sent on a Route
    Request. None (legacy): no limit. 1.0 (ns-2): ``max_err_hold`` in dsragent.cc
    (``DSRAgent::sendOutRtReq``: ``now - route_error_data_time < max_err_hold``), ns-2.1b8a and
    ns-2.29 alike. RFC 4728 sets no such limit."""
    request_backoff: str = "doubling"
    """How Route Requests are retried while a discovery lasts.

    ``doubling`` (legacy, RFC 4728 section 8.2.1): one non-propagating request, then propagating
    requests, ``request_period`` after the first and the wait doubled after each, up to
    ``max_request_period``.

    ``ns2_cycles`` (dsragent.cc ``BackOffTest`` and ``DSRAgent::getRouteForPacket``, ns-2.1b8a
    and ns-2.29 alike): every cycle is a non-propagating request and, ``nonprop_request_timeout``
    later without a reply, one propagating request; cycle k + 1 starts
    ``min(request_period * 4**k, max_request_period)`` after cycle k began
    (``next = (1 << (rt_reqs_outstanding * 2)) * rt_rq_period``), so cycles start 0, 2, 10,
    20, ... s after the first (the first cycle is the one the entry's initial
    ``last_rt_req = -(rt_rq_period + 1)`` lets through at once). ns-2 runs both decisions on the
    send buffer check (``BUFFER_CHECK`` 30 ms + U(0, 30 ms)); here they run on timers at the
    exact times, 0-60 ms earlier than ns-2's tick would. ns-2 has no request limit (the 30 s
    send buffer timeout ends a discovery); ``max_request_rexmt`` counts cycles here."""
    link_failure_rerrs: str = "per_source"
    """Which Route Errors a link failure sends. ``per_source`` (legacy): one to the source of
    each of the failed packet and every interface-queue packet for that next hop (so ELFN
    freezes each). ``failed_packet`` (ns-2: dsragent.cc ``DSRAgent::xmitFailed``, ns-2.1b8a and
    ns-2.29 alike): one, to ``srh->addrs[0]`` of the packet whose transmission failed; the
    queued packets go through ``undeliverablePkt`` (own ones routed again, others salvaged or
    dropped) without a Route Error; Yu 2004 section 3.3 describes the same. RFC 4728 section
    8.3.4 asks for a Route Error for the packet whose delivery could not be confirmed, so the
    ``rfc`` profile uses ``failed_packet`` too."""
    cache_lookup: str = "primary_first"
    """Path cache lookup. ``primary_first`` (legacy): the shortest route of the primary cache,
    the secondary cache only without one. ``shortest`` (ns-2: mobicache.cc
    ``MobiCache::findRoute``, ns-2.1b8a and ns-2.29 alike): the shortest over both caches, the
    primary winning a tie (it is searched first and only a strictly shorter route replaces it).
    RFC 4728 section 4.1 knows one cache, whose shortest route is what ``shortest`` returns."""
    reply_record_primary: bool = False
    """Where a node that returns a Route Reply caches the reversed route record (the path back
    to the initiator). False (legacy): the secondary cache, like every snooped route. True
    (ns-2: dsragent.cc ``DSRAgent::returnSrcRouteToRequestor``, the target, and
    ``DSRAgent::replyFromRouteCache``, an intermediate node answering from its cache, call
    ``route_cache->addRoute``, which ``MobiCache::addRoute`` puts in the primary cache;
    ns-2.1b8a and ns-2.29 alike). RFC 4728 section 8.2.4 only says the target MAY cache it (one
    cache: the ``rfc`` profile follows ns-2)."""
    salvage_request: bool = False
    """A salvaging node without a cached route keeps the packet and asks its neighbours. False
    (legacy, ns-2.1b8a): it drops the packet (dsragent.cc ``DSRAgent::undeliverablePkt``: "it's
    not worth us doing a route request"). True (ns-2.29 and 2.35, ``#define NEW_SALVAGE_LOGIC``:
    ``undeliverablePkt`` puts the packet in the send buffer, ``getRouteForPacket`` sends
    non-propagating requests only for it, ``dsr_salvage_allow_propagating = 0``, and drops it at
    the next backoff cycle, ``rt_reqs_outstanding > dsr_salvage_max_requests`` = 1): the data
    packet waits in the send buffer, one non-propagating Route Request goes out, and the packet is
    dropped (``no_route``) when the next cycle would start (``ns2_cycle_gap_ns(1)`` = 2 s under
    ``ns2_cycles``, ``request_period`` otherwise) unless a reply came. Only data packets (ns-2
    buffers routing packets too). A packet of this node's own for the same target turns the
    discovery into a normal one. RFC 4728 section 8.3.6 salvages only over a cached route (the
    ``rfc`` profile keeps False). The ``ns2`` profile follows 2.1b8a (False); the ns-2.29 paper
    scenario (topologies/ghanem2008.yaml) sets it."""
    target_reply_jitter_s: float = 0.0
    """The target's Route Reply waits uniform [0, this) (ctx.rng) before it is sent. 0 (legacy):
    at once. 0.010 (ns-2: ``RREQ_JITTER`` in dsragent.cc ``DSRAgent::returnSrcRouteToRequestor``,
    "we now want to jitter when we first originate route replies, since they are a transmission
    we make in response to a broadcast packet"; ns-2.1b8a and ns-2.29 alike). RFC 4728 section
    8.2.4 asks for no delay at the target (the ``rfc`` profile: 0)."""
    send_buffer_spacing_s: float = 0.0
    """The packets a Route Reply releases from the send buffer leave this far apart (the k-th of
    one release after k times this). 0 (legacy, RFC 4728 section 8.2.1 names no spacing): in one
    burst. 0.030 (ns-2: dsragent.cc ``DSRAgent::acceptRouteReply``, ``delay += arp_timeout`` per
    packet, "to give ARP time to complete"; ns-2.1b8a and ns-2.29 alike)."""
    promote_secondary: str = "every_lookup"
    """When a route found in the secondary cache moves to the primary one. ``every_lookup``
    (legacy): at every lookup. ``own_packets`` (ns-2: ``MobiCache::findRoute(dest, route,
    for_me)`` promotes only ``if (min_cache == 1 && for_me)``; dsragent.cc passes ``for_me`` 1
    for this node's own packets, ``handlePktWithoutSR`` and ``acceptRouteReply``, and 0 for a
    cached reply, ``replyFromRouteCache``, and a salvage, ``undeliverablePkt``; ns-2.1b8a and
    ns-2.29 alike): a cached reply or a salvage leaves the route where it is. RFC 4728 has one
    cache (the ``rfc`` profile keeps the legacy rule)."""
    shorten_control_routes: bool = True
    """Automatic route shortening (gratuitous Route Replies, ``grat_replies``) also for overheard
    routing packets. True (legacy; RFC 4728 section 8.1.5 / 3.4.3 name no packet type). False
    (ns-2: dsragent.cc ``DSRAgent::tap``, ``if (PT_DSR == cmh->ptype()) return; //  no route
    shortening on any`` DSR packet, after a simulator crash from shortening a salvaged reply's
    route; ns-2.1b8a and ns-2.29 alike): only data packets."""
    salvage_bad_replies: bool = True
    """Salvage a transit Route Reply whose returned route holds the link that just failed.
    True (legacy). False (ns-2: ``dsragent_dont_salvage_bad_replies = true`` in dsragent.cc
    ``DSRAgent::undeliverablePkt``, ns-2.1b8a and ns-2.29 alike): such a reply is dropped (the
    reverse direction counts too, ``dsragent_require_bi_routes``). RFC 4728 section 8.3.6
    salvages any packet (the ``rfc`` profile keeps salvaging)."""

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        if self.grat_rerr_max_hold_s is not None and self.grat_rerr_max_hold_s < 0:
            raise ValueError("grat_rerr_max_hold_s must be >= 0 or None")
        if not 0 <= self.max_salvage_count <= 15:
            raise ValueError("max_salvage_count must fit the 4-bit Salvage field (0..15)")
        if not 1 <= self.discovery_hop_limit <= 255:
            raise ValueError("discovery_hop_limit must be 1..255")
        for name in (
            "max_send_buffer_length",
            "request_table_size",
            "request_table_ids",
            "primary_cache_size",
            "secondary_cache_size",
            "link_cache_size",
            "rexmt_buffer_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in (
            "broadcast_jitter_s",
            "route_cache_timeout_s",
            "send_buffer_timeout_s",
            "max_request_period_s",
            "request_period_s",
            "nonprop_request_timeout_s",
            "passive_ack_timeout_s",
            "grat_reply_holdoff_s",
            "reply_storm_hop_delay_s",
            "target_reply_jitter_s",
            "send_buffer_spacing_s",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")

    # derived values in integer nanoseconds
    @property
    def broadcast_jitter_ns(self) -> int:
        return seconds(self.broadcast_jitter_s)

    @property
    def route_cache_timeout_ns(self) -> int:
        return seconds(self.route_cache_timeout_s)

    @property
    def send_buffer_timeout_ns(self) -> int:
        return seconds(self.send_buffer_timeout_s)

    @property
    def max_request_period_ns(self) -> int:
        return seconds(self.max_request_period_s)

    @property
    def request_period_ns(self) -> int:
        return seconds(self.request_period_s)

    @property
    def nonprop_request_timeout_ns(self) -> int:
        return seconds(self.nonprop_request_timeout_s)

    @property
    def passive_ack_timeout_ns(self) -> int:
        return seconds(self.passive_ack_timeout_s)

    @property
    def grat_reply_holdoff_ns(self) -> int:
        return seconds(self.grat_reply_holdoff_s)

    @property
    def reply_storm_hop_delay_ns(self) -> int:
        return seconds(self.reply_storm_hop_delay_s)

    @property
    def target_reply_jitter_ns(self) -> int:
        return seconds(self.target_reply_jitter_s)

    @property
    def send_buffer_spacing_ns(self) -> int:
        return seconds(self.send_buffer_spacing_s)

    @property
    def grat_rerr_max_hold_ns(self) -> int | None:
        return None if self.grat_rerr_max_hold_s is None else seconds(self.grat_rerr_max_hold_s)

    def ns2_cycle_gap_ns(self, cycles: int) -> int:
        """``BackOffTest``: the time from the start of cycle ``cycles`` (1-based) to the next."""
        gap: int = self.request_period_ns * NS2_BACKOFF_BASE**cycles
        return min(gap, self.max_request_period_ns)


PROFILES: ProfileTable = {
    # The testbed's behaviour before profiles: the dataclass defaults.
    RoutingProfile.LEGACY: {},
    # RFC 4728 where the defaults follow ns-2.
    RoutingProfile.RFC: {
        "link_failure_rerrs": "failed_packet",
        "cache_lookup": "shortest",
        "reply_record_primary": True,
    },
    # ns-2's dsragent.cc/mobicache.cc as the papers ran them (docs/dsr.md "Profiles"): ns-2.1b8a
    # (Yu 2004); where ns-2.29 (Ghanem 2008) differs the scenario sets the field.
    RoutingProfile.NS2: {
        "max_send_buffer_length": 64,
        "grat_rerr_until_propagating": True,
        "grat_rerr_max_hold_s": 1.0,
        "request_backoff": "ns2_cycles",
        "link_failure_rerrs": "failed_packet",
        "cache_lookup": "shortest",
        "reply_record_primary": True,
        "salvage_bad_replies": False,
        "target_reply_jitter_s": 0.010,
        "promote_secondary": "own_packets",
        "shorten_control_routes": False,
        # replyFromRouteCache sends at once: the holdoff is compiled out (#if 0, "route reply
        # holdoffs, which are currently disabled -dam 5/98"), ns-2.1b8a and ns-2.29 alike
        "reply_storm_hop_delay_s": 0.0,
        "send_buffer_spacing_s": 0.030,
    },
}
"""Each routing profile's values (``nodes.protocols.profiles``): the fields that differ from the
dataclass defaults, which are the ``legacy`` behaviour."""
check_table(DsrParams, PROFILES)
PARAMS_CLASS = DsrParams
