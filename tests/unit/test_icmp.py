"""ICMP Destination Unreachable from the routers (nodes/core/icmp.py): the packet against scapy,
RFC 1812's rules, the rate limit, and in virtual time over static routing the whole path from a
failed next hop to the source station's endpoint agent (ATCP's ``on_unreachable``)."""

from __future__ import annotations

from collections import Counter

import pytest
from scapy.layers.inet import ICMP, IP, IPerror, TCPerror

from nodes.core import icmp, ipv4
from nodes.core.addr import station_ip_bytes
from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import Frame, ToNetwork
from nodes.core.hooks import PacketDropped
from nodes.core.icmp import IcmpParams, RateLimit, UnreachableSender, no_error_because
from nodes.core.protocol import NodeContext
from nodes.core.sim import DEFAULT_FAIL_NS, SimNetwork, default_airtime_ns
from nodes.protocols.aodv.protocol import AodvRouting
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.static import StaticRouting
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import AgentParams, EndpointAgent, TcpUnreachable
from nodes.tcpctl.kernelseam import FakeKernel

S1, S3, S5 = station_ip_bytes(1), station_ip_bytes(3), station_ip_bytes(5)


def tcp_segment(src: bytes = S1, dst: bytes = S5, seq: int = 1000, ip_id: int = 7) -> bytes:
    return P.build_tcp(src, dst, 40000, 5201, seq, 1, P.ACK | P.PSH, 500, b"", b"x" * 60, ip_id=ip_id)


def test_dest_unreachable_matches_scapy_and_dissects() -> None:
    orig = tcp_segment()
    ours = icmp.dest_unreachable(orig, S3, icmp.ICMP_HOST_UNREACH, ttl=64, ip_id=9)
    ref = bytes(IP(src="10.0.0.3", dst="10.0.0.1", tos=0xC0, id=9, ttl=64) / ICMP(type=3, code=1) / orig[:28])
    assert ours == ref
    d = IP(ours)
    assert (d[ICMP].type, d[ICMP].code) == (3, 1)
    assert (d[IPerror].src, d[IPerror].dst, d[TCPerror].sport, d[TCPerror].seq) == (
        "10.0.0.1",
        "10.0.0.5",
        40000,
        1000,
    )
    assert ipv4.header_checksum_ok(ours)
    # RFC 792: the internet header plus the first 64 bits of the original datagram's data
    assert len(ours) == 20 + 8 + 20 + 8
    code, q = P.parse_icmp_unreach(ours)  # type: ignore[misc]
    assert (code, q.src, q.dst, q.sport, q.dport, q.seq) == (1, S1, S5, 40000, 5201, 1000)


def _with(p: bytes, **fields: int | bytes) -> bytes:
    b = bytearray(p)
    for name, v in fields.items():
        off = {"frag": 6, "src": 12, "dst": 16}[name]
        if isinstance(v, bytes):
            b[off : off + len(v)] = v
        else:
            b[off : off + 2] = v.to_bytes(2, "big")
    ipv4.set_header_checksum(b)
    return bytes(b)


RULES = [
    ("tcp", tcp_segment(), None),
    ("icmp error", icmp.dest_unreachable(tcp_segment(), S3), "icmp_error"),
    ("icmp echo", bytes(IP(src="10.0.0.1", dst="10.0.0.5") / ICMP(type=8)), None),
    ("manet broadcast", _with(tcp_segment(), dst=bytes([10, 0, 255, 255])), "broadcast"),
    ("limited broadcast", _with(tcp_segment(), dst=bytes([255] * 4)), "broadcast"),
    ("multicast", _with(tcp_segment(), dst=bytes([224, 0, 0, 1])), "broadcast"),
    ("non-initial fragment", _with(tcp_segment(), frag=0x2000 | 3), "fragment"),
    ("initial fragment", _with(tcp_segment(), frag=0x2000), None),
    ("source 0.0.0.0", _with(tcp_segment(), src=bytes(4)), "bad_source"),
    ("source loopback", _with(tcp_segment(), src=bytes([127, 0, 0, 1])), "bad_source"),
    ("truncated", tcp_segment()[:12], "not_ipv4"),
    ("empty (DSR routing packet)", b"", "not_ipv4"),
]


@pytest.mark.parametrize(("packet", "why"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_rfc1812_when_not_to_send(packet: bytes, why: str | None) -> None:
    assert no_error_because(packet) == why


def test_rate_limit_is_a_token_bucket_per_destination() -> None:
    rl = RateLimit(1000 * NS_PER_MS, 6)
    assert [rl.allow(S1, 0) for _ in range(7)] == [True] * 6 + [False]
    assert rl.allow(S5, 0)  # another destination has its own bucket
    assert not rl.allow(S1, 999 * NS_PER_MS)  # 999 ms of tokens: not yet one message
    assert rl.allow(S1, 1000 * NS_PER_MS)  # one message per second on average
    assert not rl.allow(S1, 1500 * NS_PER_MS)
    assert rl.allow(S1, 2000 * NS_PER_MS)
    assert [rl.allow(S1, 60 * NS_PER_S) for _ in range(7)] == [True] * 6 + [False]  # full again
    assert all(RateLimit(0, 1).allow(S1, 0) for _ in range(100))  # 0: no limit


def test_sender_answers_only_its_reasons_and_counts() -> None:
    c: Counter[str] = Counter()
    s = UnreachableSender(S3, IcmpParams(unreachable=True, ratelimit_burst=2), counters=c)
    seg = tcp_segment()

    def drop(reason: str, packet: bytes = seg, t: int = 0) -> list[object]:
        return list(s.on_dropped(PacketDropped(now_ns=t, packet=packet, reason=reason)))

    (a,) = drop("link_failure")
    assert isinstance(a, ToNetwork) and a.packet[16:20] == S1 and a.packet[12:16] == S3
    assert drop("ifq_full") == []  # congestion drops get no ICMP
    assert len(drop("no_route")) == 1
    assert drop("link_failure") == []  # burst of 2 used up
    assert drop("link_failure", a.packet) == []  # never about an ICMP error
    assert c == Counter({"icmp_unreachable_sent": 2, "icmp_rate_limited": 1, "icmp_not_sent_icmp_error": 1})


def test_params_and_off_by_default() -> None:
    assert not IcmpParams().unreachable
    with pytest.raises(ValueError, match="ratelimit"):
        IcmpParams(ratelimit_burst=0)
    with pytest.raises(ValueError, match="ttl"):
        IcmpParams(ttl=0)


# ---------------------------------------------------------------- virtual time, static routing


def chain(n: int, params: IcmpParams, agent_at: dict[int, EndpointAgent] | None = None) -> SimNetwork:
    routes = {s: {d: (s + 1 if d > s else s - 1) for d in range(1, n + 1) if d != s} for s in range(1, n + 1)}

    def make(ctx: NodeContext) -> StaticRouting:
        proto = StaticRouting(ctx, routes[ctx.station])
        icmp.attach(ctx, proto, params)
        return proto

    net = SimNetwork.chain(n, make)
    for sid, ag in (agent_at or {}).items():
        net.nodes[sid].runtime.endpoint = ag
    return net


def test_a_failed_next_hop_sends_host_unreachable_back_to_the_source() -> None:
    net = chain(5, IcmpParams(unreachable=True))
    net.link_down(3, 4)  # the partition of Liu & Singh: station 3's next hop is gone
    seg = tcp_segment()
    net.inject(1, seg)
    net.run_for(NS_PER_S)
    ((t, got),) = net.nodes[1].delivered
    d = IP(got)
    assert (d.src, d.dst, d[ICMP].type, d[ICMP].code) == ("10.0.0.3", "10.0.0.1", 3, 1)
    assert d.ttl == 64 - 1  # forwarded by station 2 on the normal path
    assert (d[IPerror].src, d[IPerror].dst, d[TCPerror].seq) == ("10.0.0.1", "10.0.0.5", 1000)
    # exactly: two hops of the segment, the failure, two hops of the ICMP back
    frame = Frame(seg, 2)
    back = Frame(got, 1)
    assert t == 2 * default_airtime_ns(frame) + DEFAULT_FAIL_NS + 2 * default_airtime_ns(back)
    assert net.nodes[3].ctx.counters.extra["icmp_unreachable_sent"] == 1
    assert net.nodes[5].delivered == []


def test_no_icmp_when_off() -> None:
    net = chain(5, IcmpParams())
    net.link_down(3, 4)
    net.inject(1, tcp_segment())
    net.run_for(NS_PER_S)
    assert net.nodes[1].delivered == []
    assert net.nodes[3].ctx.counters.drops["link_failure"] == 1


def test_the_source_router_answers_its_own_kernel() -> None:
    # the first hop fails: station 1's own router tells its kernel (Linux: ipv4_link_failure)
    net = chain(3, IcmpParams(unreachable=True))
    net.link_down(1, 2)
    net.inject(1, tcp_segment(dst=station_ip_bytes(3)))
    net.run_for(NS_PER_S)
    ((_, got),) = net.nodes[1].delivered
    assert IP(got).src == "10.0.0.1" and IP(got)[ICMP].code == 1


def test_the_endpoint_agent_gets_the_real_icmp_as_tcp_unreachable() -> None:
    # the agent learns the connection from the kernel's segment, the ICMP comes back through
    # the network, and ATCP's hook (TcpUnreachable) fires with the connection and the quoted seq
    agent = EndpointAgent(S1, AgentParams(), kernel=FakeKernel())
    seen: list[TcpUnreachable] = []

    def on_du(ev: TcpUnreachable) -> list[object]:
        seen.append(ev)
        return []

    agent.hooks.subscribe(TcpUnreachable, on_du)  # type: ignore[arg-type]
    net = chain(5, IcmpParams(unreachable=True), {1: agent})
    net.link_down(3, 4)
    net.inject(1, tcp_segment(seq=4242))
    net.run_for(NS_PER_S)
    (ev,) = seen
    assert ev.code == 1 and ev.seq == 4242
    assert (ev.conn.local_ip, ev.conn.local_port, ev.conn.remote_ip, ev.conn.remote_port) == (
        S1,
        40000,
        S5,
        5201,
    )
    # not consumed by a subscriber that returns nothing: the kernel gets it too
    assert [IP(p)[ICMP].code for _, p in net.nodes[1].delivered] == [1]


# ---------------------------------------------------------------- AODV and DSR


def _net(core: type[AodvRouting] | type[DsrRouting], n: int) -> SimNetwork:
    def make(ctx: NodeContext) -> AodvRouting | DsrRouting:
        proto = core(ctx)
        icmp.attach(ctx, proto, IcmpParams(unreachable=True))
        return proto

    return SimNetwork.chain(n, make)


def test_aodv_discovery_that_finds_no_route_tells_the_local_sender() -> None:
    # RFC 3561 6.3: after RREQ_RETRIES "all data packets destined for the corresponding
    # destination SHOULD be dropped from the buffer and a Destination Unreachable message SHOULD
    # be delivered to the application"
    net = _net(AodvRouting, 3)
    net.link_down(2, 3)
    seg = tcp_segment(dst=station_ip_bytes(3))
    net.inject(1, seg)
    net.run_for(30 * NS_PER_S)
    ((_, got),) = net.nodes[1].delivered
    d = IP(got)
    assert (d.src, d.dst, d[ICMP].type, d[ICMP].code) == ("10.0.0.1", "10.0.0.1", 3, 1)
    assert bytes(d[ICMP].payload) == seg[:28]
    assert net.nodes[1].ctx.counters.drops["no_route"] == 1


def test_dsr_quotes_the_datagram_without_its_options_header() -> None:
    net = _net(DsrRouting, 4)
    seg = tcp_segment(dst=station_ip_bytes(4))
    net.inject(1, seg)
    net.run_for(2 * NS_PER_S)
    assert [p[20:] for _, p in net.nodes[4].delivered] == [seg[20:]]  # the route is known
    net.link_down(3, 4)
    seg2 = tcp_segment(dst=station_ip_bytes(4), seq=2000, ip_id=8)
    net.inject(1, seg2)
    net.run_for(30 * NS_PER_S)
    icmps = [IP(p) for _, p in net.nodes[1].delivered if IP(p).proto == 1]
    assert icmps, net.nodes[3].ctx.counters.drops
    d = icmps[0]
    assert (d[ICMP].type, d[ICMP].code) == (3, 1)
    assert d[IPerror].proto == 6 and d[TCPerror].seq == 2000  # not DSR's header: the TCP segment
