"""The AODV core driven event by event in virtual time (RFC 3561 section 6): exact TTLs, times,
sequence numbers, tables and messages."""

from __future__ import annotations

import pytest
from aodv_helpers import air, control, core, data, ip, sends, sent_msgs, timers
from scapy.layers.inet import IP

from nodes.core import ipv4
from nodes.core.addr import BROADCAST
from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import (
    CancelTimer,
    DeliverLocal,
    Drop,
    Frame,
    FromAir,
    FromLocal,
    SetTimer,
    Timer,
    TxStatus,
)
from nodes.core.hooks import (
    DataForwarded,
    LinkFailure,
    LocalDelivery,
    MacOutcome,
    NeighbourSignal,
    RouteDiscoveryJoined,
    RouteDiscoveryStarted,
    UndeclaredEvent,
)
from nodes.protocols.aodv import Rerr, RouteEntry, RouteState, Rrep, Rreq
from nodes.protocols.aodv.events import AodvIpForward, AodvRouteReply, AodvRouteRequest, AodvRouteStateChange
from nodes.protocols.aodv.protocol import RreqTimer
from nodes.protocols.dsr.events import DsrRouteErrorReceived

MS = NS_PER_MS


def rreq_key(dst: int) -> RreqTimer:
    return RreqTimer(dst)


# ------------------------------------------------------------------ route discovery (6.3, 6.4)


def test_expanding_ring_ttls_timeouts_then_drop() -> None:
    c = core(1)
    pkt = data(1, 9)
    acts = c.on_event(FromLocal(pkt), 0)
    now = 0
    seen = []
    for _ in range(7):
        ((frame, ttl, m),) = sent_msgs(acts)
        (t,) = timers(acts)
        assert frame.next_hop == BROADCAST and frame.control
        assert isinstance(m, Rreq) and m.unknown_seq_no and m.dest_ip == ip(9) and m.hop_count == 0
        assert frame.packet[16:20] == b"\xff\xff\xff\xff"
        seen.append((ttl, (t.at_ns - now) // MS, m.rreq_id, m.orig_seq_no))
        assert t.key == rreq_key(9)
        now = t.at_ns
        acts = c.on_event(Timer(t.key), now)
    assert seen == [
        (1, 240, 1, 1),
        (3, 400, 2, 2),
        (5, 560, 3, 3),
        (7, 720, 4, 4),
        (35, 2800, 5, 5),
        (35, 5600, 6, 6),
        (35, 11200, 7, 7),
    ]
    assert now == 21520 * MS
    # Discovery failed: the buffered packet is dropped, nothing more is sent.
    assert acts == [Drop(pkt, "no_route")]
    assert c.ctx.counters.extra["aodv_discovery_failed"] == 1
    assert c.ctx.counters.routing_sent["rreq"] == 7


def test_rediscovery_starts_at_last_hop_count_plus_increment() -> None:
    c = core(1)
    c.table.add(RouteEntry(9, 2, 4, 17, True, 10 * MS, RouteState.VALID))
    c.table.set_state(c.table.lookup(9, 0), RouteState.INVALID, 0)  # type: ignore[arg-type]
    acts = c.on_event(FromLocal(data(1, 9)), 0)
    ((_, ttl, m),) = sent_msgs(acts)
    assert ttl == 6
    assert isinstance(m, Rreq) and not m.unknown_seq_no and m.dest_seq_no == 17
    assert timers(acts)[0].at_ns == 2 * 40 * (6 + 2) * MS


def test_one_discovery_per_destination_and_rreq_ratelimit() -> None:
    c = core(1, n=20)
    acts = []
    for dst in range(2, 14):  # 12 destinations at t = 0
        acts += c.on_event(FromLocal(data(1, dst)), 0)
    acts += c.on_event(FromLocal(data(1, 2)), 0)  # same destination: buffered, no new RREQ
    assert len(sent_msgs(acts)) == 10  # RREQ_RATELIMIT per second
    held = [t for t in timers(acts) if t.at_ns == NS_PER_S]
    assert {t.key for t in held} == {rreq_key(12), rreq_key(13)} and len(held) == 2
    later = c.on_event(Timer(rreq_key(12)), NS_PER_S)
    ((_, ttl, m),) = sent_msgs(later)
    assert ttl == 1 and isinstance(m, Rreq) and m.dest_ip == ip(12)
    assert timers(later) == [SetTimer(rreq_key(12), NS_PER_S + 240 * MS)]


def test_originator_sequence_number_wraps_skipping_zero() -> None:
    c = core(1)
    c.seq_no = 0xFFFF_FFFF
    ((_, _, m),) = sent_msgs(c.on_event(FromLocal(data(1, 9)), 0))
    assert isinstance(m, Rreq) and m.orig_seq_no == 1 and c.seq_no == 1


def test_rrep_completes_discovery_flushes_buffer_fifo_and_samples_latency() -> None:
    c = core(1)
    pkts = [data(1, 9, bytes([i]) * 4) for i in range(3)]
    for i, p in enumerate(pkts):
        c.on_event(FromLocal(p), i * MS)
    rrep = Rrep(dest_ip=ip(9), dest_seq_no=4, orig_ip=ip(1), lifetime_ms=11200, hop_count=2)
    acts = c.on_event(air(rrep, 2, to=1), 100 * MS)
    out = sends(acts)
    assert [s.frame.packet for s in out] == pkts  # FIFO, unchanged (the source does not decrement)
    assert all(s.frame.next_hop == 2 and not s.frame.control for s in out)
    assert CancelTimer(rreq_key(9)) in acts
    e = c.table.usable(9, 100 * MS)
    assert e is not None and (e.next_hop, e.hop_count, e.dest_seq_no) == (2, 3, 4)
    assert e.expires_ns == 100 * MS + 11200 * MS
    assert c.ctx.counters.samples["discovery_latency_s"] == [0.1]
    assert 9 not in c.requests


def test_send_buffer_full_drops_oldest() -> None:
    c = core(1, send_buffer_len=2)
    pkts = [data(1, 9, bytes([i])) for i in range(3)]
    acts = []
    for p in pkts:
        acts += c.on_event(FromLocal(p), 0)
    assert Drop(pkts[0], "send_buffer_full") in acts
    assert [b.packet for b in c.buffer.take(9)] == pkts[1:]


# ------------------------------------------------------------------ RREQ processing (6.5)


def test_rreq_creates_reverse_route_and_rebroadcasts() -> None:
    c = core(3)
    rreq = Rreq(
        rreq_id=7,
        dest_ip=ip(9),
        dest_seq_no=0,
        orig_ip=ip(1),
        orig_seq_no=5,
        hop_count=1,
        unknown_seq_no=True,
    )
    acts = c.on_event(air(rreq, 2, ttl=4), 10 * MS)
    ((frame, ttl, m),) = sent_msgs(acts)
    assert frame.next_hop == BROADCAST and ttl == 3
    assert isinstance(m, Rreq) and m.hop_count == 2 and m.rreq_id == 7 and m.orig_seq_no == 5
    rev = c.table.usable(1, 10 * MS)
    assert rev is not None and (rev.next_hop, rev.hop_count, rev.dest_seq_no, rev.valid_seq_no) == (
        2,
        2,
        5,
        True,
    )
    # MinimalLifetime = now + 2*NET_TRAVERSAL_TIME - 2*HopCount*NODE_TRAVERSAL_TIME
    assert rev.expires_ns == 10 * MS + 5600 * MS - 2 * 2 * 40 * MS
    nb = c.table.usable(2, 10 * MS)
    assert nb is not None and (nb.hop_count, nb.valid_seq_no, nb.expires_ns) == (1, False, 3010 * MS)
    assert c.ctx.counters.routing_forwarded["rreq"] == 1


def test_rreq_with_ttl_one_is_not_rebroadcast() -> None:
    c = core(3)
    rreq = Rreq(rreq_id=7, dest_ip=ip(9), dest_seq_no=0, orig_ip=ip(1), orig_seq_no=5, unknown_seq_no=True)
    assert sent_msgs(c.on_event(air(rreq, 2, ttl=1), 0)) == []
    assert c.table.usable(1, 0) is not None


def test_duplicate_rreq_suppressed_for_path_discovery_time() -> None:
    c = core(3)
    rreq = Rreq(rreq_id=7, dest_ip=ip(9), dest_seq_no=0, orig_ip=ip(1), orig_seq_no=5, unknown_seq_no=True)
    assert len(sent_msgs(c.on_event(air(rreq, 2, ttl=5), 0))) == 1
    dup = c.on_event(air(rreq, 4, ttl=5), 5600 * MS - 1)
    assert sent_msgs(dup) == []
    assert Drop(air(rreq, 4, ttl=5).packet, "aodv_rreq_duplicate") in dup
    again = c.on_event(air(rreq, 4, ttl=5), 5600 * MS)
    assert len(sent_msgs(again)) == 1
    # our own RREQ heard back is ignored
    own = Rreq(rreq_id=1, dest_ip=ip(9), dest_seq_no=0, orig_ip=ip(3), orig_seq_no=1, unknown_seq_no=True)
    assert sent_msgs(c.on_event(air(own, 2, ttl=5), 0)) == []


@pytest.mark.parametrize(
    ("own", "rreq_seq", "unknown", "after"),
    [
        (0, 7, False, 7),  # 6.1: max(own, RREQ's destination sequence number)
        (9, 7, False, 9),
        (0, 7, True, 0),  # unknown: own unchanged
        (4, 5, False, 5),  # 6.6.1: "equal to that incremented value"
        (0xFFFF_FFF0, 5, False, 5),  # newer across the wrap
        (5, 0xFFFF_FFF0, False, 5),  # older across the wrap
    ],
)
def test_destination_sequence_number_rules(own: int, rreq_seq: int, unknown: bool, after: int) -> None:
    c = core(9)
    c.seq_no = own
    rreq = Rreq(
        rreq_id=1,
        dest_ip=ip(9),
        dest_seq_no=rreq_seq,
        orig_ip=ip(1),
        orig_seq_no=3,
        hop_count=2,
        unknown_seq_no=unknown,
    )
    acts = c.on_event(air(rreq, 4, ttl=30), 0)
    ((frame, _, m),) = sent_msgs(acts)
    assert c.seq_no == after
    assert frame.next_hop == 4 and frame.packet[16:20] == bytes((10, 0, 0, 4))
    assert isinstance(m, Rrep)
    assert (m.dest_ip, m.dest_seq_no, m.orig_ip, m.hop_count, m.lifetime_ms) == (
        ip(9),
        after,
        ip(1),
        0,
        11200,
    )


def _intermediate(dest_seq: int = 10, state: RouteState = RouteState.VALID) -> object:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, dest_seq, True, 3000 * MS, RouteState.VALID))
    if state is not RouteState.VALID:
        c.table.set_state(c.table.lookup(9, 0), state, 0)  # type: ignore[arg-type]
    return c


@pytest.mark.parametrize(
    ("rreq_seq", "unknown", "d_flag", "replies"),
    [
        (9, False, False, True),
        (10, False, False, True),
        (0, True, False, True),
        (11, False, False, False),
        (9, False, True, False),
    ],
)
def test_intermediate_rrep_conditions(rreq_seq: int, unknown: bool, d_flag: bool, replies: bool) -> None:
    c = _intermediate()
    rreq = Rreq(
        rreq_id=1,
        dest_ip=ip(9),
        dest_seq_no=rreq_seq,
        orig_ip=ip(1),
        orig_seq_no=3,
        hop_count=1,
        unknown_seq_no=unknown,
        destination_only=d_flag,
    )
    ((frame, ttl, m),) = sent_msgs(c.on_event(air(rreq, 2, ttl=10), 1000 * MS))  # type: ignore[attr-defined]
    if replies:
        assert isinstance(m, Rrep) and frame.next_hop == 2
        assert (m.dest_ip, m.dest_seq_no, m.orig_ip, m.hop_count, m.lifetime_ms) == (
            ip(9),
            10,
            ip(1),
            2,
            2000,
        )
        assert c.table.lookup(9, 0).precursors == {2}  # type: ignore[attr-defined]
        assert c.table.lookup(1, 0).precursors == {4}  # type: ignore[attr-defined]
    else:
        assert isinstance(m, Rreq) and frame.next_hop == BROADCAST and ttl == 9
        # 6.5: forwarded with max(RREQ's, ours); our own value is not modified
        assert m.dest_seq_no == max(rreq_seq, 10) and not m.unknown_seq_no
        assert c.table.lookup(9, 0).dest_seq_no == 10  # type: ignore[attr-defined]


def test_gdwn_route_does_not_answer_rreq() -> None:
    c = _intermediate(state=RouteState.GDWN)
    rreq = Rreq(rreq_id=1, dest_ip=ip(9), dest_seq_no=9, orig_ip=ip(1), orig_seq_no=3, hop_count=1)
    ((_, _, m),) = sent_msgs(c.on_event(air(rreq, 2, ttl=10), 0))  # type: ignore[attr-defined]
    assert isinstance(m, Rreq)


def test_gratuitous_rrep_to_destination() -> None:
    c = _intermediate()
    rreq = Rreq(
        rreq_id=1, dest_ip=ip(9), dest_seq_no=9, orig_ip=ip(1), orig_seq_no=3, hop_count=1, gratuitous=True
    )
    msgs = sent_msgs(c.on_event(air(rreq, 2, ttl=10), 1000 * MS))  # type: ignore[attr-defined]
    assert [f.next_hop for f, _, _ in msgs] == [2, 4]
    g = msgs[1][2]
    assert isinstance(g, Rrep)
    # dest = originator, seq = originator's, orig = RREQ destination, hops = our hops to originator
    assert (g.dest_ip, g.dest_seq_no, g.orig_ip, g.hop_count) == (ip(1), 3, ip(9), 2)
    assert g.lifetime_ms == 5600 - 2 * 2 * 40


def test_rreq_veto_hook_makes_node_rebroadcast() -> None:
    c = _intermediate()
    seen = []

    def veto(ev: AodvRouteRequest) -> None:
        seen.append((ev.rreq.rreq_id, ev.prev_hop))
        ev.decision.reply = False

    c.ctx.hooks.subscribe(AodvRouteRequest, veto)  # type: ignore[attr-defined]
    rreq = Rreq(rreq_id=1, dest_ip=ip(9), dest_seq_no=9, orig_ip=ip(1), orig_seq_no=3, hop_count=1)
    ((_, _, m),) = sent_msgs(c.on_event(air(rreq, 2, ttl=10), 0))  # type: ignore[attr-defined]
    assert isinstance(m, Rreq) and seen == [(1, 2)]


# ------------------------------------------------------------------ RREP processing (6.7)


def test_rrep_forwarded_towards_originator_with_precursors() -> None:
    c = core(3)
    c.table.add(RouteEntry(1, 2, 2, 3, True, 500 * MS))
    rrep = Rrep(dest_ip=ip(9), dest_seq_no=10, orig_ip=ip(1), lifetime_ms=5000, hop_count=1)
    acts = c.on_event(air(rrep, 4, to=3), 100 * MS)
    ((frame, _, m),) = sent_msgs(acts)
    assert frame.next_hop == 2 and isinstance(m, Rrep) and m.hop_count == 2 and m.lifetime_ms == 5000
    fwd = c.table.usable(9, 100 * MS)
    assert fwd is not None and (fwd.next_hop, fwd.hop_count, fwd.dest_seq_no) == (4, 2, 10)
    assert fwd.expires_ns == 5100 * MS and fwd.precursors == {2}
    rev = c.table.usable(1, 100 * MS)
    assert rev is not None and rev.expires_ns == 3100 * MS and 4 in rev.precursors
    assert c.table.usable(4, 100 * MS).precursors == {2}  # type: ignore[union-attr]
    assert c.ctx.counters.routing_forwarded["rrep"] == 1


def test_stale_rrep_is_not_forwarded() -> None:
    c = core(3)
    c.table.add(RouteEntry(1, 2, 2, 3, True, 5000 * MS))
    c.table.add(RouteEntry(9, 4, 2, 12, True, 5000 * MS))
    rrep = Rrep(dest_ip=ip(9), dest_seq_no=10, orig_ip=ip(1), lifetime_ms=5000, hop_count=0)
    acts = c.on_event(air(rrep, 5, to=3), 0)
    assert sent_msgs(acts) == []
    assert c.table.usable(9, 0).next_hop == 4  # type: ignore[union-attr]


# ------------------------------------------------------------------ data forwarding


def test_forwarding_decrements_ttl_refreshes_routes_and_hook_may_modify() -> None:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 1000 * MS))
    c.table.add(RouteEntry(4, 4, 1, 0, False, 1000 * MS))
    c.table.add(RouteEntry(1, 2, 2, 3, True, 1000 * MS))
    c.table.add(RouteEntry(2, 2, 1, 0, False, 1000 * MS))
    calls = []

    def mark(ev: AodvIpForward) -> None:
        calls.append((ev.prev_hop, ev.next_hop, ev.now_ns))
        ev.packet[1] = 0x04  # e.g. an extension's mark in the TOS byte
        ipv4.set_header_checksum(ev.packet)

    forwarded: list[DataForwarded] = []
    c.ctx.hooks.subscribe(AodvIpForward, mark)
    c.ctx.hooks.subscribe(DataForwarded, forwarded.append)
    pkt = data(1, 9, ttl=10)
    acts = c.on_event(FromAir(pkt, 2, 3), 500 * MS)
    (s,) = sends(acts)
    assert s.frame.next_hop == 4 and not s.frame.control
    out = IP(s.frame.packet)
    assert out.ttl == 9 and out.tos == 4
    assert ipv4.header_checksum_ok(s.frame.packet)
    assert calls == [(2, 4, 500 * MS)]
    assert forwarded == [DataForwarded(now_ns=500 * MS, packet=s.frame.packet, prev_hop=2, next_hop=4)]
    for dst in (9, 4, 1, 2):
        assert c.table.usable(dst, 0).expires_ns == 3500 * MS  # type: ignore[union-attr]
    assert c.ctx.counters.data_forwarded == 1


def test_ttl_expired_dropped() -> None:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 1000 * MS))
    pkt = data(1, 9, ttl=1)
    assert c.on_event(FromAir(pkt, 2, 3), 0) == [Drop(pkt, "ttl_expired")]


def test_local_delivery_and_hook() -> None:
    c = core(9)
    got = []
    c.ctx.hooks.subscribe(LocalDelivery, lambda ev: got.append(ev.prev_hop))
    pkt = data(1, 9)
    assert c.on_event(FromAir(pkt, 4, 9), 0) == [DeliverLocal(pkt)]
    assert got == [4] and c.ctx.counters.data_delivered == 1


def test_data_without_route_drops_and_sends_rerr_case_ii() -> None:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 100 * MS))
    pkt = data(1, 9)
    acts = c.on_event(FromAir(pkt, 2, 3), 200 * MS)  # the route expired at 100 ms
    ((frame, ttl, m),) = sent_msgs(acts)
    assert frame.next_hop == 2 and ttl == 1
    assert isinstance(m, Rerr) and m.unreachable == ((ip(9), 11),)  # incremented, case (ii)
    assert Drop(pkt, "no_route") in acts


# ------------------------------------------------------------------ route maintenance (6.11)


def _with_routes() -> object:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 5000 * MS)).precursors.update({2})
    c.table.add(RouteEntry(8, 4, 3, 20, True, 5000 * MS)).precursors.update({2, 7})
    c.table.add(RouteEntry(6, 5, 2, 30, True, 5000 * MS)).precursors.update({2})
    c.table.drain_changes()
    return c


def test_link_break_invalidates_routes_and_sends_rerr_to_precursors() -> None:
    c = _with_routes()
    failures = []
    c.ctx.hooks.subscribe(  # type: ignore[attr-defined]
        LinkFailure, lambda ev: failures.append((ev.next_hop, ev.frame, ev.packets))
    )
    states = []
    c.ctx.hooks.subscribe(  # type: ignore[attr-defined]
        AodvRouteStateChange, lambda ev: states.append((ev.dst, ev.old, ev.new))
    )
    frame = Frame(data(1, 9), 4, meta={"prev_hop": 2})
    acts = c.on_event(TxStatus(frame, ok=False, rts_attempts=7), 100 * MS)  # type: ignore[attr-defined]
    ((rframe, ttl, m),) = sent_msgs(acts)
    assert rframe.next_hop == BROADCAST and ttl == 1  # two precursors (2 and 7): broadcast
    assert isinstance(m, Rerr) and sorted(m.unreachable) == [(ip(8), 21), (ip(9), 11)]
    assert failures == [(4, frame, (frame.packet,))]
    assert sorted(states) == [
        (8, RouteState.VALID, RouteState.INVALID),
        (9, RouteState.VALID, RouteState.INVALID),
    ]
    e = c.table.lookup(9, 100 * MS)  # type: ignore[attr-defined]
    assert e.state is RouteState.INVALID and e.expires_ns == 100 * MS + 15 * NS_PER_S
    assert c.table.usable(6, 100 * MS) is not None  # type: ignore[attr-defined]
    assert Drop(frame.packet, "link_failure") in acts
    assert c.ctx.counters.routing_sent["rerr"] == 1  # type: ignore[attr-defined]


def test_link_break_single_precursor_unicast_and_queued_frames_removed() -> None:
    c = core(3)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 5000 * MS)).precursors.add(2)
    queued = Frame(data(1, 9, b"q"), 4, meta={"prev_hop": 2})
    other = Frame(data(1, 6, b"o"), 5)
    c.ctx.ifq.enqueue(queued)
    c.ctx.ifq.enqueue(other)
    acts = c.on_event(TxStatus(Frame(data(1, 9), 4, meta={"prev_hop": 2}), ok=False), 0)
    ((rframe, _, m),) = sent_msgs(acts)
    assert rframe.next_hop == 2 and isinstance(m, Rerr)
    assert Drop(queued.packet, "link_failure") in acts
    assert list(c.ctx.ifq) == [other]


def test_source_rebuffers_own_packet_and_rediscovers() -> None:
    c = core(1)
    c.table.add(RouteEntry(9, 2, 3, 10, True, 5000 * MS))
    pkt = data(1, 9)
    acts = c.on_event(TxStatus(Frame(pkt, 2, meta={"prev_hop": None}), ok=False), 0)
    ((_, ttl, m),) = sent_msgs(acts)
    assert isinstance(m, Rreq) and ttl == 5 and m.dest_seq_no == 11  # hop count 3 + TTL_INCREMENT
    assert [b.packet for b in c.buffer.take(9)] == [pkt]


@pytest.mark.parametrize("adaptive", [True, False])
def test_rreq_wait_uses_measured_per_hop_time(adaptive: bool) -> None:
    # ns-2 PerHopTime: a rediscovery after 20 ms discoveries over 4 hops (5 ms per hop) waits
    # 2 * 5 ms * (TTL 6 + TIMEOUT_BUFFER 2) = 80 ms; the RFC's NODE_TRAVERSAL_TIME gives 640 ms.
    c = core(1, adaptive_traversal_time=adaptive)
    c.traversal.add(9, 20 * MS, 4)
    c.table.add(RouteEntry(9, 2, 4, 10, True, 5000 * MS))
    acts = c.on_event(TxStatus(Frame(data(1, 9), 2, meta={"prev_hop": None}), ok=False), 0)
    ((_, ttl, m),) = sent_msgs(acts)
    assert isinstance(m, Rreq) and ttl == 6
    (t,) = [a for a in timers(acts) if a.key == rreq_key(9)]
    assert t.at_ns == (80 if adaptive else 640) * MS
    # then TTL 35: 2 * 5 ms * 35 = 350 ms (RFC: NET_TRAVERSAL_TIME 2.8 s)
    acts = c.on_event(Timer(rreq_key(9)), t.at_ns)
    ((_, ttl, _),) = sent_msgs(acts)
    (t2,) = timers(acts)
    assert ttl == 35 and t2.at_ns - t.at_ns == (350 if adaptive else 2800) * MS


@pytest.mark.parametrize("breaks", [False, True])
def test_failed_control_frame_is_not_a_link_break(breaks: bool) -> None:
    c = core(3, control_failure_breaks_link=breaks)
    c.table.add(RouteEntry(9, 4, 2, 10, True, 5000 * MS)).precursors.add(2)
    rrep = Frame(control(Rrep(ip(9), 10, ip(1), 1000, 1), 3, ip(4), 255), 4, control=True)
    acts = c.on_event(TxStatus(rrep, ok=False), 0)
    assert (c.table.usable(9, 0) is None) is breaks
    if breaks:
        assert [m for _, _, m in sent_msgs(acts) if isinstance(m, Rerr)]
    else:
        assert acts == [Drop(rrep.packet, "aodv_control_tx_failed")]


@pytest.mark.parametrize("no_delete", [False, True])
def test_rerr_received_invalidates_and_propagates(no_delete: bool) -> None:
    c = core(2)
    c.table.add(RouteEntry(9, 3, 3, 10, True, 5000 * MS)).precursors.add(1)
    c.table.add(RouteEntry(8, 5, 3, 10, True, 5000 * MS)).precursors.add(1)  # not via the sender
    rerr = Rerr(((ip(9), 12), (ip(8), 12), (ip(7), 1)), no_delete=no_delete)
    acts = c.on_event(air(rerr, 3, to=2), 0)
    ((frame, ttl, m),) = sent_msgs(acts)
    assert frame.next_hop == 1 and ttl == 1
    assert isinstance(m, Rerr) and m.unreachable == ((ip(9), 12),) and m.no_delete is no_delete
    e9 = c.table.lookup(9, 0)
    assert e9 is not None
    if no_delete:
        assert e9.state is RouteState.VALID and e9.dest_seq_no == 10
    else:
        assert e9.state is RouteState.INVALID and e9.dest_seq_no == 12  # copied, case (iii)
    assert c.table.usable(8, 0) is not None
    assert c.ctx.counters.routing_forwarded["rerr"] == 1


def test_rerr_ratelimit() -> None:
    c = core(3)
    acts = []
    for i in range(12):
        acts += c.on_event(FromAir(data(1, 9, bytes([i])), 2, 3), i * MS)
    assert len(sent_msgs(acts)) == 10
    assert sum(1 for a in acts if isinstance(a, Drop) and a.reason == "aodv_rerr_ratelimit") == 2


# ------------------------------------------------------------------ cross-layer hooks


def test_neighbour_signal_and_mac_outcome_hooks() -> None:
    c = core(3)
    sig: list[NeighbourSignal] = []
    mac: list[MacOutcome] = []
    c.ctx.hooks.subscribe(NeighbourSignal, sig.append)
    c.ctx.hooks.subscribe(MacOutcome, mac.append)
    c.on_event(FromAir(data(1, 8), 2, 8, rssi_dbm=-71.5, snr_db=20.0, overheard=True), 5)
    assert sig == [NeighbourSignal(now_ns=5, neighbour=2, rssi_dbm=-71.5, snr_db=20.0)]
    assert c.neighbours.get(2).rssi_dbm == -71.5  # type: ignore[union-attr]
    f = Frame(data(3, 4), 4)
    c.on_event(TxStatus(f, ok=True, rts_attempts=2, data_attempts=1), 7)
    assert mac == [MacOutcome(now_ns=7, frame=f, ok=True, rts_attempts=2, data_attempts=1)]


def test_an_event_aodv_does_not_emit_is_an_error() -> None:
    c = core(3)
    with pytest.raises(UndeclaredEvent, match="does not emit DsrRouteErrorReceived"):
        c.ctx.hooks.subscribe(DsrRouteErrorReceived, lambda ev: None)


def test_route_discovery_started_for_an_originated_packet_once_and_joined_after() -> None:
    c = core(1)
    started: list[RouteDiscoveryStarted] = []
    joined: list[RouteDiscoveryJoined] = []
    c.ctx.hooks.subscribe(RouteDiscoveryStarted, started.append)
    c.ctx.hooks.subscribe(RouteDiscoveryJoined, joined.append)
    first, second = data(1, 9), data(1, 9, ttl=10)
    c.on_event(FromLocal(first), 0)
    c.on_event(FromLocal(second), MS)  # the discovery is under way: no second start, a join
    assert started == [RouteDiscoveryStarted(now_ns=0, dst=9, packet=first)]
    assert joined == [RouteDiscoveryJoined(now_ns=MS, dst=9, packet=second)]


def test_packet_waiting_for_a_local_repair_neither_starts_nor_joins_a_discovery() -> None:
    c = core(1)
    events: list[RouteDiscoveryStarted | RouteDiscoveryJoined] = []
    c.ctx.hooks.subscribe(RouteDiscoveryStarted, events.append)
    c.ctx.hooks.subscribe(RouteDiscoveryJoined, events.append)
    e = c.table.add(RouteEntry(9, 4, 2, 10, True, 5000 * MS))
    c.table.set_state(e, RouteState.REPAIRING, 0)
    c.on_event(FromLocal(data(1, 9)), 0)
    c.on_event(FromLocal(data(1, 9, ttl=10)), MS)
    assert events == []  # the repair's discovery is not the sender's
    c.on_event(FromLocal(data(1, 8)), 2 * MS)  # no route at all to 8: a discovery of its own
    assert [type(ev) for ev in events] == [RouteDiscoveryStarted]


def test_gdwn_route_still_forwards_data_and_returns_to_valid_on_new_route() -> None:
    c = core(3)
    e = c.table.add(RouteEntry(9, 4, 2, 10, True, 5000 * MS))
    c.table.set_state(e, RouteState.GDWN, 0)  # what Klemm's extension does
    (s,) = sends(c.on_event(FromAir(data(1, 9), 2, 3), 0))
    assert s.frame.next_hop == 4
    rrep = Rrep(dest_ip=ip(9), dest_seq_no=11, orig_ip=ip(3), lifetime_ms=3000, hop_count=1)
    c.on_event(air(rrep, 5, to=3), MS)
    e2 = c.table.usable(9, MS)
    assert e2 is not None and e2.state is RouteState.VALID and e2.next_hop == 5


def test_rrep_veto_hook_ignores_reply() -> None:
    c = core(1)
    c.on_event(FromLocal(data(1, 9)), 0)
    c.ctx.hooks.subscribe(AodvRouteReply, lambda ev: setattr(ev.decision, "accept", False))
    rrep = Rrep(dest_ip=ip(9), dest_seq_no=4, orig_ip=ip(1), lifetime_ms=11200, hop_count=2)
    acts = c.on_event(air(rrep, 2, to=1), MS)
    assert sends(acts) == [] and c.table.usable(9, MS) is None
    assert 9 in c.requests
