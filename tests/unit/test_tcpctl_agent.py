"""The endpoint agent in virtual time (sans-I/O): tracking, hold/release, ELFN freeze/probe/thaw,
EPLN Algorithm 2, retransmission from copies, dupACK withholding, ECN, ICMP, Route-control marks."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import CancelTimer, Drop, SetTimer, ToKernel, ToNetwork
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import (
    AckView,
    AgentParams,
    ConnId,
    EndpointAgent,
    HoldMode,
    PollTimer,
    Restore,
    TcpAck,
    TcpDupack,
    ThawTimer,
)
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import Abra, FakeKernel, FixedAfterTwo

A, B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 3])
AP, BP = 40000, 5201
CID = ConnId(A, AP, B, BP)
MSS = 1000
ISS, IRS = 1_000_000, 5_000_000


def data(i: int, ts: int = 100) -> bytes:
    """The i-th data segment A -> B (seq ISS + i*MSS)."""
    return P.build_tcp(
        A,
        B,
        AP,
        BP,
        ISS + i * MSS,
        IRS,
        P.ACK | P.PSH,
        500,
        P.timestamp_option(ts, 7),
        bytes([i & 0xFF]) * MSS,
        ip_id=i,
    )


def ack(n: int, window: int = 500, ts: int = 7) -> bytes:
    """B's ACK for the first n segments."""
    return P.build_tcp(B, A, BP, AP, IRS, ISS + n * MSS, P.ACK, window, P.timestamp_option(ts, 100))


def kinds(acts: list[Any]) -> list[str]:
    return [type(a).__name__ for a in acts]


@pytest.fixture
def kern() -> FakeKernel:
    return FakeKernel()


@pytest.fixture
def agent(kern: FakeKernel) -> EndpointAgent:
    ag = EndpointAgent(A, AgentParams(), kernel=kern)
    ag.on_inbound(ack(0), 0)  # the connection exists, snd_una = ISS
    for i in range(5):
        assert ag.on_outbound(data(i), 0) == [ToNetwork(data(i))]
    return ag


def test_tracks_and_frees_copies(agent: EndpointAgent) -> None:
    c = agent.conns[CID]
    assert (c.snd_una, c.snd_nxt, len(c.segments)) == (ISS, ISS + 5 * MSS, 5)
    assert agent.on_inbound(ack(2), NS_PER_MS) == [ToKernel(ack(2))]
    assert list(c.segments) == [ISS + 2 * MSS, ISS + 3 * MSS, ISS + 4 * MSS]


def test_copies_are_bounded(kern: FakeKernel) -> None:
    ag = EndpointAgent(A, AgentParams(max_segments=3), kernel=kern)
    for i in range(5):
        ag.on_outbound(data(i), 0)
    assert list(ag.conns[CID].segments) == [ISS + 2 * MSS, ISS + 3 * MSS, ISS + 4 * MSS]
    assert ag.conns[CID].stats["copies_evicted"] == 2


def is_copy_of(a: object, n: int) -> bool:
    """``a`` sends segment ``n``: its sequence number and bytes, whatever timestamps it carries
    (the agent's copies carry the kernel's current ones, ``retransmit``'s ``fresh_ts``)."""
    if not isinstance(a, ToNetwork):
        return False
    v, w = P.parse_tcp(a.packet), P.parse_tcp(data(n))
    same = v is not None and w is not None and v.seq == w.seq and a.packet[52:] == data(n)[52:]
    return same and P.tcp_checksum_ok(a.packet)


def test_retransmit_sends_the_copy(agent: EndpointAgent) -> None:
    assert agent.retransmit(CID, ISS + 3 * MSS, 0) == [ToNetwork(data(3))]
    assert agent.retransmit(CID, ISS + 3 * MSS + 10, 0) == [ToNetwork(data(3))]  # inside the segment
    agent.on_inbound(ack(4), 0)
    assert agent.retransmit(CID, ISS + 3 * MSS, 0) == []  # already acknowledged


def test_retransmit_with_fresh_timestamps(agent: EndpointAgent) -> None:
    """The copy of segment 3 (TSval 100) sent 250 ms after the kernel's TSval 100 was seen: TSval
    350 (the kernel's ms clock now) and TSecr the peer's latest TSval, checksum right. That is the
    default (every extension's copies, as the kernel's own retransmissions); with
    ``fresh_ts=False`` the copy goes as it was."""
    agent.on_inbound(ack(1, ts=900), 0)
    (a,) = agent.retransmit(CID, ISS + 3 * MSS, 250 * NS_PER_MS)
    assert isinstance(a, ToNetwork)
    v = P.parse_tcp(a.packet)
    assert v is not None and (v.ts_val, v.ts_ecr) == (350, 900) and v.seq == ISS + 3 * MSS
    assert P.tcp_checksum_ok(a.packet) and a.packet[40 + 12 :] == data(3)[40 + 12 :]
    assert agent.retransmit(CID, ISS + 3 * MSS, 250 * NS_PER_MS, fresh_ts=False) == [ToNetwork(data(3))]


def test_dupacks_counted_and_third_withheld(agent: EndpointAgent) -> None:
    seen: list[int] = []
    agent.hooks.subscribe(TcpDupack, lambda ev: seen.append(ev.count))
    agent.set_withhold_dupacks(CID, {3})
    agent.on_inbound(ack(1), 0)
    out = [agent.on_inbound(ack(1), i) for i in range(1, 5)]
    assert seen == [1, 2, 3, 4]
    assert out[0] == [ToKernel(ack(1))]
    assert kinds(out[2]) == ["Drop"]
    assert out[3] == [ToKernel(ack(1))]
    extra = agent.add_dupacks(CID, 2)
    assert kinds(extra) == ["ToKernel", "ToKernel"]
    assert P.parse_tcp(extra[0].packet).ack == ISS + MSS  # type: ignore[union-attr]


def test_dupacks_withheld_from_the_third_on(agent: EndpointAgent) -> None:
    agent.set_withhold_dupacks(CID, set(), from_count=3)
    agent.on_inbound(ack(1), 0)
    out = [agent.on_inbound(ack(1), i) for i in range(1, 7)]
    assert [kinds(o) for o in out] == [["ToKernel"]] * 2 + [["Drop"]] * 4
    assert agent.on_inbound(ack(2), 8) == [ToKernel(ack(2))]  # a new ACK starts a new run
    assert kinds(agent.on_inbound(ack(2), 9)) == ["ToKernel"]


@pytest.mark.parametrize(
    ("seq", "ack_n", "window", "data", "outstanding", "kind"),
    [
        (IRS, 0, 500, False, True, "old"),  # below snd_una: tcp_ack() ignores it
        (IRS, 2, 500, False, True, "new"),
        (IRS, 1, 500, False, True, "dup"),
        (IRS, 1, 480, False, True, "dup"),  # smaller window: no update (tcp_may_update_window)
        (IRS, 1, 520, False, True, "update"),  # larger window: FLAG_WIN_UPDATE
        (IRS, 1, 0, False, True, "update"),  # zero window: always an update (!nwin)
        (IRS + 1, 1, 500, False, True, "update"),  # a later sequence number
        (IRS, 1, 500, True, True, "other"),  # data on it
        (IRS, 1, 500, False, False, "other"),  # nothing outstanding (!prior_packets)
    ],
)
def test_ackview_classifies_as_linux_tcp_ack(
    seq: int, ack_n: int, window: int, data: bool, outstanding: bool, kind: str
) -> None:
    """net/ipv4/tcp_input.c (6.x): tcp_ack() old_ack, FLAG_SND_UNA_ADVANCED, tcp_may_update_window
    (FLAG_WIN_UPDATE), FLAG_DATA, !prior_packets; the rest is a Reno dupACK (sacked_out + 1)."""
    v = AckView()
    v.see(IRS, ISS + MSS, 500, False, True)
    assert v.kind(seq, ISS + ack_n * MSS, window, data, outstanding) == kind
    v.see(seq, ISS + ack_n * MSS, window, data, outstanding)
    assert v.dupacks == (1 if kind == "dup" else 0)


def test_a_reordered_old_ack_does_not_hide_a_dupack(agent: EndpointAgent) -> None:
    """The Liu chain: a new ACK, then an older ACK that it overtook (another window), then the
    dupACKs of the next hole. Linux ignores the old ACK and counts the first dupACK; the agent
    compared it with the old ACK's window, counted two where the kernel counted three, and let
    the kernel's third through (15 of the 16 fast recoveries of run 01b2ba)."""
    seen: list[int] = []
    agent.hooks.subscribe(TcpDupack, lambda ev: seen.append(ev.count))
    agent.set_withhold_dupacks(CID, set(), from_count=3)
    agent.on_inbound(ack(1, window=500), 0)
    agent.on_inbound(ack(2, window=480), 1)
    assert agent.on_inbound(ack(1, window=500), 2) == [ToKernel(ack(1, window=500))]  # old
    out = [agent.on_inbound(ack(2, window=480), 3 + i) for i in range(3)]
    assert seen == [1, 2, 3]
    assert [kinds(o) for o in out] == [["ToKernel"], ["ToKernel"], ["Drop"]]
    c = agent.conns[CID]
    assert c.kern.dupacks == 2 and c.stats["kernel_dupthresh"] == 0 and c.stats["old_acks"] == 1


def test_a_dupack_with_a_smaller_window_counts(agent: EndpointAgent) -> None:
    """Linux keeps the larger window and counts the ACK (run 01b2ba, 49.78 s: the agent compared
    with the last ACK's window and counted two of the kernel's three)."""
    agent.set_withhold_dupacks(CID, set(), from_count=3)
    agent.on_inbound(ack(1, window=500), 0)
    out = [agent.on_inbound(ack(1, window=w), 1 + i) for i, w in enumerate((480, 500, 500))]
    assert [kinds(o) for o in out] == [["ToKernel"], ["ToKernel"], ["Drop"]]
    assert agent.conns[CID].stats["kernel_dupthresh"] == 0


def test_a_held_kernel_counts_no_dupack_and_a_new_ack_resets_its_count(agent: EndpointAgent) -> None:
    """A zero window is a window update for Linux: the ACKs a held sender gets are no dupACKs. A
    new ACK resets its count (tcp_fastretrans_alert resets Reno's sacked_out at an ACK that
    advances snd_una outside fast recovery)."""
    agent.on_inbound(ack(1), 0)
    agent.on_inbound(ack(1), 1)
    agent.on_inbound(ack(1), 2)
    c = agent.conns[CID]
    assert c.kern.dupacks == 2
    agent.hold(CID, HoldMode.QUIET, 3, "new_ack")
    for i in range(5):
        agent.on_inbound(ack(1), 4 + i)
    assert c.kern.dupacks == 2 and c.net.dupacks == 7
    agent.on_inbound(ack(2), 10)
    assert c.kern.dupacks == 0 and c.hold is None


def test_dupacks_the_kernel_would_count_as_its_third_are_withheld(agent: EndpointAgent) -> None:
    """The kernel's count, not only the network's: after two synthesized dupACKs the first from
    the network would be the kernel's third."""
    agent.set_withhold_dupacks(CID, set(), from_count=3)
    agent.on_inbound(ack(1), 0)
    agent.add_dupacks(CID, 2)
    assert agent.conns[CID].kern.dupacks == 2
    assert kinds(agent.on_inbound(ack(1), 1)) == ["Drop"]
    assert agent.conns[CID].stats["kernel_dupthresh"] == 0


def test_hold_rewrites_windows_and_release_restores(agent: EndpointAgent) -> None:
    acts = agent.hold(CID, HoldMode.PERSIST, 0)
    (zw,) = acts
    assert isinstance(zw, ToKernel)
    v = P.parse_tcp(zw.packet)
    assert v is not None and v.window == 0 and v.ack == ISS and v.ts_val == 7
    assert P.tcp_checksum_ok(zw.packet)
    (fwd,) = agent.on_inbound(ack(1), 1)
    assert isinstance(fwd, ToKernel) and P.parse_tcp(fwd.packet).window == 0  # type: ignore[union-attr]
    # PERSIST lets the kernel's probes out
    assert kinds(agent.on_outbound(data(5), 2)) == ["ToNetwork"]
    rel = agent.release(CID, 3)
    assert kinds(rel) == ["CancelTimer", "ToKernel"]
    assert P.parse_tcp(rel[1].packet).window == 500  # type: ignore[union-attr]


def test_elfn_freeze_probe_thaw_old(agent: EndpointAgent, kern: FakeKernel) -> None:
    t0 = 10 * NS_PER_S
    acts = agent.freeze(CID, t0, restore="old")
    assert kern.calls == [("snapshot", CID)]
    assert kinds(acts) == ["ToKernel", "SetTimer"]
    assert acts[1] == SetTimer(ThawTimer(CID), t0 + 2 * NS_PER_S)
    # frozen: the kernel's retransmission is withheld
    assert kinds(agent.on_outbound(data(0), t0 + 1)) == ["Drop"]
    # every 2 s: the probe is the copy of thaw_seqno's segment (snd_una by default)
    probe = agent.on_timer(ThawTimer(CID), t0 + 2 * NS_PER_S)
    assert probe[0] == SetTimer(ThawTimer(CID), t0 + 4 * NS_PER_S) and is_copy_of(probe[1], 0)
    probe2 = agent.on_timer(ThawTimer(CID), t0 + 4 * NS_PER_S)
    assert is_copy_of(probe2[1], 0)
    assert kern.calls == [("snapshot", CID)]
    # an ACK thaws: restore, forward unmodified, stop the thaw timer
    out = agent.on_inbound(ack(2), t0 + 4 * NS_PER_S + 5 * NS_PER_MS)
    assert kern.calls[-1] == ("restore", CID, "old")
    assert out == [CancelTimer(ThawTimer(CID)), ToKernel(ack(2))]
    assert agent.conns[CID].hold is None
    assert agent.conns[CID].stats["probes"] == 2


def test_elfn_an_ack_in_flight_thaws_before_any_probe(agent: EndpointAgent, kern: FakeKernel) -> None:
    """Yu 2004 s3.1: frozen with the probe at 409, "node 0 receives the ACK for packet 408, and
    thus TCP's state is restored" (Algorithm 2: any ACK while frozen, melt())."""
    agent.freeze(CID, 0, restore="old", thaw_seqno=ISS + 2 * MSS)
    out = agent.on_inbound(ack(1), 30 * NS_PER_MS)  # below the probe, sent before the freeze
    assert kern.calls[-1] == ("restore", CID, "old")
    assert out == [CancelTimer(ThawTimer(CID)), ToKernel(ack(1))]
    assert agent.conns[CID].hold is None and agent.conns[CID].stats["probes"] == 0


def test_elfn_a_duplicate_ack_answering_the_probe_thaws(agent: EndpointAgent, kern: FakeKernel) -> None:
    """The receiver misses segment 1 (lost before the break), the break met segment 3: the probe
    is segment 3 and its answer a duplicate ACK for 1. It thaws, and the kernel then repairs the
    hole; an ACK above the probe would never come while the kernel's resends are withheld."""
    agent.on_inbound(ack(1), 1)
    agent.freeze(CID, 2, restore="old", thaw_seqno=ISS + 3 * MSS)
    assert kinds(agent.on_outbound(data(1), 3)) == ["Drop"]  # the kernel's resend of the hole
    probe = agent.on_timer(ThawTimer(CID), 2 * NS_PER_S)
    assert is_copy_of(probe[1], 3)
    out = agent.on_inbound(ack(1), 2 * NS_PER_S + 40 * NS_PER_MS)  # the probe's answer: dupACK
    assert kern.calls[-1] == ("restore", CID, "old")
    assert kinds(out) == ["CancelTimer", "ToKernel"] and agent.conns[CID].hold is None
    assert kinds(agent.on_outbound(data(1), 2 * NS_PER_S + 41 * NS_PER_MS)) == ["ToNetwork"]


def test_elfn_new_data_sent_while_frozen_goes_out_at_the_thaw(agent: EndpointAgent, kern: FakeKernel) -> None:
    """The kernel sent segments 5 and 6 before it read the freeze's zero-window ACK: withheld
    while frozen (the paper's frozen TCP sends nothing), sent in order right after the thawing
    ACK, as the melted TCP sends from where it stopped (Yu 2004 s3.1). Without it the receiver
    never gets them and the kernel times out. The kernel's retransmission of segment 2 made
    while frozen is not sent (the frozen timer is off), nor is a deferred segment acknowledged
    meanwhile."""
    agent.freeze(CID, 0, restore="old")
    assert kinds(agent.on_outbound(data(5), 1)) == ["Drop"]
    assert kinds(agent.on_outbound(data(6), 2)) == ["Drop"]
    assert kinds(agent.on_outbound(data(2), 3)) == ["Drop"]  # a retransmission
    out = agent.on_inbound(ack(2), 30 * NS_PER_MS)
    assert kern.calls[-1] == ("restore", CID, "old")
    assert kinds(out) == ["CancelTimer", "ToKernel", "ToNetwork", "ToNetwork"]
    assert is_copy_of(out[2], 5) and is_copy_of(out[3], 6)
    c = agent.conns[CID]
    assert c.stats["deferred_sent"] == 2 and c.stats["agent_rexmt"] == 0
    # a later freeze starts with nothing deferred (5 and 6 are still unacknowledged: not again);
    # a deferred segment acknowledged meanwhile is not sent (7 by ack(8))
    agent.freeze(CID, NS_PER_S)
    agent.on_outbound(data(7), NS_PER_S + 1)
    agent.on_outbound(data(8), NS_PER_S + 2)
    out = agent.on_inbound(ack(3), NS_PER_S + 3)
    assert kinds(out) == ["CancelTimer", "ToKernel", "ToNetwork", "ToNetwork"], kinds(out)
    assert is_copy_of(out[2], 7) and is_copy_of(out[3], 8)
    agent.freeze(CID, 2 * NS_PER_S)
    agent.on_outbound(data(9), 2 * NS_PER_S + 1)
    agent.on_outbound(data(10), 2 * NS_PER_S + 2)
    out = agent.on_inbound(ack(10), 2 * NS_PER_S + 3)
    assert kinds(out) == ["CancelTimer", "ToKernel", "ToNetwork"] and is_copy_of(out[2], 10)
    assert c.hold is None and c.stats["deferred_sent"] == 5


def test_elfn_api_thaw_sends_the_deferred_data(agent: EndpointAgent) -> None:
    """Also when the thaw (or a plain release, the control socket's) ends the freeze."""
    agent.freeze(CID, 0)
    agent.on_outbound(data(5), 1)
    out = agent.thaw(CID, 2)
    assert kinds(out) == ["CancelTimer", "ToKernel", "ToNetwork"] and is_copy_of(out[2], 5)
    agent.freeze(CID, 3)
    agent.on_outbound(data(6), 4)
    out = agent.release(CID, 5)
    assert kinds(out) == ["CancelTimer", "ToKernel", "ToNetwork"] and is_copy_of(out[2], 6)


def test_elfn_thaw_default(agent: EndpointAgent, kern: FakeKernel) -> None:
    agent.freeze(CID, 0, restore="default")
    agent.on_timer(ThawTimer(CID), 2 * NS_PER_S)
    agent.on_inbound(ack(1), 2 * NS_PER_S + 1)
    assert kern.calls[-1] == ("restore", CID, "default")


@pytest.mark.parametrize(
    ("restore", "kernel_cmd", "sample_ms"),
    [("default", "default", 6000), ("default_srtt", "default", 300), ("old", "old", 300)],
)
def test_elfn_thaw_rtt_sample_per_restore(
    agent: EndpointAgent, kern: FakeKernel, restore: Restore, kernel_cmd: str, sample_ms: int
) -> None:
    """The thawing ACK's TSecr gives the kernel the RTT sample the restore asks for: 6 s under
    ``default`` (the estimator jumps above 6 s), the srtt at the freeze (300 ms) under
    ``default_srtt`` and ``old``. The kernel's TSval clock 2 s after it sent TSval 100 is 2100."""
    kern.states[CID] = {"frz_srtt_us": 300_000}
    agent.freeze(CID, 0, restore=restore)
    out = agent.on_inbound(ack(1), 2 * NS_PER_S)
    to_kernel = [a for a in out if isinstance(a, ToKernel)]
    v = P.parse_tcp(to_kernel[0].packet)
    assert v is not None and v.ts_ecr == (2100 - sample_ms) % 2**32
    assert ("restore", CID, kernel_cmd) in kern.calls


def test_probe_without_outstanding_data_is_a_window_probe(kern: FakeKernel) -> None:
    ag = EndpointAgent(A, kernel=kern)
    ag.on_inbound(ack(0), 0)
    ag.on_outbound(data(0), 0)
    ag.on_inbound(ack(1), 1)
    ag.freeze(CID, 2)
    (_, probe) = ag.on_timer(ThawTimer(CID), 2 * NS_PER_S)
    v = P.parse_tcp(probe.packet)  # type: ignore[union-attr]
    assert v is not None and v.seq == ISS + MSS - 1 and v.payload_len == 0
    out = ag.on_inbound(ack(1), 2 * NS_PER_S + 3)  # the receiver answers with snd_una
    assert kinds(out) == ["CancelTimer", "ToKernel"]


# EPLN Algorithm 2: (notices as (segment index, pkt_lost)) -> (retransmitted, thaw_seqno, lost_pkt)
EPLN_CASES = [
    ([(2, True)], [2], 2, []),
    ([(2, False)], [], 2, []),
    ([(2, True), (1, True)], [2, 1], 1, []),
    ([(2, True), (2, True)], [2, 2], 2, []),
    ([(2, True), (4, True), (3, True), (4, True)], [2], 2, [4, 3]),
    ([(2, False), (3, True)], [], 2, [3]),
    ([(7, True)], [], None, []),  # beyond snd_nxt: "free(p)"
]


@pytest.mark.parametrize("notices,rexmt,thaw,lost", EPLN_CASES)
def test_epln_algorithm2(
    agent: EndpointAgent, notices: list[tuple[int, bool]], rexmt: list[int], thaw: int | None, lost: list[int]
) -> None:
    sent: list[int] = []
    for i, is_lost in notices:
        for a in agent.epln_notice(CID, ISS + i * MSS, is_lost, 0):
            if isinstance(a, ToNetwork):
                sent.append((P.parse_tcp(a.packet).seq - ISS) // MSS)  # type: ignore[union-attr]
    assert sent == rexmt
    h = agent.conns[CID].hold
    if thaw is None:
        assert h is None
        return
    assert h is not None and h.thaw_seqno == ISS + thaw * MSS
    assert h.lost_pkt == [ISS + i * MSS for i in lost]


def test_epln_melt_retransmits_lost_pkt(agent: EndpointAgent, kern: FakeKernel) -> None:
    agent.epln_notice(CID, ISS + 1 * MSS, True, 0)
    agent.epln_notice(CID, ISS + 3 * MSS, True, 0)
    agent.on_timer(ThawTimer(CID), 2 * NS_PER_S)
    out = agent.on_inbound(ack(2), 2 * NS_PER_S + 1)
    assert is_copy_of(out[-1], 3)
    assert kern.calls[-1] == ("restore", CID, "old")


def test_atcp_disconnect_on_unreachable(agent: EndpointAgent, kern: FakeKernel) -> None:
    api = TcpControl(agent)
    api.on_unreachable(lambda ev: api.atcp_disconnect(ev.conn, ev.now_ns))
    icmp = P.icmp_dest_unreachable(data(4), bytes([10, 0, 0, 2]))
    out = agent.on_inbound(icmp, 5)
    assert kinds(out) == ["ToKernel", "ToKernel", "Drop"]  # zero-window ACK, nudge, ICMP consumed
    assert kern.calls[-1] == ("set_cwnd", CID, 1, 0)
    assert agent.conns[CID].hold is not None and agent.conns[CID].hold.mode == HoldMode.PERSIST  # type: ignore[union-attr]
    assert kinds(agent.on_outbound(data(0), 6)) == ["ToNetwork"]  # the kernel's probe goes out
    assert agent.on_inbound(ack(0), 7) == [ToKernel(ack(0))]  # answered: released, unmodified
    assert agent.conns[CID].hold is None


def test_unreachable_builds_icmp_for_the_local_sender(agent: EndpointAgent) -> None:
    (a,) = agent.unreachable(CID, P.ICMP_HOST_UNREACH)
    assert isinstance(a, ToKernel)
    code, q = P.parse_icmp_unreach(a.packet)  # type: ignore[misc]
    assert (code, q.src, q.sport, q.dst, q.dport, q.seq) == (1, A, AP, B, BP, ISS + 4 * MSS)


def test_ecn_rules(agent: EndpointAgent) -> None:
    agent.set_ecn(CID, "in", ip_ecn=P.ECN_CE, ece=True)
    (a,) = agent.on_inbound(ack(1), 0)
    v = P.parse_tcp(a.packet)  # type: ignore[union-attr]
    assert v is not None and v.flags & P.ECE and P.ip_ecn(a.packet) == P.ECN_CE  # type: ignore[union-attr]
    assert P.tcp_checksum_ok(a.packet)  # type: ignore[union-attr]
    agent.clear_ecn(CID)
    assert agent.on_inbound(ack(2), 0) == [ToKernel(ack(2))]


def test_route_control_marks_and_echo(kern: FakeKernel) -> None:
    snd = EndpointAgent(A, AgentParams(route_control=True), kernel=kern)
    rcv = EndpointAgent(B, AgentParams(route_control=True))
    snd.bump_route_number(B)
    (out,) = snd.on_outbound(data(0), 0)
    assert P.read_rc_mark(out.packet) == (1, False)  # type: ignore[union-attr]
    marked = bytearray(out.packet)  # type: ignore[union-attr]
    P.write_rc_mark(marked, 1, True)  # an intermediate node set NEW
    rcv.on_inbound(bytes(marked), 1)
    (echoed,) = rcv.on_outbound(ack(1), 2)
    assert P.read_rc_echo(echoed.packet) == (1, True)  # type: ignore[union-attr]
    got: list[Any] = []
    snd.hooks.subscribe(TcpAck, lambda ev: got.append((ev.rc_echo, ev.rc_mark)))
    snd.on_inbound(echoed.packet, 3)  # type: ignore[union-attr]
    assert got == [((1, True), (0, False))]


def test_timeouts_polled_from_the_kernel(agent: EndpointAgent, kern: FakeKernel) -> None:
    api = TcpControl(agent)
    seen: list[int] = []
    first = api.on_timeout(lambda ev: seen.append(ev.n_rto), 0)
    assert first == [SetTimer(PollTimer(), 100 * NS_PER_MS)]
    kern.states[CID] = {"n_rto": 2}
    out = agent.on_timer(PollTimer(), 100 * NS_PER_MS)
    assert seen == [2]
    assert out == [SetTimer(PollTimer(), 200 * NS_PER_MS)]
    agent.on_timer(PollTimer(), 200 * NS_PER_MS)
    assert seen == [2]


def test_rto_policy_and_cwnd_reach_the_kernel(agent: EndpointAgent, kern: FakeKernel) -> None:
    api = TcpControl(agent)
    api.rto_policy(CID, Abra(0.1, 0.6))
    api.rto_policy(CID, "fixed_after_two")
    assert api.set_cwnd(CID, 4) == []  # not held: applied at the kernel's next ACK
    assert kern.calls == [
        ("set_policy", CID, Abra(0.1, 0.6)),
        ("set_policy", CID, FixedAfterTwo()),
        ("set_cwnd", CID, 4, 0),
    ]


def test_non_tcp_passes(agent: EndpointAgent) -> None:
    udp = bytes(20)
    assert agent.on_outbound(udp, 0) == [ToNetwork(udp)]
    assert agent.on_inbound(udp, 0) == [ToKernel(udp)]
    assert isinstance(Drop(b"", "x"), Drop)
