"""Route discoveries in progress, one per destination (RFC 3561 sections 6.3, 6.4, 6.12).

Expanding ring search (section 6.4): "the originating node initially uses TTL = TTL_START in the
RREQ packet IP header and sets the timeout for receiving a RREP to RING_TRAVERSAL_TIME
milliseconds. ... If the RREQ times out without a corresponding RREP, the originator broadcasts
the RREQ again with the TTL incremented by TTL_INCREMENT. This continues until the TTL set in the
RREQ reaches TTL_THRESHOLD, beyond which a TTL = NET_DIAMETER is used for each attempt."
"When a new route to the same destination is required at a later time (e.g., upon route loss),
the TTL in the RREQ IP header is initially set to the Hop Count plus TTL_INCREMENT."

Retries at NET_DIAMETER (section 6.3): "If a route is not received within NET_TRAVERSAL_TIME
milliseconds, the node MAY try again ... up to a maximum of RREQ_RETRIES times at the maximum
TTL value." and "the source node MUST use a binary exponential backoff": the k-th RREQ at
NET_DIAMETER (k = 0 .. RREQ_RETRIES) waits 2**k * NET_TRAVERSAL_TIME.

A local repair (section 6.12) is a single attempt that waits RING_TRAVERSAL_TIME of its TTL.

``rreq_schedule = "ns2"`` is ns-2's AODV::sendRequest instead (``ns2_next_ttl``,
``ns2_timeout_ns``): the ring ends when the last TTL is not below TTL_THRESHOLD, each RREQ waits
2 * TTL * PerHopTime times the network-wide floods so far, at most MAX_RREQ_TIMEOUT.

With ``adaptive_traversal_time`` NODE_TRAVERSAL_TIME in these waits is the measured per-hop
discovery latency (``TraversalHistory``, ns-2's PerHopTime).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .params import AodvParams


@dataclass(slots=True)
class Discovery:
    dst: int
    ttl: int
    started_ns: int
    retries: int = 0
    """RREQs already sent at TTL = NET_DIAMETER beyond the first."""
    local_repair: bool = False
    old_hop_count: int = 0
    """Local repair: the hop count of the broken route (a longer new route is reported, 6.12)."""
    rate_limited: bool = False
    """The next RREQ waits for the rate limiter (its timer fires when it may go)."""
    last_rreq_ns: int = 0
    """When the latest RREQ of this discovery went out (ns-2's rp_timestamp)."""
    floods: int = 0
    """``rreq_schedule`` "ns2": network-wide RREQs of this cycle (ns-2's rt_req_cnt)."""
    next_rreq_ns: int = 0
    """``rreq_schedule`` "ns2": no RREQ before this time (ns-2's rt_req_timeout)."""


INFINITY2 = 0xFF
"""ns-2 aodv_rtable.h: the hop count of an entry that never had one."""


def ns2_next_ttl(p: AodvParams, d: Discovery, last_ttl: int | None) -> None:
    """ns-2 aodv.cc AODV::sendRequest's TTL after ``last_ttl`` (None: nothing known, see
    ``Ns2LastTtl.last``): TTL_START, last + TTL_INCREMENT while last < TTL_THRESHOLD, else
    NETWORK_DIAMETER counted as a flood (rt_req_cnt += 1)."""
    if last_ttl is None:
        d.ttl = p.ttl_start
        return
    if last_ttl < p.ttl_threshold:
        d.ttl = min(last_ttl + p.ttl_increment, p.net_diameter)
    else:
        d.ttl = p.net_diameter
        d.floods += 1


@dataclass(slots=True)
class Ns2LastTtl:
    """ns-2's ``rt_req_last_ttl`` per destination (kept across discoveries, as ns-2 never deletes
    a route entry): the TTL of the last RREQ sent, or the hop count of the last RREQ or RREP that
    brought a fresher route (aodv.cc recvReply, recvRequest)."""

    _ttl: dict[int, int] = field(default_factory=dict)

    def set(self, dst: int, ttl: int) -> None:
        self._ttl[dst] = ttl

    def last(self, p: AodvParams, dst: int, down_hop_count: int | None) -> int | None:
        """The "last TTL" ns-2's AODV::sendRequest starts a discovery from. ns-2.26 to 2.35:
        ``max(rt_req_last_ttl, rt_last_hop_count)`` with ``rt_last_hop_count`` INFINITY2 for a
        route never brought down; ns-2.1b8a (``ring_search_unknown_hop_count``):
        ``rt_req_last_ttl`` alone. None: none known (TTL_START)."""
        last = self._ttl.get(dst, 0)
        if not p.ring_search_unknown_hop_count:
            last = max(last, INFINITY2 if down_hop_count is None else down_hop_count)
        return last or None


def ns2_timeout_ns(p: AodvParams, d: Discovery, node_traversal_ns: int | None = None) -> int:
    """ns-2 aodv.cc AODV::sendRequest: ``rt_req_timeout = 2.0 * ttl * PerHopTime(rt)``, times
    rt_req_cnt when it is > 0, at most MAX_RREQ_TIMEOUT."""
    ntt = p.node_traversal_time_ns if node_traversal_ns is None else node_traversal_ns
    wait = 2 * d.ttl * ntt * max(d.floods, 1)
    return min(wait, p.max_rreq_timeout_ns)


def first_ttl(p: AodvParams, last_hop_count: int | None) -> int:
    """TTL of the first RREQ: TTL_START, or last known hop count + TTL_INCREMENT."""
    if last_hop_count is None:
        return p.ttl_start
    ttl = last_hop_count + p.ttl_increment
    return p.net_diameter if ttl > p.ttl_threshold else ttl


def timeout_ns(p: AodvParams, d: Discovery, node_traversal_ns: int | None = None) -> int:
    """How long to wait for a RREP after the RREQ just sent for ``d``; ``node_traversal_ns``
    replaces NODE_TRAVERSAL_TIME (NET_TRAVERSAL_TIME = 2 * it * NET_DIAMETER)."""
    if d.local_repair or d.ttl < p.net_diameter:
        return p.ring_traversal_time_ns(d.ttl, node_traversal_ns)
    ntt = p.node_traversal_time_ns if node_traversal_ns is None else node_traversal_ns
    return (2 * ntt * p.net_diameter) << d.retries


@dataclass(slots=True)
class TraversalHistory:
    """Per-destination per-hop discovery latencies (ns-2 aodv.cc: ``rt_disc_latency[]``, filled
    in recvReply with (now - RREQ timestamp) / hop count, averaged by ``PerHopTime``)."""

    size: int
    _samples: dict[int, deque[int]] = field(default_factory=dict)

    def add(self, dst: int, latency_ns: int, hop_count: int) -> None:
        if hop_count < 1 or latency_ns < 0:
            return
        q = self._samples.get(dst)
        if q is None:
            q = self._samples[dst] = deque(maxlen=self.size)
        q.append(latency_ns // hop_count)

    def per_hop_ns(self, dst: int) -> int | None:
        """Mean per-hop latency for ``dst``, None without samples (then NODE_TRAVERSAL_TIME)."""
        q = self._samples.get(dst)
        return sum(q) // len(q) if q else None


def next_attempt(p: AodvParams, d: Discovery) -> bool:
    """Advance ``d`` to its next RREQ after a timeout; False when the discovery has failed."""
    if d.local_repair and p.local_repair_failure == "rerr":
        return False
    if d.ttl >= p.net_diameter:
        if d.retries >= p.rreq_retries:
            return False
        d.retries += 1
        return True
    d.ttl += p.ttl_increment
    if d.ttl > p.ttl_threshold:
        d.ttl = p.net_diameter
    return True


class RequestTable:
    def __init__(self) -> None:
        self._d: dict[int, Discovery] = {}

    def __contains__(self, dst: int) -> bool:
        return dst in self._d

    def __len__(self) -> int:
        return len(self._d)

    def get(self, dst: int) -> Discovery | None:
        return self._d.get(dst)

    def add(self, d: Discovery) -> Discovery:
        self._d[d.dst] = d
        return d

    def pop(self, dst: int) -> Discovery | None:
        return self._d.pop(dst, None)

    def destinations(self) -> list[int]:
        return sorted(self._d)
