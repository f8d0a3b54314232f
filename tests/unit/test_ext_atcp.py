"""ATCP (Liu & Singh 2001, Fig. 2 and section IV) over the endpoint agent in virtual time:
the transitions table-driven, the third dupACK withheld, persist/quiet holds, retransmission in
loss, cwnd 1 on Destination Unreachable, the imminent-RTO timer at an exact time."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

import pytest

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.events import Drop, SetTimer, ToKernel, ToNetwork
from nodes.core.protocol import NodeContext
from nodes.extensions import attach_extensions
from nodes.extensions.atcp import TRANSITIONS, Atcp, AtcpParams, AtcpState, IllegalTransition
from nodes.protocols.static import StaticRouting
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent, HoldMode
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import FakeKernel

A, B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 3])
CID = ConnId(A, 40000, B, 5201)
MSS = 1000
ISS, IRS = 1_000_000, 5_000_000
RTO_KEY = ("endpoint", "atcp", CID, "rto")
LOSS_KEY = ("endpoint", "atcp", CID, "loss")


def data(i: int) -> bytes:
    return P.build_tcp(A, B, 40000, 5201, ISS + i * MSS, IRS, P.ACK, 500, b"", bytes([i]) * MSS)


def ack(n: int, flags: int = 0, window: int = 500) -> bytes:
    return P.build_tcp(B, A, 5201, 40000, IRS, ISS + n * MSS, P.ACK | flags, window)


class Rig:
    def __init__(self, **params: Any) -> None:
        self.kern = FakeKernel()
        self.kern.states[CID] = {"srtt_us": 100_000}
        self.agent = EndpointAgent(A, kernel=self.kern)
        ctx = NodeContext(station=1, n_stations=3, rng=random.Random(1), log=logging.getLogger("t"))
        ctx.endpoint = TcpControl(self.agent)
        (ext,) = attach_extensions(ctx, StaticRouting(ctx, {}), [{"name": "atcp", "params": params}])
        assert isinstance(ext, Atcp)
        self.atcp = ext
        self.now = 0
        self.agent.on_inbound(ack(0), 0)
        self.last: list[Any] = []
        for i in range(5):
            self.last = self.agent.on_outbound(data(i), 0)

    @property
    def state(self) -> AtcpState:
        return self.atcp.state_of(CID)

    @property
    def hold(self) -> HoldMode | None:
        h = self.agent.conns[CID].hold
        return None if h is None else h.mode

    def inbound(self, pkt: bytes, dt_ms: int = 10) -> list[Any]:
        self.now += dt_ms * NS_PER_MS
        self.last = self.agent.on_inbound(pkt, self.now)
        return self.last

    def dupacks(self, n: int) -> list[Any]:
        out: list[Any] = []
        for _ in range(n):
            out = self.inbound(ack(1))
        return out

    def unreachable(self) -> list[Any]:
        (icmp,) = self.agent.unreachable(CID)
        assert isinstance(icmp, ToKernel)
        return self.inbound(icmp.packet)

    def send_new(self, i: int = 5) -> list[Any]:
        self.now += NS_PER_MS
        self.last = self.agent.on_outbound(data(i), self.now)
        return self.last


def to_loss(r: Rig) -> None:
    r.inbound(ack(1))
    r.dupacks(3)


def to_congested(r: Rig) -> None:
    r.inbound(ack(1, P.ECE))


def to_disconnected(r: Rig) -> None:
    r.unreachable()


def probe_answered(r: Rig) -> None:
    # the kernel's persist probe passes (disconnected), the receiver answers it: normal at once
    r.agent.on_outbound(P.build_tcp(A, B, 40000, 5201, ISS + MSS - 1, IRS, P.ACK, 500), r.now)
    acts = r.inbound(ack(1))
    assert r.atcp.state_of(CID) == S.NORMAL
    # ... and the imminent-RTO timer runs again (segments lost in the outage are outstanding)
    assert SetTimer(RTO_KEY, r.now + 250 * NS_PER_MS) in acts


SETUP: dict[str, Callable[[Rig], Any]] = {
    "normal": lambda r: r.inbound(ack(1)),
    "loss": to_loss,
    "congested": to_congested,
    "disconnected": to_disconnected,
}
EVENTS: dict[str, Callable[[Rig], Any]] = {
    "3 dupACKs": lambda r: r.dupacks(3),
    "new ACK": lambda r: r.inbound(ack(2)),
    "ECN": lambda r: r.inbound(ack(2, P.ECE)),
    "unreachable": lambda r: r.unreachable(),
    "new segment": lambda r: r.send_new(),
    "probe answered": probe_answered,
}

S = AtcpState


@pytest.mark.parametrize(
    ("start", "event", "end", "hold"),
    [
        ("normal", "3 dupACKs", S.LOSS, HoldMode.QUIET),
        ("normal", "ECN", S.CONGESTED, None),
        ("normal", "unreachable", S.DISCONNECTED, HoldMode.PERSIST),
        ("normal", "new ACK", S.NORMAL, None),
        ("loss", "new ACK", S.NORMAL, None),
        ("loss", "ECN", S.CONGESTED, None),
        ("loss", "unreachable", S.DISCONNECTED, HoldMode.PERSIST),
        ("loss", "3 dupACKs", S.LOSS, HoldMode.QUIET),
        ("congested", "3 dupACKs", S.CONGESTED, None),
        ("congested", "new segment", S.NORMAL, None),
        ("congested", "unreachable", S.DISCONNECTED, HoldMode.PERSIST),
        ("disconnected", "new ACK", S.DISCONNECTED, HoldMode.PERSIST),  # in flight: answers no probe
        ("disconnected", "probe answered", S.NORMAL, None),
    ],
)
def test_transitions(start: str, event: str, end: AtcpState, hold: HoldMode | None) -> None:
    r = Rig()
    SETUP[start](r)
    assert r.state.name.lower() == start
    EVENTS[event](r)
    assert r.state == end
    assert r.hold == hold
    hist = r.atcp.conns[CID].history
    for _t, old, new, _cause in hist:
        assert AtcpState[new] in TRANSITIONS[AtcpState[old]]


def test_third_dupack_withheld_persist_and_retransmit_unacked() -> None:
    r = Rig()
    r.inbound(ack(1))
    assert [type(a) for a in r.dupacks(2)] == [ToKernel]
    acts = r.inbound(ack(1))
    assert r.state == S.LOSS and r.hold == HoldMode.QUIET
    assert Drop(ack(1), "tcpctl_dupack_withheld") in acts
    # ATCP sends TCP's unacknowledged segments itself (the agent's copies), then arms its timer
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(i) for i in (1, 2, 3, 4)]
    assert SetTimer(LOSS_KEY, r.now + NS_PER_S) in acts
    assert r.atcp.counters["loss_dupack"] == 1
    # the kernel's segments are discarded in loss
    assert r.agent.on_outbound(data(1), r.now)[0] == Drop(data(1), "tcpctl_withheld")
    # no ACK: ATCP's own timer retransmits again
    acts = r.agent.on_timer(LOSS_KEY, r.now + NS_PER_S)
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(i) for i in (1, 2, 3, 4)]
    # the new ACK goes to TCP unmodified (leaves persist), ATCP back to normal
    acts = r.inbound(ack(3))
    assert ToKernel(ack(3)) in acts
    assert r.atcp.state_of(CID) == S.NORMAL
    assert r.agent.conns[CID].hold is None


def test_congested_passes_dupacks_to_tcp() -> None:
    r = Rig()
    r.inbound(ack(1, P.ECE))
    assert r.state == S.CONGESTED
    acts = r.dupacks(3)
    assert r.state == S.CONGESTED and ToKernel(ack(1)) in acts  # "does not interfere"


def test_unreachable_sets_cwnd_one_and_consumes_the_icmp() -> None:
    r = Rig()
    acts = r.unreachable()
    assert r.state == S.DISCONNECTED and r.hold == HoldMode.PERSIST
    assert ("set_cwnd", CID, 1, 0) in r.kern.calls
    assert any(isinstance(a, Drop) and a.reason == "tcpctl_icmp_consumed" for a in acts)


def test_unreachable_about_a_receivers_ack_is_left_to_the_kernel() -> None:
    """A router answers every packet it cannot deliver, the receiver's pure ACKs too: "The ATCP
    layer is only active at the TCP sender", so a receiver's ATCP neither acts nor consumes it."""
    kern = FakeKernel()
    agent = EndpointAgent(B, kernel=kern)  # station B receives A's data and sends only ACKs
    atcp = Atcp(TcpControl(agent), AtcpParams(), logging.getLogger("t"))
    agent.on_inbound(data(0), 0)
    (a,) = agent.on_outbound(ack(1), NS_PER_MS)
    assert isinstance(a, ToNetwork)
    icmp = P.icmp_dest_unreachable(a.packet, bytes([10, 0, 0, 2]))
    assert agent.on_inbound(icmp, 2 * NS_PER_MS) == [ToKernel(icmp)]
    assert atcp.state_of(ConnId(B, 5201, A, 40000)) == S.NORMAL and not kern.calls


def test_imminent_rto_timer_exact_time_then_loss() -> None:
    """srtt 100 ms (kernel) + floor 200 ms - margin 50 ms: ATCP acts 250 ms after the last
    progress, before the kernel's RTO (>= srtt + 200 ms)."""
    r = Rig()
    assert r.atcp.conns[CID].rto_due == 250 * NS_PER_MS  # armed by the first segment at 0
    acts = r.inbound(ack(1), dt_ms=40)  # progress at 40 ms re-arms
    assert SetTimer(RTO_KEY, 290 * NS_PER_MS) in acts
    acts = r.agent.on_timer(RTO_KEY, 290 * NS_PER_MS)
    assert r.state == S.LOSS and r.hold == HoldMode.QUIET
    assert [a.packet for a in acts if isinstance(a, ToNetwork)][0] == data(1)
    assert r.atcp.counters["loss_rto"] == 1


def test_first_segment_arms_the_rto_timer() -> None:
    kern = FakeKernel()
    agent = EndpointAgent(A, kernel=kern)
    atcp = Atcp(TcpControl(agent), AtcpParams(srtt_default=0.5), logging.getLogger("t"))
    agent.on_inbound(ack(0), 0)
    acts = agent.on_outbound(data(0), 7 * NS_PER_MS)
    assert SetTimer(RTO_KEY, 7 * NS_PER_MS + 650 * NS_PER_MS) in acts  # 0.5 + 0.2 - 0.05 s
    assert atcp.state_of(CID) == S.NORMAL


def test_imminent_rto_off() -> None:
    r = Rig(imminent_rto=False)
    acts = r.inbound(ack(1))
    assert not any(isinstance(a, SetTimer) and a.key == RTO_KEY for a in acts)


def test_illegal_transition_is_rejected() -> None:
    r = Rig()
    r.unreachable()
    with pytest.raises(IllegalTransition, match="DISCONNECTED -> LOSS"):
        r.atcp._set(CID, S.LOSS, r.now, "test")
