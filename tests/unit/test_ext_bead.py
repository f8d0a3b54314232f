"""BEAD (Yu 2004 s4.3.2-4.3.3, Algorithm 1) in virtual time over the real DSR core: a lost ACK
goes into the drop_list and the conn_list of the ROUTE ERROR to the TCP receiver; a node
forwarding that notification with a cached route to the TCP sender retransmits the highest lost
ACK once and sets ack_sent; otherwise the TCP receiver's router does."""

from __future__ import annotations

from nodes.core import NS_PER_S
from nodes.core.addr import station_ip_bytes
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.bead import Bead, highest
from nodes.extensions.epln import ConnInfo, ConnListOption, LossNotifier
from nodes.protocols.dsr import create
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.options import RouteError, parse
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import FakeKernel

S, R = station_ip_bytes(1), station_ip_bytes(4)
ACK_CONN = ConnId(R, 5201, S, 40000)  # as the TCP receiver names it (IP source of the ACKs)
MSS = 500
ISS, IRS = 1_000_000, 5_000_000


def data(i: int) -> bytes:
    return P.build_tcp(S, R, 40000, 5201, ISS + i * MSS, IRS, P.ACK, 500, b"", bytes([i]) * MSS)


def ack(n: int) -> bytes:
    return P.build_tcp(R, S, 5201, 40000, IRS, ISS + n * MSS, P.ACK, 500)


def setup(n: int) -> tuple[SimNetwork, dict[int, Bead]]:
    net = SimNetwork(n, lambda ctx: create(ctx, {"name": "dsr"}), [(1, 2), (2, 3), (3, 4)], seed=5)
    beads: dict[int, Bead] = {}
    for s, node in net.nodes.items():
        agent = EndpointAgent(station_ip_bytes(s), kernel=FakeKernel())
        node.runtime.endpoint = agent
        node.ctx.endpoint = TcpControl(agent)
        (b,) = attach_extensions(node.ctx, node.runtime.protocol, ["bead"])
        assert isinstance(b, Bead)
        beads[s] = b
    net.inject(1, data(0))
    net.run_until(NS_PER_S)
    net.inject(4, ack(1))
    net.inject(1, data(1))
    net.run_until(2 * NS_PER_S)
    return net, beads


def dsr(net: SimNetwork, s: int) -> DsrRouting:
    p = net.nodes[s].runtime.protocol
    assert isinstance(p, DsrRouting)
    return p


def acks_delivered(net: SimNetwork, s: int) -> list[int]:
    out = []
    for _t, p in net.nodes[s].delivered:
        t = P.parse_tcp(p)
        if t is not None and t.payload_len == 0:
            out.append((t.ack - ISS) // MSS)
    return out


def notifications(net: SimNetwork, src: int, dst: int) -> list[ConnInfo]:
    out: list[ConnInfo] = []
    for t in net.trace:
        if t.src == src and t.dst == dst:
            dp = parse(t.packet)
            for o in dp.options:
                if isinstance(o, ConnListOption) and dp.find(RouteError) is not None:
                    out.extend(o.conn_list)
    return out


def test_forwarder_retransmits_the_highest_lost_ack_once_and_sets_ack_sent() -> None:
    net, beads = setup(5)
    assert acks_delivered(net, 1) == [1]
    # node 3 gets a second way to the sender (3-5-1), learned only by node 3
    net.link_down(1, 2)
    net.link_up(3, 5)
    net.link_up(5, 1)
    dsr(net, 3).add_route((3, 5, 1), primary=True)
    for n in (2, 3):
        net.inject(4, ack(n))
    net.run_until(3 * NS_PER_S)
    # node 2 dropped both ACKs (no salvage route) and recorded them
    dl = list(LossNotifier.of(net.nodes[2].ctx).drop_list)
    assert [(d.ptype, d.seqno) for d in dl] == [("ack", ISS + 2 * MSS), ("ack", ISS + 3 * MSS)]
    (e,) = notifications(net, 2, 3)
    assert (e.ptype, e.lost, e.ack_sent, e.src, e.dst) == ("ack", (ISS + 2 * MSS, ISS + 3 * MSS), False, R, S)
    assert highest(e) == ISS + 3 * MSS
    # node 3 forwards the notification: retransmits ACK 3 (the highest) over 3-5-1, marks ack_sent
    assert [(c, a, role) for _t, c, a, role in beads[3].retransmitted] == [
        (ACK_CONN, ISS + 3 * MSS, "forwarder")
    ]
    (e4,) = notifications(net, 3, 4)
    assert e4.ack_sent and e4.lost == e.lost
    # ... so the receiver's router does not retransmit; the sender gets the ACK once
    assert beads[4].retransmitted == []
    assert acks_delivered(net, 1) == [1, 3]
    assert net.nodes[3].ctx.counters.extra["bead_acks_retransmitted"] == 1
    assert sum(b.counters["acks_retransmitted"] for b in beads.values()) == 1


def test_receiver_retransmits_when_nobody_on_the_path_can() -> None:
    net, beads = setup(6)
    net.link_down(1, 2)
    net.link_up(4, 6)
    net.link_up(6, 1)
    net.inject(4, ack(2))
    # the receiver learns the other way only after its ACK left over 4-3-2-1
    net.at(net.now_ns + 2_000_000, lambda: dsr(net, 4).add_route((4, 6, 1), primary=True))
    net.run_until(3 * NS_PER_S)
    assert beads[3].retransmitted == []
    (e4,) = notifications(net, 3, 4)
    assert not e4.ack_sent
    assert [(c, a, role) for _t, c, a, role in beads[4].retransmitted] == [
        (ACK_CONN, ISS + 2 * MSS, "receiver")
    ]
    assert acks_delivered(net, 1) == [1, 2]


def test_no_route_anywhere_no_retransmission() -> None:
    net, beads = setup(4)
    net.link_down(1, 2)
    net.inject(4, ack(2))
    net.run_until(3 * NS_PER_S)
    assert all(b.retransmitted == [] for b in beads.values())
    assert beads[4].counters["no_route"] == 1
    assert acks_delivered(net, 1) == [1]


def test_salvager_without_a_route_notifies_the_receiver_and_a_forwarder_retransmits() -> None:
    """Yu 2004 Fig. 3: C (2) salvages the ACK over C-I-H-A (2-5-6-1), I (5) meets a broken
    (5, 6) and tells C; C has no route to the sender, so it notifies the receiver E (4); D (3),
    forwarding that notification, has a route to A (3-7-1) and retransmits the ACK."""
    net, beads = setup(7)
    net.link_down(1, 2)
    for a, b in ((2, 5), (6, 1), (3, 7), (7, 1)):
        net.link_up(a, b)
    dsr(net, 2).add_route((2, 5, 6, 1), primary=True)
    net.inject(4, ack(2))
    net.at(net.now_ns + 2_000_000, lambda: dsr(net, 3).add_route((3, 7, 1), primary=True))
    net.run_until(3 * NS_PER_S)
    assert net.nodes[2].ctx.counters.extra["salvaged"] == 1
    assert [d.seqno for d in LossNotifier.of(net.nodes[5].ctx).drop_list] == [ISS + 2 * MSS]
    (e2,) = notifications(net, 5, 2)
    assert e2.ptype == "ack" and not e2.ack_sent
    assert beads[2].counters["notified_receiver"] == 1 and beads[2].retransmitted == []
    assert [(a, role) for _t, _c, a, role in beads[3].retransmitted] == [(ISS + 2 * MSS, "forwarder")]
    assert all(e.ack_sent for e in notifications(net, 3, 4))
    assert beads[4].retransmitted == []
    assert acks_delivered(net, 1) == [1, 2]
