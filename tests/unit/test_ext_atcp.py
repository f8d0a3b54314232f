"""ATCP (Liu & Singh 2001, Fig. 2 and section IV) over the endpoint agent in virtual time:
the transitions table-driven, dupACKs from the third on withheld, persist/quiet holds, one
segment resent in loss and again at ATCP's own (doubling) RTO timer, cwnd/ssthresh saved at the
entry into loss and restored at the exit, cwnd 1 on Destination Unreachable, the imminent-RTO
check at the 500 ms slowtimo ticks."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

import pytest

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.events import CancelTimer, Drop, SetTimer, ToKernel, ToNetwork
from nodes.core.protocol import NodeContext, ParamError
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
#: ATCP's RTO in the Rig after the first new ACK 10 ms after the segments were sent: RFC 6298 over
#: one 10 ms sample, srtt 10 ms + max(rto_min 200 ms, 4 x 5 ms); below the kernel's 300 ms
OWN_RTO = 210 * NS_PER_MS
LOSS_KEY = ("endpoint", "atcp", CID, "loss")


def data(i: int) -> bytes:
    return P.build_tcp(A, B, 40000, 5201, ISS + i * MSS, IRS, P.ACK, 500, b"", bytes([i]) * MSS)


def ack(n: int, flags: int = 0, window: int = 500) -> bytes:
    return P.build_tcp(B, A, 5201, 40000, IRS, ISS + n * MSS, P.ACK | flags, window)


class Rig:
    def __init__(self, **params: Any) -> None:
        self.kern = FakeKernel()
        self.kern.states[CID] = {"srtt_us": 100_000, "rto_est_us": 300_000}
        self.agent = EndpointAgent(A, kernel=self.kern)
        ctx = NodeContext(station=1, n_stations=3, rng=random.Random(1), log=logging.getLogger("t"))
        ctx.endpoint = TcpControl(self.agent)
        self.ctx = ctx
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
        return self.dupacks_of(1, n)

    def dupacks_of(self, k: int, n: int, window: int = 500) -> list[Any]:
        out: list[Any] = []
        for _ in range(n):
            out = self.inbound(ack(k, window=window))
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
    assert ToKernel(ack(1)) in acts


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


def test_third_dupack_withheld_persist_and_resend_first_unacked() -> None:
    r = Rig()
    r.inbound(ack(1))
    assert [type(a) for a in r.dupacks(2)] == [ToKernel]
    acts = r.inbound(ack(1))
    assert r.state == S.LOSS and r.hold == HoldMode.QUIET
    assert Drop(ack(1), "tcpctl_dupack_withheld") in acts
    # ATCP resends the first unacknowledged segment only (the offending one), and arms its own
    # timer at TCP's RTO
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(1)]
    assert SetTimer(LOSS_KEY, r.now + OWN_RTO) in acts
    assert r.atcp.counters["loss_dupack"] == 1 and r.atcp.counters["rexmt"] == 1
    # the kernel's segments are discarded in loss
    assert r.agent.on_outbound(data(1), r.now)[0] == Drop(data(1), "tcpctl_withheld")
    # no ACK: ATCP's own timer resends the same segment, and doubles
    t = r.now + OWN_RTO
    acts = r.agent.on_timer(LOSS_KEY, t)
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(1)]
    assert SetTimer(LOSS_KEY, t + 2 * OWN_RTO) in acts
    acts = r.agent.on_timer(LOSS_KEY, t + 2 * OWN_RTO)
    assert SetTimer(LOSS_KEY, t + 6 * OWN_RTO) in acts
    assert r.atcp.counters["rexmt"] == 3 and r.atcp.counters["rexmt_timer"] == 2
    # the new ACK goes to TCP unmodified (leaves persist), ATCP back to normal
    acts = r.inbound(ack(3))
    assert ToKernel(ack(3)) in acts
    assert r.atcp.state_of(CID) == S.NORMAL
    assert r.agent.conns[CID].hold is None


def test_loss_timer_is_capped() -> None:
    r = Rig(loss_rexmt_max=1.0)
    to_loss(r)
    t = r.now
    for _ in range(4):
        t += r.atcp.conns[CID].loss_rto
        r.agent.on_timer(LOSS_KEY, t)
    assert r.atcp.conns[CID].loss_rto == NS_PER_S


def test_dupacks_in_loss_never_reach_tcp() -> None:
    """In loss all dupACKs are withheld until the new ACK (TCP sees none; Linux, held at window 0,
    would take them as window updates, not dupACKs)."""
    r = Rig()
    to_loss(r)
    for _ in range(10):
        (a,) = r.inbound(ack(1))
        assert a == Drop(ack(1), "tcpctl_dupack_withheld")
    assert r.atcp.state_of(CID) == S.LOSS
    acts = r.inbound(ack(5))
    assert r.atcp.state_of(CID) == S.NORMAL and ToKernel(ack(5)) in acts
    # a new run of dupACKs (the next hole): the first two reach TCP again
    r.agent.on_outbound(data(5), r.now)
    r.agent.on_outbound(data(6), r.now)
    assert [type(a) for a in r.dupacks(2)] == [ToKernel]


def test_a_new_ack_resets_tcps_count() -> None:
    """Linux resets its Reno count of dupACKs (sacked_out) at an ACK that advances snd_una
    outside fast recovery (tcp_fastretrans_alert), so after 2 dupACKs and an ACK of one segment
    the next run's first two dupACKs reach TCP again and the third enters loss."""
    r = Rig()
    r.inbound(ack(1))
    assert [type(a) for a in r.dupacks(2)] == [ToKernel]
    r.inbound(ack(2))
    assert r.agent.conns[CID].kern.dupacks == 0
    assert [r.inbound(ack(2)) for _ in range(2)] == [[ToKernel(ack(2))]] * 2
    acts = r.inbound(ack(2))
    assert Drop(ack(2), "tcpctl_dupack_withheld") in acts and r.state == S.LOSS


def test_reordered_old_ack_tcp_never_counts_three() -> None:
    """Section III: under bit errors "TCP does not invoke congestion control". The Liu chain
    delays each packet independently, so a new ACK can overtake an older one: the old one (another
    window) must not hide the first dupACK of the next hole, or ATCP counts two where TCP counts
    three and lets TCP's third through (fast recovery: 16 in run 01b2ba)."""
    r = Rig()
    r.inbound(ack(1, window=500))
    r.inbound(ack(2, window=480))
    assert r.inbound(ack(1, window=500)) == [ToKernel(ack(1, window=500))]  # TCP ignores it
    assert [type(a) for a in r.dupacks_of(2, 2, window=480)] == [ToKernel]
    acts = r.inbound(ack(2, window=480))
    assert Drop(ack(2, window=480), "tcpctl_dupack_withheld") in acts and r.state == S.LOSS
    assert r.agent.conns[CID].stats["kernel_dupthresh"] == 0
    st = r.atcp.state()["conns"][str(CID)]["agent"]
    assert st["old_acks"] == 1 and st["kernel_dupthresh"] == 0 and st["dupacks_withheld"] == 1


@pytest.mark.parametrize(("restore_rto", "mode"), [(False, "cwnd"), (True, "old")])
def test_cwnd_saved_at_entry_restored_at_exit(restore_rto: bool, mode: str) -> None:
    """Section IV: asnd_cwnd; TCP's cwnd set back to it when ATCP takes TCP out of persist. The
    snapshot runs at the zero-window ACK that puts the kernel in persist (the same call). With
    ``restore_rto`` the exit is the ``old`` restore: the RTO at the entry is kept as a cap."""
    r = Rig(restore_rto=restore_rto)
    to_loss(r)
    i = r.kern.calls.index(("snapshot", CID))
    assert not [c for c in r.kern.calls if c[0] == "restore"]
    r.inbound(ack(4))
    assert r.kern.calls[i + 1 :] == [("restore", CID, mode)]
    assert r.atcp.counters["loss_exits"] == 1


def test_no_restore_when_off() -> None:
    r = Rig(restore_cwnd=False)
    to_loss(r)
    r.inbound(ack(4))
    assert r.kern.calls == []


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


def test_imminent_rto_lead_before_the_kernels_expiry() -> None:
    """Own RTO 210 ms (one 10 ms sample), lead min(250 ms, RTO / 2) = 105 ms: the timer fires
    105 ms after the new ACK at 10 ms, i.e. 105 ms before the kernel's timer would expire."""
    r = Rig()
    acts = r.inbound(ack(1), dt_ms=10)
    assert SetTimer(RTO_KEY, 10 * NS_PER_MS + OWN_RTO // 2) in acts
    acts = r.agent.on_timer(RTO_KEY, 10 * NS_PER_MS + OWN_RTO // 2)
    assert r.state == S.LOSS and r.hold == HoldMode.QUIET
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(1)]
    assert r.atcp.counters["loss_rto"] == 1


def test_imminent_lead_is_250ms_for_long_rtos() -> None:
    """RTT 2 s: own RTO 2 s + 4 x 1 s = 6 s; the kernel's (rto_est 5 s) is smaller and wins; the
    lead is the full 250 ms."""
    r = Rig()
    r.kern.states[CID] = {"srtt_us": 2_000_000, "rto_est_us": 5_000_000}
    acts = r.inbound(ack(1), dt_ms=2000)
    t = 2 * NS_PER_S
    assert SetTimer(RTO_KEY, t + 5 * NS_PER_S - 250 * NS_PER_MS) in acts


def test_progress_moves_the_imminent_timer() -> None:
    r = Rig()
    r.inbound(ack(1), dt_ms=10)
    acts = r.inbound(ack(2), dt_ms=50)  # 60 ms: second sample of 60 ms
    c = r.atcp.conns[CID]
    assert (c.srtt, c.rttvar) == (10 * NS_PER_MS + 50 * NS_PER_MS // 8, 5 * NS_PER_MS + 45 * NS_PER_MS // 4)
    rto = c.srtt + 200 * NS_PER_MS
    assert SetTimer(RTO_KEY, 60 * NS_PER_MS + rto - rto // 2) in acts
    # a stale timer (fired at the old time) re-arms instead of acting
    acts = r.agent.on_timer(RTO_KEY, 10 * NS_PER_MS + OWN_RTO // 2)
    assert r.state == S.NORMAL and acts == [SetTimer(RTO_KEY, 60 * NS_PER_MS + rto - rto // 2)]


def test_karn_no_sample_from_a_segment_atcp_resent() -> None:
    r = Rig()
    to_loss(r)
    c = r.atcp.conns[CID]
    before = (c.srtt, c.rttvar)
    r.inbound(ack(3), dt_ms=900)  # covers the resent segment 1: its 900+ ms are no RTT
    assert (c.srtt, c.rttvar) == before
    r.send_new(5)
    r.inbound(ack(6), dt_ms=40)  # segments 3, 4 (sent once at 0) and 5: a sample again
    assert (c.srtt, c.rttvar) != before


def test_nothing_outstanding_disarms_and_a_send_rearms() -> None:
    r = Rig()
    acts = r.inbound(ack(5))  # all acknowledged
    assert CancelTimer(RTO_KEY) in acts and r.atcp.conns[CID].rto_due is None
    acts = r.send_new(5)
    assert any(isinstance(a, SetTimer) and a.key == RTO_KEY for a in acts)


def test_first_segment_arms_with_the_default_rto() -> None:
    """Before any RTT sample the RTO is rto_default (1 s): the timer is 750 ms after the first
    segment."""
    kern = FakeKernel()
    agent = EndpointAgent(A, kernel=kern)
    atcp = Atcp(TcpControl(agent), AtcpParams(), logging.getLogger("t"))
    agent.on_inbound(ack(0), 0)
    acts = agent.on_outbound(data(0), 7 * NS_PER_MS)
    assert SetTimer(RTO_KEY, 757 * NS_PER_MS) in acts
    assert atcp.rto_ns(CID) == NS_PER_S


def test_imminent_rto_off() -> None:
    r = Rig(imminent_rto=False)
    acts = r.inbound(ack(1))
    assert not any(isinstance(a, SetTimer) and a.key == RTO_KEY for a in acts)


def test_counters_reach_the_router() -> None:
    r = Rig()
    to_loss(r)
    assert r.ctx.counters.extra["atcp_loss_dupack"] == 1
    assert r.ctx.counters.extra["atcp_rexmt"] == 1


def test_illegal_transition_is_rejected() -> None:
    r = Rig()
    r.unreachable()
    with pytest.raises(IllegalTransition, match="DISCONNECTED -> LOSS"):
        r.atcp._set(CID, S.LOSS, r.now, "test")


def test_loss_resend_window_resends_every_unacknowledged_segment() -> None:
    """The other reading of the loss state ("ATCP transmits the unacknowledged segments from
    TCP's send buffer"): at the entry and at each expiry of ATCP's timer every unacknowledged
    segment goes out again, in order; none of them gives ATCP an RTT sample (Karn)."""
    r = Rig(loss_resend="window")
    r.inbound(ack(1))
    r.dupacks(2)
    acts = r.inbound(ack(1))
    assert r.state == S.LOSS
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(i) for i in range(1, 5)]
    assert r.atcp.counters["rexmt"] == 4
    assert all(retx for _, retx in r.atcp.conns[CID].sent.values())
    # no ACK: ATCP's timer resends them all again, and doubles
    t = r.now + OWN_RTO
    acts = r.agent.on_timer(LOSS_KEY, t)
    assert [a.packet for a in acts if isinstance(a, ToNetwork)] == [data(i) for i in range(1, 5)]
    assert SetTimer(LOSS_KEY, t + 2 * OWN_RTO) in acts
    assert r.atcp.counters["rexmt"] == 8 and r.atcp.counters["rexmt_timer"] == 1
    srtt = r.atcp.conns[CID].srtt
    r.inbound(ack(5))
    assert r.atcp.state_of(CID) == S.NORMAL and r.atcp.conns[CID].srtt == srtt


def test_loss_resend_is_checked() -> None:
    with pytest.raises(ParamError, match="loss_resend must be one of first, window"):
        Rig(loss_resend="all")
