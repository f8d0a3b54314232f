"""AODV configuration parameters (RFC 3561 section 10), one frozen dataclass.

Every RFC constant is one named field with the RFC default; every derived value is a property
computed from the fields, never a second literal (STYLE.md "Parameters and time"). Times are
written in seconds in the scenario (``{"active_route_timeout": 3.0}``) and read by the core as
integer nanoseconds through the ``*_ns`` properties. Build from a scenario dict with
``nodes.core.params_from_dict(AodvParams, d)`` so that unknown names are errors.

Options that are not RFC constants (HELLO on/off, local repair on/off, gratuitous RREP, the send
buffer, broadcast jitter) are fields too, documented where they differ from the RFC's wording.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.clock import seconds
from nodes.protocols.profiles import ProfileTable, RoutingProfile, check_table

LOCAL_REPAIR_RULES = ("ns2", "rfc")
"""Values of ``AodvParams.local_repair_rule``."""
LOCAL_REPAIR_FAILURES = ("rerr", "rediscover")
"""Values of ``AodvParams.local_repair_failure``."""
RREQ_SCHEDULES = ("rfc", "ns2")
"""Values of ``AodvParams.rreq_schedule``."""


@dataclass(frozen=True, slots=True)
class AodvParams:
    # ---------------------------------------------------------------- RFC 3561 section 10
    active_route_timeout: float = 3.0
    """ACTIVE_ROUTE_TIMEOUT, s: lifetime of a route refreshed by use."""
    allowed_hello_loss: int = 2
    """ALLOWED_HELLO_LOSS: HELLO intervals without traffic before a neighbour is lost."""
    hello_interval: float = 1.0
    """HELLO_INTERVAL, s."""
    local_add_ttl: int = 2
    """LOCAL_ADD_TTL: added to the TTL of a local-repair RREQ (section 6.12)."""
    net_diameter: int = 35
    """NET_DIAMETER: the maximum possible number of hops between two nodes."""
    node_traversal_time: float = 0.040
    """NODE_TRAVERSAL_TIME, s: conservative one-hop traversal time incl. queueing and MAC."""
    rerr_ratelimit: int = 10
    """RERR_RATELIMIT: RERR messages a node may originate per second."""
    rreq_retries: int = 2
    """RREQ_RETRIES: retries of a discovery at TTL = NET_DIAMETER (after the first such RREQ)."""
    rreq_ratelimit: int = 10
    """RREQ_RATELIMIT: RREQ messages a node may originate per second."""
    timeout_buffer: int = 2
    """TIMEOUT_BUFFER: slack in RING_TRAVERSAL_TIME against congestion delays."""
    ttl_start: int = 1
    """TTL_START: IP TTL of the first RREQ of an expanding ring search."""
    ttl_increment: int = 2
    """TTL_INCREMENT: TTL added per expanding-ring step."""
    ttl_threshold: int = 7
    """TTL_THRESHOLD: beyond this TTL the ring search jumps to NET_DIAMETER."""
    delete_period_k: int = 5
    """K in DELETE_PERIOD = K * max(ACTIVE_ROUTE_TIMEOUT, HELLO_INTERVAL) (section 10: K = 5)."""

    # ---------------------------------------------------------------- options
    enable_hello: bool = False
    """Broadcast HELLO messages (section 6.9). Off: link breaks come from the MAC's TX status."""
    local_repair: bool = True
    """Repair a broken link locally (section 6.12) instead of sending a RERR at once. On by
    default as in ns-2, the simulator of the papers (aodv.h defines AODV_LOCAL_REPAIR; Klemm 2004,
    Cohen and Ghanem 2008 ran ns-2's AODV as built); docs/aodv.md "Defaults"."""
    local_repair_rule: str = "ns2"
    """Which breaks are repaired locally. "ns2": transit data that has come farther than it still
    has to go (aodv.cc rt_ll_failed: ``num_forwards > rt_hops``; here the hop count of the route
    back to the packet's source > the hop count of the route to its destination), the destination
    also within MAX_REPAIR_TTL. "rfc": every transit packet whose destination is within
    MAX_REPAIR_TTL hops (section 6.12's only condition)."""
    control_failure_breaks_link: bool = False
    """Whether a failed unicast AODV message (RREP, RERR, RREP-ACK) is a link break. Off: it is
    dropped and the link kept, as ns-2 (rt_ll_failed drops non-data packets without declaring
    the link down) and section 6.11 ("a link break ... while transmitting data") do."""
    adaptive_traversal_time: bool = True
    """Wait for a RREP with the measured per-hop discovery latency instead of
    NODE_TRAVERSAL_TIME: RING_TRAVERSAL_TIME and NET_TRAVERSAL_TIME use the mean of the last
    ``traversal_history`` (discovery latency / hop count) samples for that destination, as ns-2's
    PerHopTime (aodv.cc sendRequest: ``rt_req_timeout = 2 * ttl * PerHopTime(rt)``). A lost RREQ
    on a 4-hop chain is then retried after ~0.1 s instead of 0.64 s, then 2.8 s (docs/aodv.md)."""
    traversal_history: int = 3
    """Discovery latency samples kept per destination (ns-2 MAX_HISTORY = 3)."""
    gratuitous_rrep: bool = False
    """Set the 'G' flag in RREQs we originate (section 6.6.3)."""
    destination_only: bool = False
    """Set the 'D' flag in RREQs we originate: only the destination may answer."""
    rrep_ack: bool = False
    """Set the 'A' flag in RREPs we send and blacklist a neighbour that does not answer with a
    RREP-ACK within NEXT_HOP_WAIT (section 6.8)."""
    send_buffer_len: int = 64
    """Packets buffered while awaiting a route (ns-3 RequestQueue MaxQueueLen 64)."""
    send_buffer_timeout: float = 30.0
    """s a packet may wait for a route (ns-3 RequestQueue MaxQueueTime 30 s)."""
    max_broadcast_jitter: float = 0.010
    """s: broadcasts are delayed uniformly in [0, this) with the node's RNG (ns-3: 10 ms)."""
    control_ttl: int = 255
    """IP TTL of unicast RREPs (they are re-originated hop by hop, so it only needs to be >= 1)."""

    # ---------------------------------------------------------------- ns-2 behaviours (issue 46)
    local_repair_failure: str = "rerr"
    """What a local repair that got no RREP within its wait does. "rerr": RFC 3561 section 6.12
    ("If, at the end of the discovery period, the repairing node has not received a RREP ...
    it proceeds in accordance with Section 6.11 by transmitting a RERR message for that
    destination"): the route is invalidated, a RERR goes to its precursors and the buffered
    packets are dropped. "rediscover": ns-2.26 to 2.35 (aodv.cc LocalRepairTimer::handle only
    calls rt_down, "send RERR" is a comment; AODV::rt_purge re-runs sendRequest every 0.5 s for a
    route that is not up while packets wait in rqueue): the route is invalidated without a RERR,
    the buffered packets stay, and the repairing node keeps rediscovering on the
    ``rreq_schedule`` (with ns-2's hold-down) until it finds a route or drops them. ns-2.1b8a has
    no local repair at all (aodv.h: ``//#define AODV_LOCAL_REPAIR``; ``local_repair`` False)."""
    local_repair_wait_from_start: bool = False
    """ns-2.26 to 2.35 aodv.cc AODV::local_rt_repair schedules the LocalRepairTimer with
    ``rt->rt_req_timeout``, an absolute time (CURRENT_TIME + the wait), as its delay: the repair
    ends at now + (now - start) + wait, and the route stays in repair (packets buffered, no RERR)
    until then. True: that time ("start" is the node's start); False: now + the wait (RFC 3561
    section 6.12's discovery period)."""
    rreq_schedule: str = "rfc"
    """When a discovery's RREQs go out. "rfc": RFC 3561 sections 6.3 and 6.4, each RREQ on its
    own timer: the ring waits RING_TRAVERSAL_TIME, the k-th RREQ at NET_DIAMETER waits
    2**k * NET_TRAVERSAL_TIME (binary exponential backoff), the buffer is dropped after
    RREQ_RETRIES retries at NET_DIAMETER. "ns2": aodv.cc AODV::sendRequest (the same in
    ns-2.1b8a and 2.26 to 2.35): a RREQ of TTL t waits 2 * t * PerHopTime, times the count of
    network-wide floods so far (linear growth), capped at MAX_RREQ_TIMEOUT; the next RREQ goes
    on the first route-purge tick (``route_purge_interval``, AODV::rt_purge) or originated packet
    (AODV::rt_resolve) after the wait; the ring ends when the last TTL is not below
    TTL_THRESHOLD (then NETWORK_DIAMETER); when the flood count exceeds RREQ_RETRIES the
    destination is held down for MAX_RREQ_TIMEOUT and the waiting packets are dropped (2.26 to
    2.35; 2.1b8a keeps them)."""
    max_rreq_timeout: float = 10.0
    """MAX_RREQ_TIMEOUT, s (ns-2 aodv.h, every release): the cap on a RREQ wait and the hold-down
    after the last retry (``rreq_schedule`` "ns2" only; RFC 3561 has no such constant)."""
    hold_down_drops_buffer: bool = True
    """``rreq_schedule`` "ns2": whether the hold-down after the last retry drops the packets
    waiting for the destination (ns-2.26 to 2.35 aodv.cc AODV::sendRequest:
    ``while ((buf_pkt = rqueue.deque(rt->rt_dst))) drop(buf_pkt, DROP_RTR_NO_ROUTE)``). False:
    ns-2.1b8a's sendRequest only sets the hold-down; the packets wait out their rqueue timeout
    (30 s) and the next purge tick after the hold-down asks again."""
    route_purge_interval: float = 0.5
    """s between ns-2's route-cache purges (aodv.cc RouteCacheTimer::handle, ``FREQUENCY 0.5``),
    which also send the retries of ``rreq_schedule`` "ns2"; the ticks start at the node's start."""
    ring_search_unknown_hop_count: bool = True
    """Whether the first RREQ for a destination without a known hop count uses TTL_START (RFC 3561
    section 6.4; ns-2.1b8a, whose AODV::sendRequest starts from ``rt_req_last_ttl`` alone: 0, so
    TTL_START). False: ns-2.26 to 2.35 aodv.cc AODV::sendRequest starts from
    ``max(rt_req_last_ttl, rt_last_hop_count)`` and the entry of a route never brought down has
    rt_last_hop_count INFINITY2 (aodv_rtable.cc), so a first discovery and a local repair go to
    NETWORK_DIAMETER at once, as the first network-wide flood (``rreq_schedule`` "ns2" only)."""
    jitter_originated: bool = True
    """Whether the RREQs, RERRs and HELLOs this node originates are jittered like the ones it
    forwards (``max_broadcast_jitter``; RFC 3561 has no jitter rule, ns-3 jitters every
    broadcast). False: ns-2 aodv.cc (every release) sends them at once (AODV::sendRequest and
    AODV::sendHello ``schedule(target_, p, 0.)``; link-failure and no-route RERRs
    ``sendError(rerr, false)``) and jitters only forwarded broadcasts by 10 ms (AODV::forward,
    AODV::recvError's ``sendError(rerr)``)."""
    local_repair_bumps_seq_no: bool = True
    """Whether a local repair increments the destination sequence number before its RREQ (RFC
    3561 section 6.12: "the node increments the sequence number for the destination and then
    broadcasts a RREQ"). False: ns-2.26 to 2.35 aodv.cc AODV::local_rt_repair only marks the
    route RTF_IN_REPAIR and calls sendRequest, whose RREQ carries ``rt->rt_seqno`` unchanged."""
    rerr_seq_check: bool = False
    """Whether a received RERR (RFC 3561 section 6.11 case (iii)) invalidates a route only when
    its sequence number for the destination is not older than ours. False: section 6.11, the
    number is "copied from the incoming RERR" whatever it is (a case-(ii) RERR without an entry
    carries 0). True: ns-2 aodv.cc AODV::recvError (every release from 2.26 to 2.35):
    ``rt->rt_seqno <= re->unreachable_dst_seqno[i]``, else the entry is skipped and the route
    stays up."""
    rerr_flushes_ifq: bool = False
    """Whether a received RERR that invalidates a route also drops every frame queued for the
    RERR's sender. True: ns-2 aodv.cc AODV::recvError (2.26 to 2.35; "Not sure whether this is the
    right thing to do": ``while((pkt = ifqueue->filter(ih->saddr()))) drop(pkt,
    DROP_RTR_MAC_CALLBACK)``). False: RFC 3561 section 6.11 (no such step)."""
    link_break_prunes_precursors: bool = False
    """Whether a link break removes the broken neighbour from every precursor list. True: ns-2
    aodv.cc AODV::handle_link_failure (2.26 to 2.35): ``rt->pc_delete(id)`` for every entry.
    False: RFC 3561 section 6.11 clears only the precursor lists of the routes it reports."""
    repair_only_failed_packet: bool = False
    """What else a break that is repaired locally does. False (RFC 3561 sections 6.11, 6.12): the
    other routes through the broken neighbour are invalidated and reported in a RERR, the frames
    queued for it are taken out of the interface queue (the repaired destination's buffered).
    True: ns-2.26 to 2.35 aodv.cc AODV::rt_ll_failed's local-repair branch only buffers the
    failed packet and calls local_rt_repair (the "retrieve all the packets in the ifq" step is a
    comment): the neighbour is not deleted, the other routes through it stay up, no RERR, the
    queued frames still go to it and each that fails again is buffered for its repair."""
    reverse_route_fresher_only: bool = False
    """Whether a RREQ replaces the next hop and hop count of an existing usable reverse route only
    with a fresher originator sequence number or the same one and fewer hops (RFC 3561 section
    6.2's update rule, as ns-3 and AODV-UU read section 6.5; ns-2 aodv.cc AODV::recvRequest,
    2.26 to 2.35: ``(rq->rq_src_seqno > rt0->rt_seqno) || ((rq->rq_src_seqno == rt0->rt_seqno) &&
    (rq->rq_hop_count < rt0->rt_hops))``; otherwise only the lifetime is extended). False: every
    new RREQ rewrites them (the testbed before issue 46)."""
    source_rebuffers_on_break: bool = True
    """Whether the source keeps its own packets of a broken link (the failed one and those queued
    to the neighbour) and rediscovers at once. True: ns-2.1b8a aodv.cc AODV::rt_ll_failed ("If I
    am the source, queue the packet") and AODV::rt_down (the source's queued packets re-buffered
    and sendRequest); RFC 3561 section 6.3 buffers packets awaiting a route. False: ns-2.26 to
    2.35 AODV::rt_ll_failed drops them (``drop(p, DROP_RTR_MAC_CALLBACK)``, the same for every
    interface-queue packet to that neighbour); only the next packet the source sends
    (AODV::rt_resolve) starts a discovery."""
    my_route_timeout: float | None = None
    """MY_ROUTE_TIMEOUT, s: the Lifetime a destination puts in its RREP. None: derived from the
    other constants (``my_route_timeout_ns``, RFC 3561 section 10). ns-2 aodv.h
    ``MY_ROUTE_TIMEOUT``, sent by aodv.cc AODV::recvRequest's sendReply: 10 s (2.26 to 2.35),
    60 s (2.1b8a)."""
    reverse_route_life: float | None = None
    """s a RREQ keeps the reverse route alive at least. None: RFC 3561 section 6.5's
    MinimalLifetime (2 * NET_TRAVERSAL_TIME - 2 * HopCount * NODE_TRAVERSAL_TIME). ns-2 aodv.h
    ``REV_ROUTE_LIFE`` in aodv.cc AODV::recvRequest (``max(rt0->rt_expire, CURRENT_TIME +
    REV_ROUTE_LIFE)``): 6 s (2.26 to 2.35), 10 s (2.1b8a)."""
    no_route_bumps_seq_no: bool = True
    """Whether a data packet without a route (RFC 3561 section 6.11 case (ii)) increments the
    stored destination sequence number (section 6.11: "incremented for cases (i) and (ii)"),
    also when the RERR is rate-limited away. False: ns-2 aodv.cc AODV::rt_resolve (every release)
    sends ``rt->rt_seqno`` unchanged and never increments it."""

    def __post_init__(self) -> None:
        for name in ("active_route_timeout", "hello_interval", "node_traversal_time", "send_buffer_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.max_broadcast_jitter < 0:
            raise ValueError("max_broadcast_jitter must be >= 0")
        for name in (
            "allowed_hello_loss",
            "net_diameter",
            "rerr_ratelimit",
            "rreq_ratelimit",
            "ttl_start",
            "ttl_increment",
            "send_buffer_len",
            "delete_period_k",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("rreq_retries", "timeout_buffer", "local_add_ttl"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 1 <= self.net_diameter <= 255:
            raise ValueError("net_diameter must be in 1..255 (it is an IP TTL)")
        if not self.ttl_start <= self.ttl_threshold <= self.net_diameter:
            raise ValueError("need ttl_start <= ttl_threshold <= net_diameter")
        if self.local_repair_rule not in LOCAL_REPAIR_RULES:
            raise ValueError(f"local_repair_rule must be one of {', '.join(LOCAL_REPAIR_RULES)}")
        if self.traversal_history < 1:
            raise ValueError("traversal_history must be >= 1")
        if not 1 <= self.control_ttl <= 255:
            raise ValueError("control_ttl must be in 1..255")
        if self.local_repair_failure not in LOCAL_REPAIR_FAILURES:
            raise ValueError(f"local_repair_failure must be one of {', '.join(LOCAL_REPAIR_FAILURES)}")
        if self.rreq_schedule not in RREQ_SCHEDULES:
            raise ValueError(f"rreq_schedule must be one of {', '.join(RREQ_SCHEDULES)}")
        for name in ("max_rreq_timeout", "route_purge_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        for name in ("my_route_timeout", "reverse_route_life"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 (or null: derived)")

    # ---------------------------------------------------------------- nanoseconds
    @property
    def active_route_timeout_ns(self) -> int:
        return seconds(self.active_route_timeout)

    @property
    def hello_interval_ns(self) -> int:
        return seconds(self.hello_interval)

    @property
    def node_traversal_time_ns(self) -> int:
        return seconds(self.node_traversal_time)

    @property
    def send_buffer_timeout_ns(self) -> int:
        return seconds(self.send_buffer_timeout)

    @property
    def max_broadcast_jitter_ns(self) -> int:
        return seconds(self.max_broadcast_jitter)

    @property
    def max_rreq_timeout_ns(self) -> int:
        return seconds(self.max_rreq_timeout)

    @property
    def route_purge_interval_ns(self) -> int:
        return seconds(self.route_purge_interval)

    # ---------------------------------------------------------------- derived (section 10)
    @property
    def net_traversal_time_ns(self) -> int:
        """NET_TRAVERSAL_TIME = 2 * NODE_TRAVERSAL_TIME * NET_DIAMETER (2.8 s)."""
        return 2 * self.node_traversal_time_ns * self.net_diameter

    @property
    def path_discovery_time_ns(self) -> int:
        """PATH_DISCOVERY_TIME = 2 * NET_TRAVERSAL_TIME (5.6 s)."""
        return 2 * self.net_traversal_time_ns

    @property
    def blacklist_timeout_ns(self) -> int:
        """BLACKLIST_TIMEOUT = RREQ_RETRIES * NET_TRAVERSAL_TIME."""
        return self.rreq_retries * self.net_traversal_time_ns

    @property
    def delete_period_ns(self) -> int:
        """DELETE_PERIOD = K * max(ACTIVE_ROUTE_TIMEOUT, HELLO_INTERVAL), K = 5 (15 s).

        Section 10: "If Hello messages are used, then the ACTIVE_ROUTE_TIMEOUT parameter value
        MUST be more than the value (ALLOWED_HELLO_LOSS * HELLO_INTERVAL)"; with link-layer
        feedback K = 5 is the RFC's recommendation.
        """
        return self.delete_period_k * max(self.active_route_timeout_ns, self.hello_interval_ns)

    @property
    def max_repair_ttl(self) -> int:
        """MAX_REPAIR_TTL = 0.3 * NET_DIAMETER (10 with the defaults)."""
        return (3 * self.net_diameter) // 10

    @property
    def my_route_timeout_ns(self) -> int:
        """MY_ROUTE_TIMEOUT = 2 * ACTIVE_ROUTE_TIMEOUT, but section 10 also says "The configured
        value for MY_ROUTE_TIMEOUT MUST be at least 2 * PATH_DISCOVERY_TIME": we take the larger
        of the two, as ns-3 does (11.2 s with the defaults); ``my_route_timeout`` when set."""
        if self.my_route_timeout is not None:
            return seconds(self.my_route_timeout)
        return 2 * max(self.active_route_timeout_ns, self.path_discovery_time_ns)

    def reverse_route_lifetime_ns(self, hop_count: int) -> int:
        """How long a RREQ keeps the reverse route alive at least: ``reverse_route_life`` (ns-2's
        REV_ROUTE_LIFE) when set, else section 6.5's MinimalLifetime, 2 * NET_TRAVERSAL_TIME -
        2 * HopCount * NODE_TRAVERSAL_TIME (at least one NODE_TRAVERSAL_TIME for absurd hop
        counts)."""
        if self.reverse_route_life is not None:
            return seconds(self.reverse_route_life)
        return max(
            2 * self.net_traversal_time_ns - 2 * hop_count * self.node_traversal_time_ns,
            self.node_traversal_time_ns,
        )

    @property
    def next_hop_wait_ns(self) -> int:
        """NEXT_HOP_WAIT = NODE_TRAVERSAL_TIME + 10 ms."""
        return self.node_traversal_time_ns + seconds(0.010)

    @property
    def hello_lifetime_ns(self) -> int:
        """Lifetime of a HELLO (section 6.9): ALLOWED_HELLO_LOSS * HELLO_INTERVAL."""
        return self.allowed_hello_loss * self.hello_interval_ns

    def ring_traversal_time_ns(self, ttl_value: int, node_traversal_ns: int | None = None) -> int:
        """RING_TRAVERSAL_TIME = 2 * NODE_TRAVERSAL_TIME * (TTL_VALUE + TIMEOUT_BUFFER);
        ``node_traversal_ns`` replaces NODE_TRAVERSAL_TIME (the measured per-hop time)."""
        ntt = self.node_traversal_time_ns if node_traversal_ns is None else node_traversal_ns
        return 2 * ntt * (ttl_value + self.timeout_buffer)


PROFILES: ProfileTable = {
    # The testbed's behaviour before profiles: the dataclass defaults.
    RoutingProfile.LEGACY: {},
    # RFC 3561 where the defaults follow ns-2 (section 10's constants are the defaults).
    RoutingProfile.RFC: {
        "local_repair_rule": "rfc",
        "adaptive_traversal_time": False,
        "reverse_route_fresher_only": True,
    },
    # ns-2's aodv.cc/aodv.h as the papers ran them (docs/aodv.md "Profiles"): the code of
    # ns-2.26 to 2.35 (the same AODV in every one of them; Cohen ran 2.33). ns-2.1b8a (Klemm
    # 2004) differs: topologies/klemm2004.yaml sets its values on top.
    RoutingProfile.NS2: {
        "active_route_timeout": 10.0,  # aodv.h ACTIVE_ROUTE_TIMEOUT 10 (2.1b8a: 50)
        "ttl_start": 5,  # aodv.h TTL_START 5 (2.1b8a: 1)
        "net_diameter": 30,  # aodv.h NETWORK_DIAMETER 30
        "node_traversal_time": 0.030,  # aodv.h NODE_TRAVERSAL_TIME 0.03
        "rreq_retries": 3,  # aodv.h RREQ_RETRIES 3
        "allowed_hello_loss": 3,  # aodv.h ALLOWED_HELLO_LOSS 3
        "local_repair_failure": "rediscover",
        "local_repair_wait_from_start": True,
        "rreq_schedule": "ns2",
        "ring_search_unknown_hop_count": False,
        "no_route_bumps_seq_no": False,
        "jitter_originated": False,
        "local_repair_bumps_seq_no": False,
        "rerr_seq_check": True,
        "rerr_flushes_ifq": True,
        "link_break_prunes_precursors": True,
        "repair_only_failed_packet": True,
        "reverse_route_fresher_only": True,
        "source_rebuffers_on_break": False,
        "my_route_timeout": 10.0,  # aodv.h MY_ROUTE_TIMEOUT 10 (2.1b8a: 60)
        "reverse_route_life": 6.0,  # aodv.h REV_ROUTE_LIFE 6 (2.1b8a: 10)
    },
}
"""Each routing profile's values (``nodes.protocols.profiles``): the fields that differ from the
dataclass defaults, which are the ``legacy`` behaviour."""
check_table(AodvParams, PROFILES)
PARAMS_CLASS = AodvParams
