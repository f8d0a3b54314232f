"""DSR parameters: RFC 4728 section 9 constants, plus the ns-2 (Monarch DSR) cache sizes the
papers ran with, each one named field (STYLE.md "Parameters and time").

Times are written in seconds (scenario files stay readable); the core reads the ``*_ns``
properties, which are derived, never second literals.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.clock import seconds
from nodes.protocols.profiles import ProfileTable, RoutingProfile, check_table


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
    """MaxSendBufferLength (RFC 4728 does not fix it; ns-2 uses 64): the oldest packet goes."""
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

    def __post_init__(self) -> None:
        if self.cache not in ("path", "link"):
            raise ValueError(f"cache must be 'path' or 'link', got {self.cache!r}")
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


PROFILES: ProfileTable = {
    # The testbed's behaviour before profiles: the dataclass defaults.
    RoutingProfile.LEGACY: {},
    # RFC 4728 where the defaults follow ns-2.
    RoutingProfile.RFC: {},
    # ns-2's dsragent.cc/mobicache.cc as the papers ran them (docs/dsr.md "Profiles").
    RoutingProfile.NS2: {},
}
"""Each routing profile's values (``nodes.protocols.profiles``): the fields that differ from the
dataclass defaults, which are the ``legacy`` behaviour."""
check_table(DsrParams, PROFILES)
PARAMS_CLASS = DsrParams
