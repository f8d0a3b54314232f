"""EPLN (Yu 2004 s4.2-4.3.5, Algorithm 2) in virtual time over the real DSR core: the drop_list at
a link break (the packet and the interface-queue packets with the same next hop), the conn_list
in the ROUTE ERROR to the TCP sender, the salvaging node relaying it over a cached route, and the
sender's Algorithm 2 decisions (freeze, thaw_seqno, early retransmission, lost_pkt)."""

from __future__ import annotations

import pytest

from nodes.core import NS_PER_S
from nodes.core.addr import station_ip_bytes
from nodes.core.events import ToNetwork
from nodes.core.protocol import ParamError
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.epln import ConnInfo, ConnListOption, Epln
from nodes.protocols.dsr import create
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.events import DsrRouteErrorReceived
from nodes.protocols.dsr.options import DsrOption, RouteError, RouteRequest, parse
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import FakeKernel

S, R = station_ip_bytes(1), station_ip_bytes(4)
CONN = ConnId(S, 40000, R, 5201)
MSS = 500
ISS, IRS = 1_000_000, 5_000_000


def received(
    rerr: RouteError, following: list[DsrOption], now_ns: int, *, for_me: bool = True
) -> DsrRouteErrorReceived:
    """The event DSR emits for a ROUTE ERROR ``rerr`` followed by ``following``."""
    return DsrRouteErrorReceived(
        now_ns=now_ns, rerr=rerr, following=tuple(following), packet=b"", for_me=for_me, overheard=False
    )


def seq(i: int) -> int:
    return ISS + i * MSS


def data(i: int) -> bytes:
    return P.build_tcp(
        S, R, 40000, 5201, seq(i), IRS, P.ACK, 500, P.timestamp_option(100 + i, 7), bytes([i]) * MSS
    )


def ack(n: int) -> bytes:
    return P.build_tcp(R, S, 5201, 40000, IRS, seq(n), P.ACK, 500, P.timestamp_option(7, 100))


def net_with(n: int, links: list[tuple[int, int]], exts: list[str]) -> tuple[SimNetwork, list[list[object]]]:
    net = SimNetwork(n, lambda ctx: create(ctx, {"name": "dsr"}), links, seed=3)
    attached = []
    for s, node in net.nodes.items():
        agent = EndpointAgent(station_ip_bytes(s), kernel=FakeKernel())
        node.runtime.endpoint = agent
        node.ctx.endpoint = TcpControl(agent)
        attached.append(attach_extensions(node.ctx, node.runtime.protocol, exts))
    return net, attached


def epln(att: list[list[object]], s: int) -> Epln:
    e = att[s - 1][0]
    assert isinstance(e, Epln)
    return e


def dsr(net: SimNetwork, s: int) -> DsrRouting:
    p = net.nodes[s].runtime.protocol
    assert isinstance(p, DsrRouting)
    return p


def warm_up(net: SimNetwork) -> None:
    """Data 0..2 delivered, the ACK for 0 back at the sender: snd_una = seq(1), snd_nxt = seq(3)."""
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    net.inject(4, ack(1))
    for i in (1, 2):
        net.inject(1, data(i))
    net.run_until(2 * NS_PER_S)


def rerrs_from(net: SimNetwork, s: int) -> list[tuple[int, int, list[DsrOption]]]:
    out = []
    for t in net.trace:
        if t.src == s:
            dp = parse(t.packet)
            # Route Error packets (not the Route Requests carrying a gratuitous Route Error)
            if dp.find(RouteError) is not None and dp.find(RouteRequest) is None:
                out.append((t.t_ns, t.dst, dp.options))
    return out


def test_drop_list_and_conn_list_at_a_link_break_then_algorithm_2() -> None:
    net, att = net_with(4, [(1, 2), (2, 3), (3, 4)], ["epln"])
    warm_up(net)
    net.link_down(2, 3)
    for i in (3, 4, 5):
        net.inject(1, data(i))
    net.run_until(3 * NS_PER_S)
    # node 2: data 3 met the break, 4 and 5 waited in the IFQ for the same next hop: all recorded
    dl = list(epln(att, 2).drop_list)
    assert [(d.ptype, d.seqno, d.source_route, d.reason) for d in dl] == [
        ("data", seq(i), (1, 2, 3, 4), "link_failure") for i in (3, 4, 5)
    ]
    assert all((d.src, d.sport, d.dst, d.dport) == (S, 40000, R, 5201) for d in dl)
    # one ROUTE ERROR to the sender carrying the conn_list
    ((_t, to, opts),) = rerrs_from(net, 2)
    assert to == 1
    (cl,) = [o for o in opts if isinstance(o, ConnListOption)]
    assert cl.conn_list == (ConnInfo(S, R, 40000, 5201, "data", tuple((seq(i), True) for i in (3, 4, 5))),)
    # the sender: Algorithm 2, exactly
    d = [(x.seqno, x.pkt_lost, x.retransmitted, x.thaw_seqno, x.lost_pkt) for x in epln(att, 1).decisions]
    assert d == [
        (seq(3), True, True, seq(3), ()),  # freeze, thaw timer idle: thaw_seqno, retransmit now
        (seq(4), True, False, seq(3), (seq(4),)),  # > thaw_seqno: recorded in lost_pkt
        (seq(5), True, False, seq(3), (seq(4), seq(5))),
    ]
    agent1 = net.nodes[1].runtime.endpoint
    assert isinstance(agent1, EndpointAgent)
    assert agent1.conns[CONN].stats["agent_rexmt"] == 1
    assert net.nodes[1].ctx.counters.extra["epln_early_retransmissions"] == 1
    assert net.nodes[2].ctx.counters.extra["epln_conn_list_sent"] == 1
    # the thawing ACK releases the remaining lost packets (lost_pkt)
    net.link_up(2, 3)
    net.run_until(6 * NS_PER_S)
    c = agent1.conns[CONN]
    net.inject(4, ack(4))
    net.run_until(7 * NS_PER_S)
    assert c.hold is None
    assert c.stats["agent_rexmt"] >= 3  # 3 early + 4 and 5 from lost_pkt (probes not counted)


def test_salvaging_node_relays_the_notification_over_a_cached_route() -> None:
    #  1 - 2 - 3 - 4       node 2 salvages over 2-m-4, node m then meets a broken m-4
    #       \- 5 -/
    net, att = net_with(5, [(1, 2), (2, 3), (3, 4), (2, 5), (5, 4)], ["epln"])
    warm_up(net)
    route = dsr(net, 1).cache.find(4, net.now_ns)
    assert route is not None and len(route) == 4 and route[1] == 2
    bad, m = route[2], ({3, 5} - {route[2]}).pop()  # node 2 salvages over the other middle node
    net.link_down(2, bad)
    net.link_down(m, 4)
    dsr(net, 2).add_route((2, m, 4), primary=True)
    net.inject(1, data(3))
    net.run_until(3 * NS_PER_S)
    assert net.nodes[2].ctx.counters.extra["salvaged"] >= 1
    # node m dropped the salvaged packet and told the salvager (Address[1] = node 2)
    assert [(d.seqno, d.source_route) for d in epln(att, m).drop_list] == [(seq(3), (2, m, 4))]
    ((_t, to5, opts5),) = rerrs_from(net, m)
    assert to5 == 2
    assert [o for o in opts5 if isinstance(o, ConnListOption)][0].conn_list[0].seqnos == ((seq(3), True),)
    # node 2: its own ROUTE ERROR (salvaged: pkt_lost false), then the relay to the sender
    sent2 = [(to, [o for o in opts if isinstance(o, ConnListOption)]) for _t, to, opts in rerrs_from(net, 2)]
    assert [(to, cl[0].conn_list[0].seqnos) for to, cl in sent2] == [
        (1, ((seq(3), False),)),
        (1, ((seq(3), True),)),
    ]
    assert epln(att, 2).counters["relayed_to_sender"] == 1
    # the sender: freeze on the salvaged notice (no retransmission), then the loss (retransmit)
    d = [(x.seqno, x.pkt_lost, x.retransmitted, x.thaw_seqno) for x in epln(att, 1).decisions]
    assert d == [(seq(3), False, False, seq(3)), (seq(3), True, True, seq(3))]


@pytest.mark.parametrize(
    ("notices", "expect"),
    [
        # (seq index, pkt_lost) in order -> (retransmitted..., final thaw_seqno index, lost_pkt indices)
        ([(3, False)], ([False], 3, [])),
        ([(3, True)], ([True], 3, [])),
        ([(4, False), (3, True)], ([False, True], 3, [])),  # lower seqno: thaw_seqno moves down
        ([(3, True), (3, True)], ([True, True], 3, [])),  # equal: retransmit again
        ([(3, True), (4, True), (4, True)], ([True, False, False], 3, [4])),  # no duplicate
        ([(3, False), (4, False)], ([False, False], 3, [])),  # salvaged above: nothing recorded
        ([(0, True)], ([False], None, [])),  # acknowledged already: dropped
        ([(9, True)], ([False], None, [])),  # beyond what was sent: dropped
    ],
)
def test_algorithm_2_table(
    notices: list[tuple[int, bool]], expect: tuple[list[bool], int | None, list[int]]
) -> None:
    net, att = net_with(4, [(1, 2), (2, 3), (3, 4)], ["epln"])
    warm_up(net)
    for i in (3, 4, 5):
        net.inject(1, data(i))
    net.run_for(1)
    ext = epln(att, 1)
    e = ConnInfo(S, R, 40000, 5201, "data", tuple((seq(i), lost) for i, lost in notices))
    acts = ext.on_route_error_received(
        received(RouteError(2, 1, unreachable=3), [ConnListOption((e,))], net.now_ns)
    )
    rex, thaw, lost = expect
    assert [x.retransmitted for x in ext.decisions] == rex
    assert sum(isinstance(a, ToNetwork) for a in acts) == sum(rex)
    agent = net.nodes[1].runtime.endpoint
    assert isinstance(agent, EndpointAgent)
    h = agent.conns[CONN].hold
    if thaw is None:
        assert h is None
    else:
        assert h is not None and h.thaw_seqno == seq(thaw) and h.lost_pkt == [seq(i) for i in lost]


def test_notification_for_another_station_or_nested_is_not_used() -> None:
    net, att = net_with(4, [(1, 2), (2, 3), (3, 4)], ["epln"])
    warm_up(net)
    e = ConnInfo(S, R, 40000, 5201, "data", ((seq(1), True),))
    ext3 = epln(att, 3)
    assert (
        ext3.on_route_error_received(
            received(
                RouteError(2, 3, unreachable=9),
                [RouteError(4, 3, unreachable=5), ConnListOption((e,))],
                net.now_ns,
            )
        )
        == []
    )  # nested (num_route_error > 1): DSR re-sends it, EPLN does not relay
    assert (
        epln(att, 1).on_route_error_received(
            received(RouteError(2, 1, unreachable=3), [ConnListOption((e,))], net.now_ns, for_me=False)
        )
        == []
    )


def test_params_and_protocol_checked() -> None:
    net, _ = net_with(2, [(1, 2)], [])
    node = net.nodes[1]
    with pytest.raises(ParamError):
        attach_extensions(
            node.ctx, node.runtime.protocol, [{"name": "epln", "params": {"drop_list_size": 0}}]
        )
    with pytest.raises(ParamError):
        attach_extensions(node.ctx, node.runtime.protocol, [{"name": "epln", "params": {"nope": 1}}])


def test_epln_bead_dsr_update_survive_mutated_frames() -> None:
    """The three Yu 2004 extensions on one DSR node: 5,000 mutated notifications, data and ACKs
    (received, forwarded, overheard, with TX failures) raise nothing."""
    import random

    from nodes.core import NS_PER_MS
    from nodes.core.events import FromAir, FromLocal, TxStatus
    from nodes.core.protocol import NodeContext
    from nodes.core.runtime import NodeRuntime
    from nodes.extensions.dsr_update import CacheUpdateOption
    from nodes.protocols.dsr.options import SourceRoute, build
    from nodes.protocols.dsr.srcroute import add_source_route

    class _IO:
        def transmit(self, frame: object) -> None:
            pass

        def deliver_local(self, packet: bytes) -> None:
            pass

        def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
            pass

    me = 3
    ctx = NodeContext(station=me, n_stations=8, rng=random.Random(1), promiscuous=True)
    proto = DsrRouting(ctx)
    agent = EndpointAgent(station_ip_bytes(me), kernel=FakeKernel())
    rt = NodeRuntime(ctx, proto, _IO())
    rt.endpoint = agent
    ctx.endpoint = TcpControl(agent)
    attach_extensions(ctx, proto, ["epln", "bead", "dsr_update"])
    rt.start(0)
    e_data = ConnInfo(S, R, 40000, 5201, "data", ((seq(1), True), (seq(2), False)))
    e_ack = ConnInfo(R, S, 5201, 40000, "ack", ((seq(1), True),))
    seeds = [
        build(2, 4, [SourceRoute((3,), 1), RouteError(2, 4, unreachable=7), ConnListOption((e_data, e_ack))]),
        build(4, 1, [SourceRoute((3, 2), 2), RouteError(4, 1, unreachable=5), ConnListOption((e_ack,))]),
        build(2, me, [SourceRoute((), 0), RouteError(2, me, unreachable=6), CacheUpdateOption(2, 6)]),
        build(2, me, [SourceRoute((), 0), RouteError(2, me, unreachable=1), ConnListOption((e_data,))]),
        add_source_route(ack(2), (3,)),
        add_source_route(data(2), (3,)),
    ]
    rng = random.Random(7)
    now = 0
    for i in range(5000):
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(4)):
            b[rng.randrange(20, len(b))] = rng.randrange(256)
        if rng.random() < 0.1:
            b = b[: rng.randrange(20, len(b))]
        overheard = rng.random() < 0.1
        rt.handle(FromAir(bytes(b), rng.randint(1, 6), me if not overheard else 5, overheard=overheard), now)
        if rt.mac_busy is not None:
            rt.tx_done(TxStatus(rt.mac_busy, rng.random() < 0.6, 1, 1), now)
        if i % 50 == 0:
            rt.handle(FromLocal(data(i % 7)), now)
        now += NS_PER_MS
        rt.fire_due(now)
    extra = ctx.counters.extra
    assert extra["link_failures"] > 0 and extra["dsr_update_received"] > 0, dict(extra)
