"""ICMP Destination Unreachable from a router that cannot deliver a packet (sans-I/O).

Liu & Singh 2001 (ATCP) section V: "Network partition occurs at an intermediate hop in our setup.
This host periodically thinks that its next hop is no longer valid ..., thus causing ICMP to
generate the appropriate host unreachable message"; ATCP enters *disconnected* on it. A real
router does the same: RFC 1812 section 5.2.7.1, "If a packet is to be forwarded to a host on a
network that is directly connected to the router (i.e., the router is the last-hop router) and
the router has ascertained that there is no path to the destination host then the router MUST
generate a Destination Unreachable, Code 1 (Host Unreachable) ICMP message"; 4.4BSD/FreeBSD's
``ip_forward()`` sends ``ICMP_UNREACH_HOST`` when it has no route or ``ip_output()`` fails with
EHOSTUNREACH/EHOSTDOWN, and Linux's ``ipv4_link_failure()`` sends host unreachable when the next
hop's neighbour entry fails. Every station of the MANET is on the directly connected 10.0.0.0/16,
so the code is 1 (host unreachable) for a packet dropped because the next hop failed
(``link_failure``) or no route to the station was found (``no_route``: AODV RFC 3561 section 6.3,
"a Destination Unreachable message SHOULD be delivered to the application").

:class:`UnreachableSender` subscribes to the core's ``PacketDropped`` event (static, DSR and
AODV all emit it) and answers each drop whose reason is in ``IcmpParams.reasons`` with an ICMP
packet to the dropped packet's source, handed to the core as a packet this station originates
(``ToNetwork``): it travels the normal forwarding path, and at the source station it goes up to
the kernel (and the endpoint agent) like any received packet.

Rules (RFC 1812 section 4.3.2.7, the same as RFC 1122 section 3.2.2): no ICMP error about an ICMP
error, a packet to a broadcast or multicast address, a non-initial fragment, or a packet whose
source is not a single host (0/8, 127/8, multicast, class E, limited broadcast). Rate limiting:
RFC 1812 section 4.3.2.8 ("A router MUST use a mechanism to limit the rate at which it
originates ICMP error messages"): Linux's per-destination token bucket (``icmp_ratelimit`` ms per
message on average, bursts of ``XRLIM_BURST_FACTOR``). Contents: RFC 792, the original IP header
and the first 64 bits of its data (enough for TCP's ports and sequence number).
"""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from nodes.core.clock import NS_PER_MS
from nodes.core.events import Action, ToNetwork
from nodes.core.hooks import PacketDropped
from nodes.core.ipv4 import IPPROTO_ICMP, checksum
from nodes.core.protocol import NodeContext, RoutingProtocol

ICMP_DEST_UNREACH = 3
"""RFC 792: Destination Unreachable Message, type 3."""
ICMP_NET_UNREACH, ICMP_HOST_UNREACH, ICMP_PORT_UNREACH = 0, 1, 3
ICMP_ERROR_TYPES = frozenset({3, 4, 5, 11, 12})
"""Destination Unreachable, Source Quench, Redirect, Time Exceeded, Parameter Problem."""
IPTOS_PREC_INTERNETCONTROL = 0xC0
"""The IP precedence Linux and BSD give ICMP errors (RFC 1812 section 4.3.2.5: 6 or 7)."""
QUOTE_DATA_BYTES = 8
"""RFC 792: "the internet header plus the first 64 bits of the original datagram's data"."""
MANET_BROADCAST = bytes([10, 0, 255, 255])
"""The directed broadcast of the stations' 10.0.0.0/16."""


@dataclass(frozen=True, slots=True)
class IcmpParams:
    """A router's ICMP error behaviour (scenario ``routing.icmp``, docs/router.md "ICMP")."""

    unreachable: bool = False
    """Send Destination Unreachable for the ``reasons`` drops. Off by default: the ns-2 studies
    (Yu, Ghanem, Klemm, Cohen) had no ICMP in their network layer; on for Liu & Singh 2001."""
    ratelimit_ms: int = 1000
    """Linux ``net.ipv4.icmp_ratelimit``: on average one error per destination per this many ms
    (0: no limit, as FreeBSD 4's ``icmp_error()`` for host unreachable)."""
    ratelimit_burst: int = 6
    """Linux ``XRLIM_BURST_FACTOR``: the token bucket holds this many messages."""
    ttl: int = 64
    """Linux ``net.ipv4.ip_default_ttl`` (FreeBSD ``net.inet.ip.ttl``) of the error."""
    reasons: tuple[str, ...] = ("link_failure", "no_route")
    """``PacketDropped`` reasons answered with host unreachable (code 1)."""

    def __post_init__(self) -> None:
        if self.ratelimit_ms < 0 or self.ratelimit_burst < 1:
            raise ValueError("icmp: ratelimit_ms must be >= 0 and ratelimit_burst >= 1")
        if not 1 <= self.ttl <= 255:
            raise ValueError(f"icmp: ttl must be in 1..255, got {self.ttl}")

    @property
    def ratelimit_ns(self) -> int:
        return self.ratelimit_ms * NS_PER_MS


def dest_unreachable(
    original: bytes | bytearray,
    from_ip: bytes,
    code: int = ICMP_HOST_UNREACH,
    *,
    ttl: int = 64,
    ip_id: int = 0,
) -> bytes:
    """ICMP Destination Unreachable (RFC 792) about ``original``, from ``from_ip`` to its source:
    the original IP header and the first 8 bytes of its data (fewer if it has fewer)."""
    ihl = (original[0] & 0x0F) * 4
    quoted = bytes(original[: ihl + QUOTE_DATA_BYTES])
    icmp = bytearray(struct.pack("!BBHI", ICMP_DEST_UNREACH, code, 0, 0)) + quoted
    icmp[2:4] = checksum(icmp).to_bytes(2, "big")
    total = 20 + len(icmp)
    ip = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            IPTOS_PREC_INTERNETCONTROL,
            total,
            ip_id & 0xFFFF,
            0,
            ttl,
            IPPROTO_ICMP,
            0,
            from_ip,
            bytes(original[12:16]),
        )
    )
    ip[10:12] = checksum(ip).to_bytes(2, "big")
    return bytes(ip + icmp)


def _bad_source(src: bytes) -> bool:
    """RFC 1812 4.3.2.7: the source does not define a single host."""
    first = src[0]
    return first == 0 or first == 127 or first >= 224


def no_error_because(packet: bytes | bytearray) -> str | None:
    """Why RFC 1812 section 4.3.2.7 forbids an ICMP error about ``packet``, or None if allowed."""
    if len(packet) < 20 or packet[0] >> 4 != 4 or (packet[0] & 0x0F) < 5:
        return "not_ipv4"
    ihl = (packet[0] & 0x0F) * 4
    if len(packet) < ihl:
        return "not_ipv4"
    if packet[9] == IPPROTO_ICMP and (len(packet) <= ihl or packet[ihl] in ICMP_ERROR_TYPES):
        return "icmp_error"
    dst = bytes(packet[16:20])
    if dst[0] >= 224 or dst == MANET_BROADCAST:
        return "broadcast"
    if (packet[6] << 8 | packet[7]) & 0x1FFF:
        return "fragment"
    if _bad_source(bytes(packet[12:16])):
        return "bad_source"
    return None


class RateLimit:
    """Linux's ``inet_peer_xrlim_allow``: a token bucket per destination, in integer ns. Tokens
    accrue with time up to ``burst x interval``; a message costs ``interval``. A destination not
    seen before starts with a full bucket (Linux: ``rate_last = jiffies - 60 * HZ``)."""

    def __init__(self, interval_ns: int, burst: int) -> None:
        self.interval_ns = interval_ns
        self.cap_ns = burst * interval_ns
        self._tokens: dict[bytes, tuple[int, int]] = {}  # dst -> (tokens_ns, last_ns)

    def allow(self, dst: bytes, now_ns: int) -> bool:
        if self.interval_ns <= 0:
            return True
        tokens, last = self._tokens.get(dst, (self.cap_ns, now_ns))
        tokens = min(self.cap_ns, tokens + max(0, now_ns - last))
        ok = tokens >= self.interval_ns
        if ok:
            tokens -= self.interval_ns
        self._tokens[dst] = (tokens, now_ns)
        return ok


class UnreachableSender:
    """Answers the core's ``PacketDropped`` (reasons in ``params.reasons``) with an ICMP host
    unreachable to the packet's source. ``ip_packet`` turns the core's copy of the packet into
    the IP datagram as its source sent it (DSR: without the DSR options header)."""

    def __init__(
        self,
        station_ip: bytes,
        params: IcmpParams,
        ip_packet: Callable[[bytes], bytes] = bytes,
        counters: Counter[str] | None = None,
    ) -> None:
        self.ip = station_ip
        self.p = params
        self.ip_packet = ip_packet
        self.limit = RateLimit(params.ratelimit_ns, params.ratelimit_burst)
        self._ip_id = itertools.count(1)
        #: ``icmp_unreachable_sent``, ``icmp_rate_limited``, ``icmp_not_sent_<rule>`` (the
        #: router's ``extra`` counters)
        self.counters: Counter[str] = Counter() if counters is None else counters

    def on_dropped(self, ev: PacketDropped) -> list[Action]:
        if ev.reason not in self.p.reasons:
            return []
        try:
            original = self.ip_packet(ev.packet)
        except (IndexError, ValueError):
            original = b""
        why = no_error_because(original)
        if why is not None:
            self.counters[f"icmp_not_sent_{why}"] += 1
            return []
        if not self.limit.allow(bytes(original[12:16]), ev.now_ns):
            self.counters["icmp_rate_limited"] += 1
            return []
        self.counters["icmp_unreachable_sent"] += 1
        icmp = dest_unreachable(original, self.ip, ICMP_HOST_UNREACH, ttl=self.p.ttl, ip_id=next(self._ip_id))
        return [ToNetwork(icmp)]


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: IcmpParams) -> UnreachableSender | None:
    """Subscribe a sender to ``protocol``'s ``PacketDropped`` when ``params.unreachable``."""
    if not params.unreachable:
        return None
    sender = UnreachableSender(ctx.ip, params, protocol.ip_packet, ctx.counters.extra)
    ctx.hooks.subscribe(PacketDropped, sender.on_dropped)
    return sender
