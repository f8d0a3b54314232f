"""Cohen & Levin Route-control in virtual time: Table I (cases I2-a..d, expiry after Delta) at
forwarding stations, the NEW flag written into the IPv4 ID, S3 (route-number increment on NR=1)
and SR-5 (a single valid dupACK retransmits) at the sender (docs/extensions-aodv.md)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from nodes.core import NS_PER_MS, NS_PER_S, ParamError
from nodes.core.addr import station_ip_bytes
from nodes.core.events import Action, ToNetwork
from nodes.core.ipv4 import header_checksum_ok
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.route_control import (
    RcEntry,
    RcTable,
    RouteControl,
    RouteControlParams,
    Tx,
    rn_lt,
    sr5_valid,
    table_i,
)
from nodes.protocols.aodv import create as aodv_create
from nodes.protocols.aodv.events import AodvIpForward
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, TcpAck, TcpDupack, TcpSegmentSent

S, D = station_ip_bytes(1), station_ip_bytes(4)
CONN = ConnId(S, 40000, D, 5201)


def seg(rn: int, new: bool, seq: int = 1000, src: bytes = S, dst: bytes = D) -> bytes:
    ip_id = (0x8000 if new else 0) | rn
    return P.build_tcp(src, dst, 40000, 5201, seq, 1, P.ACK, 500, b"", b"x" * 100, ip_id=ip_id)


# ---------------------------------------------------------------------------------- Table I
@pytest.mark.parametrize(
    ("prev", "next_hop", "rn", "new", "expected", "case"),
    [
        (None, 7, 5, False, False, "none"),  # no (s, d)-entry: unchanged
        (None, 7, 5, True, True, "none"),
        (RcEntry(7, 5, True, 0), 7, 5, False, True, "I2-a"),  # same route-number, previous NEW=1
        (RcEntry(8, 5, True, 0), 7, 5, False, True, "I2-c"),  # next node changed (I2-c first)
        (RcEntry(7, 4, True, 0), 7, 5, False, False, "I2-b"),  # route-number moved on: unchanged
        (RcEntry(7, 4, True, 0), 7, 5, True, True, "I2-b"),
        (RcEntry(8, 4, False, 0), 7, 5, False, True, "I2-c"),
        (RcEntry(8, 5, False, 0), 7, 5, False, True, "I2-c"),
        (RcEntry(7, 5, False, 0), 7, 5, False, False, "I2-d"),  # same node, previous NEW=0
        (RcEntry(7, 4, False, 0), 7, 5, True, True, "I2-d"),
        (RcEntry(7, 0x7FFF, True, 0), 7, 0, False, False, "I2-b"),  # 15-bit wrap-around
    ],
)
def test_table_i(prev: RcEntry | None, next_hop: int, rn: int, new: bool, expected: bool, case: str) -> None:
    assert table_i(prev, next_hop, rn, new) == (expected, case)


def test_route_number_comparison_wraps() -> None:
    assert rn_lt(4, 5) and rn_lt(0x7FFF, 0) and not rn_lt(5, 5) and not rn_lt(5, 4)


def test_entries_expire_after_delta() -> None:
    t = RcTable(RouteControlParams(delta_s=1.0).delta_ns)
    assert t.forward(1, 4, 2, 5, False, 0) == (False, "none")
    assert t.forward(1, 4, 3, 5, False, 999 * NS_PER_MS) == (True, "I2-c")  # within Delta
    # I2-a afterwards: NEW stays 1 for the same route-number on the new next hop
    assert t.forward(1, 4, 3, 5, False, 1_500 * NS_PER_MS) == (True, "I2-a")
    # no (s, d)-packet for Delta: the entry is gone, NEW unchanged
    assert t.forward(1, 4, 2, 5, False, 2_500 * NS_PER_MS) == (False, "none")
    assert t.get(1, 4, 3_499 * NS_PER_MS) is not None and t.get(1, 4, 3_500 * NS_PER_MS) is None


def test_forwarding_station_sets_new_in_the_ip_id() -> None:
    ctx = NodeContext(2, 4, random.Random(1))
    rc = RouteControl(ctx, RouteControlParams(), None)
    a = bytearray(seg(5, False))
    rc.on_data_forward(AodvIpForward(now_ns=0, packet=a, prev_hop=1, next_hop=3))
    assert bytes(a) == seg(5, False)
    b = bytearray(seg(5, False, 1100))
    rc.on_data_forward(
        AodvIpForward(now_ns=NS_PER_MS, packet=b, prev_hop=1, next_hop=7)
    )  # the next hop changed
    assert P.read_rc_mark(b) == (5, True) and header_checksum_ok(b)
    assert bytes(b[20:]) == seg(5, False, 1100)[20:]
    c = bytearray(seg(6, False, 1200))  # the sender incremented the route-number (S3)
    rc.on_data_forward(AodvIpForward(now_ns=2 * NS_PER_MS, packet=c, prev_hop=1, next_hop=7))
    assert P.read_rc_mark(c) == (6, False)
    assert ctx.counters.extra["rc_new_set"] == 1
    assert ctx.counters.extra["rc_table_I2-c"] == 1 and ctx.counters.extra["rc_table_I2-b"] == 1
    # non-TCP and non-atomic packets are left alone
    frag = bytearray(P.build_tcp(S, D, 1, 2, 0, 0, P.ACK, 1, b"", b"y", ip_id=5, df=False))
    rc.on_data_forward(AodvIpForward(now_ns=3 * NS_PER_MS, packet=frag, prev_hop=1, next_hop=9))
    assert P.read_rc_mark(frag) is None


def test_route_change_in_an_aodv_chain_sets_new_at_the_station_that_moved_the_flow() -> None:
    """1-2-3-4, then 2 reaches 4 directly: 2 forwards the (1, 4) flow to a new next node."""
    nets = SimNetwork(4, lambda ctx: _aodv_rc(ctx), [(1, 2), (2, 3), (3, 4)], seed=3)
    for k in range(3):
        nets.inject(1, seg(9, False, 1000 + 100 * k), at_ns=k * 100 * NS_PER_MS)
    nets.run_until(NS_PER_S)
    assert [P.read_rc_mark(p) for _, p in nets.nodes[4].delivered] == [(9, False)] * 3
    p2 = nets.nodes[2].runtime.protocol
    e = p2.table.lookup(4, NS_PER_S)  # type: ignore[attr-defined]
    e.next_hop, e.hop_count = 4, 1  # a new route via a direct link (as after a RREP)
    nets.link_up(2, 4)
    nets.inject(1, seg(9, False, 1300), at_ns=NS_PER_S)
    nets.run_until(2 * NS_PER_S)
    assert P.read_rc_mark(nets.nodes[4].delivered[-1][1]) == (9, True)
    assert nets.nodes[2].ctx.counters.extra["rc_table_I2-c"] == 1


def _aodv_rc(ctx: NodeContext) -> Any:
    proto = aodv_create(ctx, {"name": "aodv"})
    attach_extensions(ctx, proto, [{"name": "route_control", "params": {"delta_s": 2.0}}])
    return proto


def test_params_are_named() -> None:
    with pytest.raises(ParamError):
        attach_extensions(
            NodeContext(1, 2, random.Random(1)),
            aodv_create(NodeContext(1, 2, random.Random(1)), {"name": "aodv"}),
            [{"name": "route_control", "params": {"delta": 1}}],
        )


# ---------------------------------------------------------------------------------- SR-5
T_J, T_I = Tx(5, 100, False), Tx(5, 200, False)


@pytest.mark.parametrize(
    ("rr", "nr", "tx_i", "tx_j", "valid"),
    [
        (5, False, T_I, T_J, True),
        (4, False, T_I, T_J, False),  # (a) RR-number differs from i's route-number
        (5, False, Tx(5, 50, False), T_J, False),  # (b) i sent before j
        (5, False, T_I, Tx(4, 100, False), False),  # (c) j sent on another route-number
        (5, True, T_I, T_J, False),  # (c) i arrived over a new route (NR=1)
        (5, False, Tx(5, 200, True), T_J, False),  # (d) i's last transmission was an RTO's
        (5, False, None, T_J, False),
        (5, False, T_I, None, False),
    ],
)
def test_sr5_conditions(rr: int, nr: bool, tx_i: Tx | None, tx_j: Tx | None, valid: bool) -> None:
    assert sr5_valid(rr, nr, tx_i, tx_j) is valid


class FakeApi:
    """The slice of ``TcpControl`` Route-control uses."""

    def __init__(self) -> None:
        self.numbers: dict[bytes, int] = {}
        self.retransmitted: list[int] = []

    def route_number(self, dst: bytes) -> int:
        return self.numbers.get(dst, 0)

    def bump_route_number(self, dst: bytes) -> int:
        self.numbers[dst] = (self.numbers.get(dst, 0) + 1) & P.RC_ROUTE_MASK
        return self.numbers[dst]

    def retransmit(self, conn: ConnId, seq: int, now_ns: int) -> list[Action]:
        self.retransmitted.append(seq)
        return [ToNetwork(b"rexmt")]


def sender() -> tuple[RouteControl, FakeApi]:
    api = FakeApi()
    return RouteControl(NodeContext(1, 4, random.Random(1)), RouteControlParams(), api), api  # type: ignore[arg-type]


def test_single_valid_dupack_retransmits_once() -> None:
    rc, api = sender()
    for k in range(4):
        rc.on_segment_sent(
            TcpSegmentSent(
                now_ns=k * NS_PER_MS, conn=CONN, seq=1000 + 100 * k, length=100, retransmission=False
            )
        )
    acts = rc.on_dupack(
        TcpDupack(now_ns=5 * NS_PER_MS, conn=CONN, ack=1100, count=1, rc_echo=(0, False), rc_mark=(0, False))
    )
    assert acts == [ToNetwork(b"rexmt")] and api.retransmitted == [1100]
    assert (
        rc.on_dupack(
            TcpDupack(
                now_ns=6 * NS_PER_MS, conn=CONN, ack=1100, count=2, rc_echo=(0, False), rc_mark=(0, False)
            )
        )
        == []
    )  # once per hole
    assert rc.ctx.counters.extra["rc_fast_retransmits"] == 1


def test_dupack_after_a_route_change_waits() -> None:
    rc, api = sender()
    for k in range(4):
        rc.on_segment_sent(
            TcpSegmentSent(
                now_ns=k * NS_PER_MS, conn=CONN, seq=1000 + 100 * k, length=100, retransmission=False
            )
        )
    assert (
        rc.on_dupack(
            TcpDupack(now_ns=5 * NS_PER_MS, conn=CONN, ack=1100, count=1, rc_echo=(0, True), rc_mark=None)
        )
        == []
    )  # NR=1: new route
    assert api.numbers[D] == 1  # S3: route-number incremented on RR-number = s_d and NR = 1
    rc.on_segment_sent(
        TcpSegmentSent(now_ns=7 * NS_PER_MS, conn=CONN, seq=1400, length=100, retransmission=False)
    )  # i on route-number 1, j on 0
    assert (
        rc.on_dupack(
            TcpDupack(now_ns=8 * NS_PER_MS, conn=CONN, ack=1100, count=2, rc_echo=(1, False), rc_mark=None)
        )
        == []
    )  # (c) fails
    assert api.retransmitted == [] and rc.ctx.counters.extra["rc_dupack_not_valid"] == 2


def test_s3_needs_the_current_route_number() -> None:
    rc, api = sender()
    rc.on_ack(TcpAck(now_ns=0, conn=CONN, ack=1100, acked_bytes=100, rc_echo=(0, True)))
    rc.on_ack(
        TcpAck(now_ns=1, conn=CONN, ack=1200, acked_bytes=100, rc_echo=(0, True))
    )  # a second ACK for the old number: no bump
    assert api.numbers[D] == 1
    rc.on_ack(TcpAck(now_ns=2, conn=CONN, ack=1300, acked_bytes=100, rc_echo=(1, False)))
    assert api.numbers[D] == 1


def test_rtt_restart_is_not_realised() -> None:
    from nodes.tcpctl.api import TcpControl

    assert TcpControl.restart_rtt(None, CONN) is False  # type: ignore[arg-type]
