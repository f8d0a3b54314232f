"""AODV's routing profiles (issue 46 item 2): each behaviour where ns-2's aodv.cc and RFC 3561
differ, played event by event in virtual time under the ``ns2`` and the ``rfc`` profile.

The parameters come from ``effective_params("aodv", profile, ...)``, so these tests check the
profile tables themselves. Expected times are worked out in the comments from ns-2's code
(aodv.cc, aodv.h of ns-2.26 to 2.35; docs/aodv.md "Profiles") and the RFC's sections, never taken
from the core under test.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Hashable
from functools import partial
from pathlib import Path
from typing import Any

from aodv_helpers import air, data, ip

from nodes.core.addr import BROADCAST
from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import (
    Action,
    CancelTimer,
    Drop,
    Frame,
    FromAir,
    FromLocal,
    Send,
    SetTimer,
    Timer,
    TxStatus,
)
from nodes.core.protocol import NodeContext
from nodes.protocols import effective_params
from nodes.protocols.aodv import AodvParams, AodvRouting, Rerr, RouteEntry, RouteState, Rrep, Rreq, decode
from topologies.scenario import load_scenario

MS = NS_PER_MS
S = NS_PER_S
FAR = 1000 * S


class Run:
    """One core of ``profile`` started at 0 and a virtual clock: the timers it sets fire in
    time order; every action is kept with its time."""

    def __init__(self, station: int, profile: str, **explicit: Any) -> None:
        params = effective_params("aodv", profile, explicit or None)
        assert isinstance(params, AodvParams)
        ctx = NodeContext(station=station, n_stations=10, rng=random.Random(station))
        self.core = AodvRouting(ctx, params)
        self.timers: dict[Hashable, int] = {}
        self.log: list[tuple[int, Action]] = []
        self.now = 0
        self._take(self.core.start(0))

    def _take(self, acts: list[Action]) -> list[Action]:
        for a in acts:
            if isinstance(a, SetTimer):
                self.timers[a.key] = a.at_ns
            elif isinstance(a, CancelTimer):
                self.timers.pop(a.key, None)
            self.log.append((self.now, a))
        return acts

    def event(self, ev: Any, at: int) -> list[Action]:
        self.run_until(at)
        self.now = at
        return self._take(self.core.on_event(ev, at))

    def run_until(self, until: int) -> None:
        while self.timers:
            key, at = min(self.timers.items(), key=lambda kv: kv[1])
            if at > until:
                break
            del self.timers[key]
            self.now = at
            self._take(self.core.on_event(Timer(key), at))
        self.now = until

    def rreqs(self) -> list[tuple[int, int, int]]:
        """(time, IP TTL, jitter) of every RREQ this node originated."""
        out = []
        for t, a in self.log:
            if isinstance(a, Send) and a.frame.control:
                m = decode(a.frame.packet[28:])
                if isinstance(m, Rreq) and m.orig_ip == ip(self.core.me):
                    out.append((t, a.frame.packet[8], a.jitter_ns))
        return out

    def rerrs(self) -> list[tuple[int, int, Rerr]]:
        """(time, next hop, message) of every RERR sent."""
        out = []
        for t, a in self.log:
            if isinstance(a, Send) and a.frame.control:
                m = decode(a.frame.packet[28:])
                if isinstance(m, Rerr):
                    out.append((t, a.frame.next_hop, m))
        return out

    def drops(self, reason: str) -> list[tuple[int, bytes]]:
        return [(t, a.packet) for t, a in self.log if isinstance(a, Drop) and a.reason == reason]


# ------------------------------------------------------------------ failed local repair


def _repairing_node(profile: str, **explicit: Any) -> Run:
    """Station 4 on 1-2-3-4-5-6: the route back to 1 is 3 hops (via 3), the route to 6 is 2 hops
    (via 5, precursor 3); both rules (ns-2's ``num_forwards > rt_hops`` and the RFC's
    MAX_REPAIR_TTL) repair the break of 4-5 locally."""
    r = Run(4, profile, **explicit)
    r.core.table.add(RouteEntry(1, 3, 3, 5, True, FAR))
    r.core.table.add(RouteEntry(6, 5, 2, 10, True, FAR)).precursors.add(3)
    return r


def test_failed_local_repair_ns2_buffers_rediscovers_on_the_purge_tick_and_sends_no_rerr() -> None:
    r = _repairing_node("ns2")
    pkt = data(1, 6)
    # The break at t = 20 s: ns-2 aodv.cc rt_ll_failed -> local_rt_repair: buffer the packet,
    # RTF_IN_REPAIR, sendRequest (no sequence number increment; no jitter: schedule(.., 0.)).
    r.event(TxStatus(Frame(pkt, 5, meta={"prev_hop": 3}), ok=False), 20 * S)
    e = r.core.table.lookup(6, 20 * S)
    assert e is not None and e.state is RouteState.REPAIRING and e.dest_seq_no == 10
    # A packet that arrives during the repair is buffered too (rt_resolve: RTF_IN_REPAIR).
    later = data(1, 6, b"later")
    r.event(FromAir(later, 3, 4), 30 * S)
    # The repair timer fires at 20 + rt_req_timeout (the absolute 21.8 s used as a delay): 41.8 s.
    r.run_until(41800 * MS - 1)
    assert r.core.table.lookup(6, r.now).state is RouteState.REPAIRING  # type: ignore[union-attr]
    r.run_until(41800 * MS)
    assert r.core.table.lookup(6, r.now).state is RouteState.INVALID  # type: ignore[union-attr]
    r.run_until(45 * S)
    # RREQs: sendRequest's TTL from max(rt_req_last_ttl, rt_last_hop_count INFINITY2: the route
    # never went down here) is NETWORK_DIAMETER 30 at once, waits 2 * 30 * 30 ms * rt_req_cnt:
    # 1.8, 3.6, 5.4, 7.2 s, each retry on the next 0.5 s purge tick (rt_purge -> sendRequest).
    assert r.rreqs() == [
        (20 * S, 30, 0),
        (22 * S, 30, 0),  # 21.8 -> 22.0
        (26 * S, 30, 0),  # 25.6 -> 26.0
        (31500 * MS, 30, 0),  # 31.4 -> 31.5
    ]
    # No RERR at all; at the tick 39.0 (the 7.2 s wait from 31.5 ended at 38.7) rt_req_cnt 4 >
    # RREQ_RETRIES 3: hold-down for 10 s and the buffered packets are dropped.
    assert r.rerrs() == []
    assert r.drops("no_route") == [(39 * S, pkt), (39 * S, later)]
    # After the repair timer, a transit packet gets rt_resolve's RERR with the unchanged rt_seqno.
    acts = r.event(FromAir(data(1, 6, b"after"), 3, 4), 45 * S)
    assert [(t, nh, m.unreachable) for t, nh, m in r.rerrs()] == [(45 * S, 3, ((ip(6), 10),))]
    assert Drop(data(1, 6, b"after"), "no_route") in acts


def test_local_repair_ttl_after_the_route_went_down_here_before() -> None:
    # rt_last_hop_count is the hop count when the route last went down (rt_down) at this node:
    # 2, so sendRequest's ring runs 2 + 2 = 4 (0.24 s -> tick 20.5), 6 (0.36 s -> 21.0), 8, then
    # NETWORK_DIAMETER.
    r = _repairing_node("ns2")
    e = r.core.table.lookup(6, 0)
    assert e is not None
    r.core.table.set_state(e, RouteState.INVALID, 0)
    r.core.table.set_state(e, RouteState.VALID, 0)
    r.event(TxStatus(Frame(data(1, 6), 5, meta={"prev_hop": 3}), ok=False), 20 * S)
    r.run_until(23 * S)
    assert r.rreqs() == [(20 * S, 4, 0), (20500 * MS, 6, 0), (21 * S, 8, 0), (21500 * MS, 30, 0)]


def test_failed_local_repair_rfc_sends_rerr_upstream_after_the_ring_wait() -> None:
    r = _repairing_node("rfc", max_broadcast_jitter=0.0)
    pkt = data(1, 6)
    r.event(TxStatus(Frame(pkt, 5, meta={"prev_hop": 3}), ok=False), 20 * S)
    # Section 6.12: sequence number incremented (10 -> 11), RREQ TTL max(MIN_REPAIR_TTL 2,
    # 0.5 * 3) + LOCAL_ADD_TTL 2 = 4, waiting RING_TRAVERSAL_TIME 2 * 40 ms * (4 + 2) = 0.48 s;
    # then "it proceeds in accordance with Section 6.11 by transmitting a RERR".
    r.run_until(30 * S)
    assert r.rreqs() == [(20 * S, 4, 0)]
    assert [(t, nh, m.unreachable) for t, nh, m in r.rerrs()] == [(20480 * MS, 3, ((ip(6), 11),))]
    assert r.drops("no_route") == [(20480 * MS, pkt)]
    assert r.core.table.lookup(6, 20480 * MS).state is RouteState.INVALID  # type: ignore[union-attr]


# ------------------------------------------------------------------ discovery timers


def test_discovery_ns2_floods_four_times_linear_waits_on_purge_ticks_then_holds_down() -> None:
    r = Run(1, "ns2")
    pkt = data(1, 9)
    r.event(FromLocal(pkt), 0)
    # ns-2.26+ sendRequest for a new entry: max(rt_req_last_ttl 0, rt_last_hop_count INFINITY2)
    # is not below TTL_THRESHOLD, so the first RREQ is already NETWORK_DIAMETER (rt_req_cnt 1).
    # Waits 2 * 30 * 30 ms * rt_req_cnt: 1.8, 3.6, 5.4, 7.2 s, each retry on the next 0.5 s tick.
    r.run_until(19 * S - 1)
    assert r.rreqs() == [(0, 30, 0), (2 * S, 30, 0), (6 * S, 30, 0), (11500 * MS, 30, 0)]
    assert r.drops("no_route") == []
    # 11.5 + 7.2 = 18.7 -> tick 19.0: rt_req_cnt 4 > RREQ_RETRIES 3: the packet is dropped and
    # the destination held down until 29.0.
    r.run_until(19 * S)
    assert r.drops("no_route") == [(19 * S, pkt)]
    # A packet originated during the hold-down is buffered, no RREQ (rt_req_timeout > now) ...
    r.event(FromLocal(data(1, 9, b"held")), 25 * S)
    assert len(r.rreqs()) == 4
    # ... and the purge tick at 29.0 asks again, at NETWORK_DIAMETER (rt_req_last_ttl 30).
    r.run_until(29 * S)
    assert r.rreqs()[4:] == [(29 * S, 30, 0)]


def test_discovery_ns2_waits_are_capped_and_an_originated_packet_sends_the_retry() -> None:
    # NODE_TRAVERSAL_TIME 100 ms: the first wait 2 * 30 * 0.1 = 6 s ends on the tick 6.0; the
    # second, 12 s, is capped at MAX_RREQ_TIMEOUT 10 s: 16.0.
    r = Run(1, "ns2", node_traversal_time=0.1)
    r.event(FromLocal(data(1, 9)), 0)
    r.event(FromLocal(data(1, 9, b"2")), 5900 * MS)  # before the wait ends: buffered, no RREQ
    r.run_until(16 * S)
    assert r.rreqs() == [(0, 30, 0), (6 * S, 30, 0), (16 * S, 30, 0)]
    # Purge ticks every 4 s: the 6 s wait ends before the tick 8.0; a packet originated at 7.2 s
    # sends the RREQ at once (rt_resolve -> sendRequest); 7.2 + 10 = 17.2 -> the tick 20.0.
    r = Run(1, "ns2", node_traversal_time=0.1, route_purge_interval=4.0)
    r.event(FromLocal(data(1, 9)), 0)
    r.event(FromLocal(data(1, 9, b"2")), 7200 * MS)
    r.run_until(20 * S)
    assert r.rreqs() == [(0, 30, 0), (7200 * MS, 30, 0), (20 * S, 30, 0)]


def test_discovery_ns2_1b8a_ring_from_ttl_start() -> None:
    # ns-2.1b8a (Klemm 2004): TTL_START 1 and the ring 1, 3, 5, 7 (waits 2 * TTL * 30 ms), then
    # NETWORK_DIAMETER; each retry on the next 0.5 s tick.
    r = Run(1, "ns2", ttl_start=1, ring_search_unknown_hop_count=True)
    r.event(FromLocal(data(1, 9)), 0)
    r.run_until(4 * S)
    assert r.rreqs() == [
        (0, 1, 0),  # 60 ms -> 0.5
        (500 * MS, 3, 0),  # 0.68 -> 1.0
        (1 * S, 5, 0),  # 1.3 -> 1.5
        (1500 * MS, 7, 0),  # 1.92 -> 2.0
        (2 * S, 30, 0),  # 3.8 -> 4.0
        (4 * S, 30, 0),
    ]
    # ns-2.26+'s own TTL_START 5 (aodv.h), were the ring searched: 5 (0.3 s -> 0.5), 7, then 30.
    r = Run(1, "ns2", ring_search_unknown_hop_count=True)
    r.event(FromLocal(data(1, 9)), 0)
    r.run_until(1500 * MS)
    assert r.rreqs() == [(0, 5, 0), (500 * MS, 7, 0), (1 * S, 30, 0)]  # 0.92 -> 1.0


def test_discovery_rfc_expanding_ring_and_exponential_backoff() -> None:
    r = Run(1, "rfc", max_broadcast_jitter=0.0)
    pkt = data(1, 9)
    r.event(FromLocal(pkt), 0)
    r.run_until(30 * S)
    # Section 6.4: TTL_START 1, + TTL_INCREMENT 2 up to TTL_THRESHOLD 7, each waiting
    # RING_TRAVERSAL_TIME 2 * 40 ms * (TTL + 2): 0.24, 0.4, 0.56, 0.72 s; then NET_DIAMETER 35
    # with NET_TRAVERSAL_TIME 2.8 s doubling (section 6.3) for RREQ_RETRIES 2 retries.
    assert [(t, ttl) for t, ttl, _ in r.rreqs()] == [
        (0, 1),
        (240 * MS, 3),
        (640 * MS, 5),
        (1200 * MS, 7),
        (1920 * MS, 35),
        (4720 * MS, 35),
        (10320 * MS, 35),
    ]
    assert r.drops("no_route") == [(21520 * MS, pkt)]


def test_rediscovery_ttl_after_a_known_hop_count() -> None:
    # ns-2: rt_last_hop_count 4 < TTL_THRESHOLD -> TTL 6, wait 2 * 6 * 30 ms = 0.36 s -> tick 0.5.
    # RFC 6.4: hop count 4 + TTL_INCREMENT = 6, wait 2 * 40 ms * (6 + 2) = 0.64 s -> 0.66 s.
    for profile, second in (("ns2", (500 * MS, 8)), ("rfc", (660 * MS, 35))):
        r = Run(1, profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(9, 2, 4, 17, True, 10 * MS))
        r.core.table.lookup(9, 20 * MS)  # expired: INVALID, hop count 4 kept
        r.event(FromLocal(data(1, 9)), 20 * MS)
        r.run_until(1 * S)
        # ns-2's next: 6 < 7 -> 8; the RFC's: 6 + 2 = 8 > TTL_THRESHOLD -> NET_DIAMETER.
        assert [(t, ttl) for t, ttl, _ in r.rreqs()][:2] == [(20 * MS, 6), second], profile


def test_active_route_timeout() -> None:
    # aodv.cc AODV::forward: rt_expire = CURRENT_TIME + ACTIVE_ROUTE_TIMEOUT (aodv.h: 10 s);
    # RFC 3561 section 10: ACTIVE_ROUTE_TIMEOUT 3 s.
    for profile, lifetime in (("ns2", 10 * S), ("rfc", 3 * S)):
        r = Run(3, profile)
        r.core.table.add(RouteEntry(9, 4, 2, 10, True, 1 * S))
        r.event(FromAir(data(1, 9), 2, 3), 500 * MS)
        e = r.core.table.lookup(9, 500 * MS)
        assert e is not None and e.expires_ns == 500 * MS + lifetime, profile


# ------------------------------------------------------------------ sequence numbers, jitter


def test_no_route_rerr_sequence_number() -> None:
    # A transit packet for an expired route (section 6.11 case (ii)): the RFC increments the
    # stored destination sequence number (10 -> 11) and reports it; ns-2's rt_resolve reports
    # rt_seqno unchanged and keeps it.
    for profile, seq in (("ns2", 10), ("rfc", 11)):
        r = Run(3, profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(9, 4, 2, 10, True, 100 * MS))
        r.event(FromAir(data(1, 9), 2, 3), 200 * MS)
        assert [(nh, m.unreachable) for _, nh, m in r.rerrs()] == [(2, ((ip(9), seq),))], profile
        e = r.core.table.lookup(9, 200 * MS)
        assert e is not None and e.dest_seq_no == seq, profile


def test_originated_broadcasts_are_not_jittered_under_ns2() -> None:
    # ns-2: sendRequest schedules its RREQ with delay 0; AODV::forward jitters a forwarded
    # broadcast by 0.01 * uniform. The rfc profile (as ns-3) jitters both.
    for profile, originated_jittered in (("ns2", False), ("rfc", True)):
        r = Run(5, profile)
        acts = r.event(FromLocal(data(5, 9)), 0)
        (rreq,) = [a for a in acts if isinstance(a, Send) and a.frame.next_hop == BROADCAST]
        assert (rreq.jitter_ns > 0) is originated_jittered, profile
        assert 0 <= rreq.jitter_ns < 10 * MS
        fwd = Rreq(rreq_id=7, dest_ip=ip(9), dest_seq_no=0, orig_ip=ip(1), orig_seq_no=3, hop_count=1)
        acts = r.event(air(fwd, 2, ttl=5), 1 * S)
        (out,) = [a for a in acts if isinstance(a, Send) and a.frame.next_hop == BROADCAST]
        assert 0 < out.jitter_ns < 10 * MS, profile


def test_hold_down_keeps_the_buffer_as_ns2_1b8a() -> None:
    # ns-2.1b8a's sendRequest sets the hold-down without draining rqueue: the packet still waits
    # at 19.0 and the tick after the hold-down (29.0) asks again for it.
    r = Run(1, "ns2", hold_down_drops_buffer=False)
    r.event(FromLocal(data(1, 9)), 0)
    r.run_until(29 * S)
    assert r.drops("no_route") == []
    assert [t for t, _, _ in r.rreqs()] == [0, 2 * S, 6 * S, 11500 * MS, 29 * S]
    assert len(r.core.buffer) == 1


def test_klemm_scenarios_run_ns2_1b8a_and_cohen_runs_ns2() -> None:
    """ns-2.1b8a (Klemm 2004) aodv.h: no AODV_LOCAL_REPAIR, ACTIVE_ROUTE_TIMEOUT 50, TTL_START 1,
    rt_req_last_ttl starting at 0 (TTL_START), sendRequest's hold-down without the rqueue drain;
    the rest as ns-2.26-2.35. Cohen (ns-2.33): the ns2 profile unchanged."""
    topo = Path(__file__).resolve().parents[3] / "topologies"
    ns2 = effective_params("aodv", "ns2", None)
    assert isinstance(ns2, AodvParams)
    for name in ("klemm2004", "klemm2004-small"):
        r = load_scenario(topo / f"{name}.yaml").routing
        p = effective_params(r.protocol, r.profile, r.params)
        assert isinstance(p, AodvParams)
        assert (p.local_repair, p.active_route_timeout, p.ttl_start) == (False, 50.0, 1), name
        assert p.ring_search_unknown_hop_count and not p.hold_down_drops_buffer, name
        assert p.source_rebuffers_on_break, name
        assert (p.my_route_timeout, p.reverse_route_life) == (60.0, 10.0), name
        assert (p.net_diameter, p.node_traversal_time, p.rreq_retries, p.max_rreq_timeout) == (
            30,
            0.03,
            3,
            10.0,
        )
        assert p.rreq_schedule == "ns2" and not p.jitter_originated
    for name in ("cohen", "cohen-small"):
        r = load_scenario(topo / f"{name}.yaml").routing
        assert effective_params(r.protocol, r.profile, r.params) == ns2, name


# ------------------------------------------------------------------ route errors, link breaks


def _rerr_node(profile: str) -> tuple[Run, Frame, Frame]:
    """Station 3: route to 9 via 4 (seq 10, precursor 2); a frame for 7 queued to 4, one to 5."""
    r = Run(3, profile, max_broadcast_jitter=0.0)
    r.core.table.add(RouteEntry(9, 4, 2, 10, True, FAR)).precursors.add(2)
    to4, to5 = Frame(data(1, 7, b"q4"), 4, meta={"prev_hop": 2}), Frame(data(1, 8, b"q5"), 5)
    r.core.ctx.ifq.enqueue(to4)
    r.core.ctx.ifq.enqueue(to5)
    return r, to4, to5


def test_received_rerr_sequence_number_check_and_interface_queue_flush() -> None:
    # An older sequence number (0, as a case-(ii) RERR without an entry carries): ns-2's
    # recvError skips the entry (rt_seqno 10 > 0); RFC 6.11 (iii) copies it and invalidates.
    r, to4, to5 = _rerr_node("ns2")
    r.event(air(Rerr(((ip(9), 0),)), 4, to=3), 1 * S)
    assert r.core.table.lookup(9, 1 * S).state is RouteState.VALID  # type: ignore[union-attr]
    assert r.rerrs() == [] and list(r.core.ctx.ifq) == [to4, to5]
    # A fresher one: invalidated, propagated, and every frame queued to the RERR's sender dropped.
    r.event(air(Rerr(((ip(9), 11),)), 4, to=3), 2 * S)
    e = r.core.table.lookup(9, 2 * S)
    assert e is not None and e.state is RouteState.INVALID and e.dest_seq_no == 11
    assert [(t, nh, m.unreachable) for t, nh, m in r.rerrs()] == [(2 * S, 2, ((ip(9), 11),))]
    assert r.drops("aodv_rerr_ifq_flush") == [(2 * S, to4.packet)]
    assert list(r.core.ctx.ifq) == [to5]

    r, to4, to5 = _rerr_node("rfc")
    r.event(air(Rerr(((ip(9), 0),)), 4, to=3), 1 * S)
    e = r.core.table.lookup(9, 1 * S)
    assert e is not None and e.state is RouteState.INVALID and e.dest_seq_no == 0
    assert [(nh, m.unreachable) for _, nh, m in r.rerrs()] == [(2, ((ip(9), 0),))]
    assert list(r.core.ctx.ifq) == [to4, to5]


def test_a_repaired_break_changes_nothing_else_under_ns2() -> None:
    """Station 4 of 1-2-3-4-5-6 (as the failed-repair tests) also has a route to 8 via 5
    (precursor 3) and two frames queued to 5, one for 6 and one for 8."""
    for profile in ("ns2", "rfc"):
        r = _repairing_node(profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(8, 5, 3, 20, True, FAR)).precursors.add(3)
        q6 = Frame(data(1, 6, b"q6"), 5, meta={"prev_hop": 3})
        q8 = Frame(data(1, 8, b"q8"), 5, meta={"prev_hop": 3})
        r.core.ctx.ifq.enqueue(q6)
        r.core.ctx.ifq.enqueue(q8)
        r.event(TxStatus(Frame(data(1, 6), 5, meta={"prev_hop": 3}), ok=False), 20 * S)
        e8 = r.core.table.lookup(8, 20 * S)
        assert e8 is not None
        if profile == "ns2":
            # rt_ll_failed: local_rt_repair(rt, p); return -- the route to 8 stays up, no RERR,
            # the queued frames still go to 5; when the one for 6 fails it joins the repair.
            assert e8.state is RouteState.VALID and r.rerrs() == []
            assert list(r.core.ctx.ifq) == [q6, q8]
            assert r.core.ctx.ifq.remove_if(partial(operator.is_, q6)) == [q6]  # the MAC takes it
            r.event(TxStatus(q6, ok=False), 20010 * MS)
            assert [b.packet for b in r.core.buffer.take(6)] == [data(1, 6), q6.packet]
            assert r.rerrs() == [] and r.drops("link_failure") == []
        else:
            # Section 6.11: every route through 5 but the repaired one is invalidated (sequence
            # number + 1) and reported to its precursors; the queued frames are taken out.
            assert e8.state is RouteState.INVALID
            assert [(nh, m.unreachable) for _, nh, m in r.rerrs()] == [(3, ((ip(8), 21),))]
            assert list(r.core.ctx.ifq) == []
            assert r.drops("link_failure") == [(20 * S, q8.packet)]
            assert [b.packet for b in r.core.buffer.take(6)] == [data(1, 6), q6.packet]


def test_link_break_prunes_the_neighbour_from_every_precursor_list_under_ns2() -> None:
    # ns-2 handle_link_failure: rt->pc_delete(id) for every entry; the RFC clears only the lists
    # of the routes it reports. Station 3's own packet to 9 fails at 4 (no repair: our packet).
    for profile, left in (("ns2", set()), ("rfc", {4})):
        r = Run(3, profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(9, 4, 2, 10, True, FAR))
        r.core.table.add(RouteEntry(1, 2, 2, 5, True, FAR)).precursors.update({4})
        r.event(TxStatus(Frame(data(3, 9), 4, meta={"prev_hop": None}), ok=False), 1 * S)
        e = r.core.table.lookup(1, 1 * S)
        assert e is not None and e.precursors == left, profile


def test_reverse_route_is_replaced_only_by_a_fresher_or_shorter_one() -> None:
    # Station 3 has a reverse route to 1 via 2 (2 hops, sequence number 5). The same RREQ
    # sequence number over 4 with 3 hops: section 6.2 and ns-2's recvRequest keep the route
    # (lifetime extended), the testbed before issue 46 (legacy) moved it.
    def rreq(rid: int, seq: int) -> FromAir:
        return air(Rreq(rid, ip(9), 0, ip(1), seq, 2, unknown_seq_no=True), 4, ttl=5)

    for profile, via in (("ns2", 2), ("rfc", 2), ("legacy", 4)):
        r = Run(3, profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(1, 2, 2, 5, True, 2 * S))
        r.event(rreq(1, 5), 1 * S)
        e = r.core.table.lookup(1, 1 * S)
        assert e is not None and (e.next_hop, e.hop_count) == ((2, 2) if via == 2 else (4, 3)), profile
        assert e.expires_ns > 2 * S, profile
        r.event(rreq(2, 6), 1500 * MS)  # fresher: every profile moves it
        e = r.core.table.lookup(1, 1500 * MS)
        assert e is not None and (e.next_hop, e.hop_count, e.dest_seq_no) == (4, 3, 6), profile


def test_the_source_s_own_packet_at_a_break() -> None:
    # ns-2.26-2.35 rt_ll_failed drops the source's failed packet (and its queued ones) and sends
    # no RREQ until the source sends again; ns-2.1b8a and the rfc profile keep it and rediscover.
    for profile, kept in (("ns2", False), ("rfc", True)):
        r = Run(1, profile, max_broadcast_jitter=0.0)
        r.core.table.add(RouteEntry(9, 2, 3, 10, True, FAR))
        pkt = data(1, 9)
        r.event(TxStatus(Frame(pkt, 2, meta={"prev_hop": None}), ok=False), 1 * S)
        assert (len(r.core.buffer) == 1) is kept, profile
        assert (r.drops("link_failure") == [(1 * S, pkt)]) is not kept, profile
        assert [t for t, _, _ in r.rreqs()] == ([1 * S] if kept else []), profile
    # ns2: the next packet the source sends starts the discovery (rt_resolve -> sendRequest).
    r.event(FromLocal(data(1, 9, b"next")), 2 * S)
    assert [t for t, _, _ in r.rreqs()] == [1 * S, 1560 * MS]  # rfc: TTL 5 waited 0.56 s
    r = Run(1, "ns2")
    r.core.table.add(RouteEntry(9, 2, 3, 10, True, FAR))
    r.event(TxStatus(Frame(data(1, 9), 2, meta={"prev_hop": None}), ok=False), 1 * S)
    r.event(FromLocal(data(1, 9, b"next")), 2 * S)
    assert [(t, ttl) for t, ttl, _ in r.rreqs()] == [(2 * S, 5)]  # last hop count 3 + 2


def test_destination_rrep_lifetime_and_reverse_route_life() -> None:
    # Station 5 answers a RREQ of 1 that came over 4 with 3 hops. RREP Lifetime: ns-2's
    # MY_ROUTE_TIMEOUT 10 s; RFC 10: 2 * max(ACTIVE_ROUTE_TIMEOUT 3 s, PATH_DISCOVERY_TIME 5.6 s)
    # = 11.2 s. Reverse route to 1: ns-2's REV_ROUTE_LIFE 6 s; RFC 6.5: 2 * 2.8 s - 2 * 4 * 40 ms
    # = 5.28 s.
    for profile, lifetime_ms, reverse_ns in (("ns2", 10000, 6 * S), ("rfc", 11200, 5280 * MS)):
        r = Run(5, profile, max_broadcast_jitter=0.0)
        acts = r.event(air(Rreq(1, ip(5), 0, ip(1), 3, 3, unknown_seq_no=True), 4, ttl=5), 1 * S)
        (rrep,) = [decode(a.frame.packet[28:]) for a in acts if isinstance(a, Send)]
        assert isinstance(rrep, Rrep) and rrep.lifetime_ms == lifetime_ms, profile
        e = r.core.table.lookup(1, 1 * S)
        assert e is not None and e.expires_ns == 1 * S + reverse_ns, profile
