"""ELFN (Yu 2004 s3.1/3.2) in virtual time over the real DSR core: the ELFN option, the ROUTE
ERROR from the node that detects the break (also for salvaged packets), freeze at the sender,
probes at exact 2 s multiples, thaw on the probe's ACK; AODV's RERR."""

from __future__ import annotations

import random

import pytest

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.addr import station_ip_bytes, station_ip_int
from nodes.core.events import Frame
from nodes.core.hooks import LinkFailure, RouteDiscoveryJoined
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.elfn import OPT_ELFN, Elfn, ElfnEntry, ElfnOption, ElfnState, IllegalTransition
from nodes.protocols.aodv.events import AodvRouteErrorReceived
from nodes.protocols.aodv.messages import Rerr
from nodes.protocols.dsr import create
from nodes.protocols.dsr.events import DsrRouteErrorReceived, DsrRouteErrorSent
from nodes.protocols.dsr.options import DsrOption, RawOption, RouteError, decode_options, parse
from nodes.protocols.dsr.srcroute import add_source_route
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent, HoldMode, ToNetwork
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import FakeKernel

S, R = station_ip_bytes(1), station_ip_bytes(4)
CONN = ConnId(S, 40000, R, 5201)
MSS = 500
ISS, IRS = 1_000_000, 5_000_000


def data(i: int, c: ConnId = CONN) -> bytes:
    return P.build_tcp(
        c.local_ip,
        c.remote_ip,
        c.local_port,
        c.remote_port,
        ISS + i * MSS,
        IRS,
        P.ACK,
        500,
        P.timestamp_option(100 + i, 7),
        bytes([i]) * MSS,
    )


def syn(c: ConnId = CONN) -> bytes:
    return P.build_tcp(c.local_ip, c.remote_ip, c.local_port, c.remote_port, ISS - 1, 0, P.SYN, 500)


def ack(n: int) -> bytes:
    return P.build_tcp(R, S, 5201, 40000, IRS, ISS + n * MSS, P.ACK, 500, P.timestamp_option(7, 100))


# ---------------------------------------------------------------------------------- option


def test_elfn_option_bytes_and_decode() -> None:
    e = ElfnEntry(S, R, 40000, 5201, 0x01020304)
    opt = ElfnOption((e,))
    raw = opt.encode()
    assert raw == bytes([20, 16, 10, 0, 0, 1, 10, 0, 0, 4, 0x9C, 0x40, 0x14, 0x51, 1, 2, 3, 4])
    assert decode_options(raw) == [opt]
    assert opt.entries[0].conn == CONN
    assert OPT_ELFN & 0x80 == 0 and OPT_ELFN & 0x60 == 0  # unknown to others: skipped, no error


def test_router_without_the_decoder_keeps_the_option() -> None:
    from nodes.protocols.dsr import options as O

    dec = O.OPTION_DECODERS.pop(OPT_ELFN)
    try:
        raw = ElfnOption((ElfnEntry(S, R, 1, 2, 3),)).encode()
        (o,) = decode_options(raw)
        assert isinstance(o, RawOption) and o.action == 0 and o.encode() == raw
    finally:
        O.OPTION_DECODERS[OPT_ELFN] = dec


# ---------------------------------------------------------------------------------- DSR chain


HANDSHAKE_NS = 200 * NS_PER_MS
"""Long enough for the SYN's route discovery over these chains (requests and replies of a few hops)."""


def dsr_chain(
    n: int,
    links: list[tuple[int, int]],
    restore: str = "old",
    prime: tuple[ConnId, ...] = (CONN,),
    params: dict[str, object] | None = None,
) -> tuple[SimNetwork, list[Elfn], list[FakeKernel]]:
    """A DSR chain with ELFN at every station; each ``prime`` connection sends its SYN at t = 0,
    so the first route discovery is the handshake's (as on Linux), not the first data segment's
    (which would freeze the sender: s3.2)."""
    net = SimNetwork(n, lambda ctx: create(ctx, {"name": "dsr"}), links, seed=3)
    exts, kerns = [], []
    for s, node in net.nodes.items():
        kern = FakeKernel()
        agent = EndpointAgent(station_ip_bytes(s), kernel=kern)
        node.runtime.endpoint = agent
        node.ctx.endpoint = TcpControl(agent)
        (ext,) = attach_extensions(
            node.ctx,
            node.runtime.protocol,
            [{"name": "elfn", "params": {"restore": restore, **(params or {})}}],
        )
        assert isinstance(ext, Elfn)
        exts.append(ext)
        kerns.append(kern)
    for c in prime:
        net.inject(1, syn(c))
    if prime:
        # Linux sends data only after the SYN-ACK, i.e. after the handshake's discovery: a data
        # segment joining that discovery would freeze the sender (RouteDiscoveryJoined)
        net.run_until(HANDSHAKE_NS)
    return net, exts, kerns


def delivered_seqs(net: SimNetwork, s: int) -> list[int]:
    out = []
    for _t, p in net.nodes[s].delivered:
        t = P.parse_tcp(p)
        if t is not None and t.payload_len:
            out.append((t.seq - ISS) // MSS)
    return out


@pytest.mark.parametrize("restore", ["old", "default"])
def test_freeze_probe_every_2s_thaw_on_the_probes_ack(restore: str) -> None:
    net, exts, kerns = dsr_chain(4, [(1, 2), (2, 3), (3, 4)], restore)
    agent1 = net.nodes[1].runtime.endpoint
    assert isinstance(agent1, EndpointAgent)
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    net.inject(4, ack(1))
    for i in (1, 2):
        net.inject(1, data(i))
    net.run_until(2 * NS_PER_S)
    assert delivered_seqs(net, 4) == [0, 1, 2]
    net.link_down(2, 3)
    net.inject(1, data(3))
    net.run_until(3 * NS_PER_S)
    # node 2 detected the break and sent a ROUTE ERROR with the ELFN message to node 1
    ((t_rerr, dp),) = [
        (t.t_ns, parse(t.packet)) for t in net.trace if t.src == 2 and parse(t.packet).find(RouteError)
    ]
    opt = dp.find(ElfnOption)
    assert isinstance(opt, ElfnOption) and opt.entries == (ElfnEntry(S, R, 40000, 5201, ISS + 3 * MSS),)
    assert exts[1].counters["elfn_sent"] == 1
    ext = exts[0]
    (t_freeze,) = ext.conns[CONN].freezes
    assert t_freeze > t_rerr and ext.state_of(CONN) == ElfnState.FROZEN
    assert ("snapshot", CONN) in kerns[0].calls
    c = agent1.conns[CONN]
    assert c.hold is not None and c.hold.mode == HoldMode.FROZEN and c.hold.thaw_seqno == ISS + 3 * MSS
    # the thaw timer: one probe at every 2 s multiple after the freeze, none in between
    for k in (1, 2, 3):
        net.run_until(t_freeze + k * 2 * NS_PER_S - 1)
        assert c.hold.probes == k - 1
        net.run_until(t_freeze + k * 2 * NS_PER_S)
        assert c.hold.probes == k
    # the kernel's own segments stay withheld while frozen
    net.inject(1, data(4))
    net.run_until(t_freeze + 7 * NS_PER_S)
    assert c.stats["withheld_out"] == 1 and c.hold.probes == 3
    # the link returns; a probe (or the DSR send buffer's copy of one, once a route is found)
    # reaches the receiver, whose ACK thaws the sender
    net.link_up(2, 3)
    while 3 not in delivered_seqs(net, 4) and net.now_ns < t_freeze + 40 * NS_PER_S:
        net.run_for(10 * NS_PER_MS)
    assert 3 in delivered_seqs(net, 4)
    t_ack = net.now_ns
    net.inject(4, ack(4))
    net.run_for(NS_PER_S)
    assert c.hold is None and ext.state_of(CONN) == ElfnState.ACTIVE
    (t_thaw,) = ext.conns[CONN].thaws
    assert t_ack < t_thaw < t_ack + 100 * NS_PER_MS
    assert c.stats["probes"] == (t_thaw - t_freeze) // (2 * NS_PER_S)
    assert ("restore", CONN, restore) in kerns[0].calls
    assert [e[1] for e in ext.events] == ["frozen", "active"]


def test_elfn_message_also_for_salvaged_packets() -> None:
    """s3.2: "ELFN ... freezes TCP even if packets are salvaged"."""
    net, exts, _ = dsr_chain(5, [(1, 2), (2, 3), (3, 4), (2, 5), (5, 4)])
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    net.inject(4, ack(1))
    net.run_until(2 * NS_PER_S)
    from nodes.protocols.dsr.core import DsrRouting

    p2 = net.nodes[2].runtime.protocol
    assert isinstance(p2, DsrRouting)
    route = p2.cache.find(4, net.now_ns)
    assert route is not None
    bad = route[route.index(2) + 1]  # break the link node 2 uses; the other way is cached
    p2.add_route((2, 5, 4), primary=True)
    p2.add_route((2, 3, 4), primary=True)
    net.link_down(2, bad)
    net.inject(1, data(1))
    net.run_until(3 * NS_PER_S)
    assert net.nodes[2].ctx.counters.extra["salvaged"] == 1
    assert 1 in delivered_seqs(net, 4)  # salvaged and delivered ...
    assert exts[0].state_of(CONN) == ElfnState.FROZEN  # ... and the sender froze all the same
    assert exts[0].events[0][3] == "elfn"


def test_own_link_failure_freezes_the_sender() -> None:
    c3 = ConnId(S, 40000, station_ip_bytes(3), 5201)
    net, exts, _ = dsr_chain(3, [(1, 2), (2, 3)], prime=(c3,))
    net.inject(1, data(0, c3))
    net.run_until(NS_PER_S)
    net.link_down(1, 2)
    net.inject(1, data(1, c3))
    net.run_until(2 * NS_PER_S)
    assert exts[0].state_of(c3) == ElfnState.FROZEN and exts[0].events[0][3] == "own link failure"


@pytest.mark.parametrize("enabled", [True, False])
def test_route_discovery_by_the_sender_freezes_it(enabled: bool) -> None:
    """s3.2's first trigger: the sender's route is gone from its cache (here: removed, as a ROUTE
    ERROR without an ELFN message for this connection would), so its next data segment starts a
    route discovery: frozen at once, the probe at that segment."""
    net, exts, _ = dsr_chain(4, [(1, 2), (2, 3), (3, 4)], params={"freeze_on_route_discovery": enabled})
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    assert delivered_seqs(net, 4) == [0] and exts[0].state_of(CONN) == ElfnState.ACTIVE  # the SYN's discovery
    proto = net.nodes[1].runtime.protocol
    assert proto.cache.remove_link(2, 3, net.now_ns) >= 1  # type: ignore[attr-defined]
    net.inject(1, data(1))
    net.run_for(NS_PER_MS)
    agent1 = net.nodes[1].runtime.endpoint
    assert isinstance(agent1, EndpointAgent)
    if not enabled:
        assert exts[0].state_of(CONN) == ElfnState.ACTIVE and agent1.conns[CONN].hold is None
        return
    assert exts[0].state_of(CONN) == ElfnState.FROZEN and exts[0].events[-1][3] == "route discovery"
    hold = agent1.conns[CONN].hold
    assert hold is not None and hold.mode == HoldMode.FROZEN and hold.thaw_seqno == ISS + MSS
    # the discovery finds the route again and the buffered segment gets through; the sender stays
    # frozen until the thaw timer's probe (2 s) is answered by an ACK beyond it
    (t_freeze,) = exts[0].conns[CONN].freezes
    net.run_until(t_freeze + 2 * NS_PER_S + 100 * NS_PER_MS)
    assert 1 in delivered_seqs(net, 4) and exts[0].state_of(CONN) == ElfnState.FROZEN and hold.probes == 1
    net.inject(4, ack(2))
    net.run_for(NS_PER_S)
    assert exts[0].state_of(CONN) == ElfnState.ACTIVE and agent1.conns[CONN].hold is None


def test_route_error_with_elfn_for_other_stations_is_ignored() -> None:
    net, exts, _ = dsr_chain(4, [(1, 2), (2, 3), (3, 4)])  # CONN's receiver is station 4
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    other = ElfnOption((ElfnEntry(station_ip_bytes(2), R, 40000, 5201, ISS),))
    acts = exts[0].on_route_error_received(
        DsrRouteErrorReceived(
            now_ns=net.now_ns,
            rerr=RouteError(2, 1, unreachable=3),
            following=(other,),
            packet=b"",
            for_me=True,
            overheard=False,
        )
    )
    assert acts == [] and exts[0].state_of(CONN) == ElfnState.ACTIVE


def test_route_error_sent_lists_each_connection_once_with_its_first_segment() -> None:
    net, exts, _ = dsr_chain(3, [(1, 2), (2, 3)])
    c2 = ConnId(S, 40001, R, 5201)
    pkts = [add_source_route(p, [2, 3]) for p in (data(5), data(6), data(2, c2), ack(3))]
    extra: list[DsrOption] = []
    exts[1].on_route_error_sent(
        DsrRouteErrorSent(
            now_ns=0,
            rerr=RouteError(2, 1, unreachable=3),
            dst=1,
            extra_options=extra,
            packets=tuple(pkts),
            link=(2, 3),
        )
    )
    assert extra == [
        ElfnOption((ElfnEntry(S, R, 40000, 5201, ISS + 5 * MSS), ElfnEntry(S, R, 40001, 5201, ISS + 2 * MSS)))
    ]


def test_illegal_transition_is_rejected() -> None:
    net, exts, _ = dsr_chain(2, [(1, 2)])
    with pytest.raises(IllegalTransition, match="ACTIVE -> ACTIVE"):
        exts[0]._set(CONN, ElfnState.ACTIVE, 0, "test")


# ---------------------------------------------------------------------------------- AODV


def test_aodv_route_error_freezes_connections_to_unreachable_destinations() -> None:
    from nodes.protocols.aodv import create as aodv_create

    ctx = NodeContext(station=1, n_stations=5, rng=random.Random(1))
    agent = EndpointAgent(S, kernel=FakeKernel())
    ctx.endpoint = TcpControl(agent)
    proto = aodv_create(ctx, {"name": "aodv"})
    (ext,) = attach_extensions(ctx, proto, ["elfn"])
    assert isinstance(ext, Elfn)
    c5 = ConnId(S, 40001, station_ip_bytes(5), 5201)
    for c in (CONN, c5):
        agent.on_outbound(data(0, c), 0)
    # a RERR naming destination 4 freezes the connection to 4 only (any station, AODV's own event)
    rerr = Rerr(((station_ip_int(4), 7),))
    acts = ctx.hooks.emit(AodvRouteErrorReceived(now_ns=10 * NS_PER_MS, rerr=rerr, prev_hop=2))
    assert acts and ext.state_of(CONN) == ElfnState.FROZEN and ext.state_of(c5) == ElfnState.ACTIVE
    # the sender's own link breaks under a segment of the connection to 5 (the shared LinkFailure,
    # as DSR emits it): that connection freezes, the probe at the segment
    seg = data(3, c5)
    frame = Frame(seg, 2)
    ctx.hooks.emit(LinkFailure(now_ns=20 * NS_PER_MS, next_hop=2, frame=frame, queued=(), packets=(seg,)))
    assert ext.state_of(c5) == ElfnState.FROZEN
    assert ext.conns[c5].freezes == [20 * NS_PER_MS]
    hold = agent.conns[c5].hold
    assert hold is not None and hold.thaw_seqno == ISS + 3 * MSS
    # thawed (a late ACK), its next segment waits for the discovery under way: frozen again
    agent.thaw(c5, 30 * NS_PER_MS)
    seg = data(4, c5)
    ctx.hooks.emit(RouteDiscoveryJoined(now_ns=40 * NS_PER_MS, dst=5, packet=seg))
    assert ext.state_of(c5) == ElfnState.FROZEN and ext.conns[c5].freezes[-1] == 40 * NS_PER_MS
    hold = agent.conns[c5].hold
    assert hold is not None and hold.thaw_seqno == ISS + 4 * MSS


def test_a_duplicate_ack_below_the_probe_thaws_and_is_recorded() -> None:
    """Algorithm 2's melt() on any ACK: the receiver, missing segment 1, answers the probe (segment
    3, the one the break met) with a duplicate ACK for 1; that thaws the sender (the 50-station
    run of 27 Nov 2026 stayed frozen for 810 s waiting for an ACK above the probe)."""
    net, exts, kerns = dsr_chain(4, [(1, 2), (2, 3), (3, 4)], "old")
    agent1 = net.nodes[1].runtime.endpoint
    assert isinstance(agent1, EndpointAgent)
    for i in (0, 1, 2):
        net.inject(1, data(i))
    net.run_until(NS_PER_S)
    net.inject(4, ack(1))  # 1 and 2 outstanding: the receiver "lost" 1
    net.run_until(2 * NS_PER_S)
    net.link_down(2, 3)
    net.inject(1, data(3))
    net.run_until(3 * NS_PER_S)
    ext, c = exts[0], agent1.conns[CONN]
    assert ext.state_of(CONN) == ElfnState.FROZEN and c.hold is not None
    assert c.hold.thaw_seqno == ISS + 3 * MSS
    net.link_up(2, 3)
    while 3 not in delivered_seqs(net, 4) and net.now_ns < 40 * NS_PER_S:
        net.run_for(10 * NS_PER_MS)
    t_dup = net.now_ns
    net.inject(4, ack(1))  # the probe's answer: still 1
    net.run_for(NS_PER_S)
    assert c.hold is None and ext.state_of(CONN) == ElfnState.ACTIVE
    (t_thaw,) = ext.conns[CONN].thaws
    assert t_dup < t_thaw < t_dup + 100 * NS_PER_MS and ext.events[-1][3] == "ack arrived"
    assert ("restore", CONN, "old") in kerns[0].calls


def test_sender_thawed_during_its_discovery_freezes_at_its_next_segment() -> None:
    """An ACK that was in flight at the break thaws the sender (Algorithm 2's melt on any ACK)
    while its route discovery is still under way; the next data segment joins that discovery
    (no new request, ``RouteDiscoveryJoined``) and freezes the sender again, the probe at that
    segment: it does not send on into the discovery with its retransmission timer running."""
    net, exts, _ = dsr_chain(4, [(1, 2), (2, 3), (3, 4)])
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    proto = net.nodes[1].runtime.protocol
    net.link_down(2, 3)
    assert proto.cache.remove_link(2, 3, net.now_ns) >= 1  # type: ignore[attr-defined]
    net.inject(1, data(1))
    net.run_for(NS_PER_MS)
    agent1 = net.nodes[1].runtime.endpoint
    assert isinstance(agent1, EndpointAgent)
    assert exts[0].state_of(CONN) == ElfnState.FROZEN
    acts = agent1.thaw(CONN, net.now_ns)  # the late ACK's melt (its thawing ACK goes to the kernel)
    assert not [a for a in acts if isinstance(a, ToNetwork)]  # nothing deferred, nothing lost
    assert agent1.conns[CONN].hold is None
    requests = net.nodes[1].ctx.counters.routing_sent.get("rreq", 0)
    net.inject(1, data(2))
    net.run_for(NS_PER_MS)
    assert net.nodes[1].ctx.counters.routing_sent.get("rreq", 0) == requests  # joined, not a new discovery
    assert exts[0].state_of(CONN) == ElfnState.FROZEN and exts[0].events[-1][3] == "route discovery"
    hold = agent1.conns[CONN].hold
    assert hold is not None and hold.mode == HoldMode.FROZEN and hold.thaw_seqno == ISS + 2 * MSS
    assert len(exts[0].conns[CONN].freezes) == 2 and len(exts[0].conns[CONN].thaws) == 1
