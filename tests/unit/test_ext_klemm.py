"""Klemm et al. 2004 in virtual time: the neighbour table (equations 1-3), Persistent MAC,
Proactive LM, Reactive LM and the GDWN route state on the AODV core (docs/extensions-aodv.md)."""

from __future__ import annotations

import random
import struct

import pytest

from nodes.core import NS_PER_MS, NS_PER_S, ParamError
from nodes.core.addr import BROADCAST, station_ip_bytes, station_ip_int
from nodes.core.events import Drop, Frame, FromAir, Send, SetPower, SetTimer, Timer, TxStatus
from nodes.core.ipv4 import checksum
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.neighbour_table import (
    NeighbourEntry,
    NeighbourTable,
    NeighbourTableParams,
    dbm_to_w,
    distance_from_rx_power,
    power_for_range_w,
    rx_power_w,
    w_to_dbm,
)
from nodes.extensions.persistent_mac import META_PERSISTED
from nodes.extensions.reactive_lm import META_HIGH
from nodes.protocols.aodv import create as aodv_create
from nodes.protocols.aodv import wire
from nodes.protocols.aodv.messages import Rerr, Rreq, decode
from nodes.protocols.aodv.protocol import AodvRouting
from nodes.protocols.aodv.route_table import RouteEntry, RouteState

P = NeighbourTableParams()
HIGH_DBM = w_to_dbm(power_for_range_w(275.0, P))


def rssi_at(d_m: float) -> float:
    return w_to_dbm(rx_power_w(d_m, P))


def udp(src: int, dst: int, n: int = 0, ttl: int = 64) -> bytes:
    payload = struct.pack("!HHHH", 5000, 5001, 8 + 4, 0) + n.to_bytes(4, "big")
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(payload),
            n,
            0x4000,
            ttl,
            17,
            0,
            station_ip_bytes(src),
            station_ip_bytes(dst),
        )
    )
    hdr[10:12] = checksum(hdr).to_bytes(2, "big")
    return bytes(hdr) + payload


# ---------------------------------------------------------------------------------- equation 1
@pytest.mark.parametrize("d", [5.0, 50.0, 86.0, 86.2, 100.0, 200.0, 249.9, 250.0, 275.0, 400.0])
def test_distance_inversion_is_exact(d: float) -> None:
    assert distance_from_rx_power(rx_power_w(d, P), P) == pytest.approx(d, rel=1e-12)
    assert distance_from_rx_power(dbm_to_w(rssi_at(d)), P) == pytest.approx(d, rel=1e-9)


def test_preset_constants() -> None:
    assert P.crossover_m == pytest.approx(86.20, abs=0.01)
    # RXThresh of ns-2's WaveLAN: 3.652e-10 W at 250 m
    assert rx_power_w(250.0, P) == pytest.approx(3.652e-10, rel=1e-3)
    # Reactive LM's 275 m: Pt * (275/250)^4 in the two-ray branch
    assert power_for_range_w(275.0, P) == pytest.approx(0.28183815 * 1.1**4, rel=1e-12)
    assert HIGH_DBM == pytest.approx(26.156, abs=1e-3)
    with pytest.raises(ParamError):
        attach_extensions(
            NodeContext(1, 2, random.Random(1)), _aodv(1), [{"name": "proactive_lm", "params": {"x": 1}}]
        )


# ---------------------------------------------------------------------------------- equation 2
def test_linear_extrapolation_from_the_last_two_samples() -> None:
    t = NeighbourTable(P)
    t.heard(2, rssi_at(100.0), 0)
    assert t.estimate(2, NS_PER_S) == pytest.approx(100.0)  # one sample: d_2
    t.heard(2, rssi_at(150.0), 1 * NS_PER_S)
    t.heard(2, rssi_at(200.0), 2 * NS_PER_S)  # (d_1, t_1) = (150, 1 s), (d_2, t_2) = (200, 2 s)
    e = t.entries[2]
    assert (e.t1_ns, e.t2_ns) == (NS_PER_S, 2 * NS_PER_S)
    assert t.estimate(2, 2 * NS_PER_S + NS_PER_S // 10) == pytest.approx(205.0)  # equation 3
    assert t.estimate(2, 3 * NS_PER_S) == pytest.approx(250.0)
    assert not t.in_range(2, 3_100 * NS_PER_MS) and t.in_range(2, 2_900 * NS_PER_MS)
    # approaching: negative slope, clamped at 0
    assert NeighbourEntry(3, 10.0, NS_PER_S, 20.0, 0).estimate(5 * NS_PER_S) == 0.0
    # stale after max_age_s
    assert t.estimate(2, 2 * NS_PER_S + P.max_age_ns + 1) is None
    assert t.estimate(9, 0) is None


# ---------------------------------------------------------------------------------- helpers
def _aodv(station: int, n: int = 4) -> AodvRouting:
    ctx = NodeContext(station, n, random.Random(station))
    proto = aodv_create(ctx, {"name": "aodv"})
    assert isinstance(proto, AodvRouting)
    return proto


def station(exts: list[str], me: int = 2) -> AodvRouting:
    """Station ``me`` with a route to 3 via 3 (hop 1) and to 1, precursor 1 on the route to 3."""
    proto = _aodv(me)
    attach_extensions(proto.ctx, proto, exts)
    far = proto.table.add(RouteEntry(3, 3, 1, 5, True, 100 * NS_PER_S))
    far.precursors.add(1)
    proto.table.add(RouteEntry(1, 1, 1, 5, True, 100 * NS_PER_S)).precursors.add(3)
    return proto


def hear(proto: AodvRouting, nb: int, d: float, t: int) -> list[object]:
    return list(proto.on_event(FromAir(udp(nb, proto.me), nb, proto.me, rssi_dbm=rssi_at(d)), t))


def fail(proto: AodvRouting, frame: Frame, t: int, rts: int = 7, data: int = 0) -> list[object]:
    return list(proto.on_event(TxStatus(frame, False, rts, data), t))


def sends(acts: list[object]) -> list[Frame]:
    return [a.frame for a in acts if isinstance(a, Send)]


# ---------------------------------------------------------------------------------- Persistent MAC
def test_persistent_mac_retries_once_when_estimated_in_range() -> None:
    proto = station(["persistent_mac"])
    c = proto.ctx.counters
    hear(proto, 3, 200.0, 0)
    hear(proto, 3, 201.0, NS_PER_S)  # d_est(1.5 s) = 201.5 < 250
    f = Frame(udp(1, 3), 3, meta={"prev_hop": 1})
    acts = fail(proto, f, 1_500 * NS_PER_MS)
    again = sends(acts)
    assert len(again) == 1 and again[0].packet == f.packet and again[0].meta[META_PERSISTED]
    assert again[0].next_hop == 3 and again[0].tx_power_dbm is None
    assert c.extra["aodv_link_breaks"] == 0 and c.extra["klemm_persistent_retries"] == 1
    assert proto.table.lookup(3, 1_500 * NS_PER_MS).state is RouteState.VALID  # type: ignore[union-attr]
    # the 7 additional RTSs fail too: link failure
    fail(proto, again[0], 1_600 * NS_PER_MS)
    assert c.extra["aodv_link_breaks"] == 1
    assert proto.table.lookup(3, 1_600 * NS_PER_MS).state is RouteState.INVALID  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("samples", "t_fail", "rts", "data"),
    [
        ([(0, 230.0), (NS_PER_S, 245.0)], 1_400 * NS_PER_MS, 7, 0),  # d_est = 251 > 250
        ([(0, 100.0)], 3 * NS_PER_S, 7, 0),  # stale (> max_age_s = 2 s)
        ([], NS_PER_S, 7, 0),  # never heard
        ([(0, 100.0)], NS_PER_S // 2, 7, 1),  # DATA failed after a CTS: not a handshake failure
        ([(0, 100.0)], NS_PER_S // 2, 3, 0),  # not at the retry limit
    ],
)
def test_persistent_mac_reports_the_failure_otherwise(
    samples: list[tuple[int, float]], t_fail: int, rts: int, data: int
) -> None:
    proto = station(["persistent_mac"])
    for t, d in samples:
        hear(proto, 3, d, t)
    acts = fail(proto, Frame(udp(1, 3), 3, meta={"prev_hop": 1}), t_fail, rts, data)
    assert not any(f.packet[9] == 17 and f.next_hop == 3 for f in sends(acts))
    assert proto.ctx.counters.extra["aodv_link_breaks"] == 1


# ---------------------------------------------------------------------------------- Proactive LM
def test_proactive_lm_fires_when_distance_at_plus_0_1_s_exceeds_range() -> None:
    proto = station(["proactive_lm"])
    c = proto.ctx.counters
    hear(proto, 3, 200.0, 0)
    hear(proto, 3, 240.0, NS_PER_S)  # d_0.1 = 244
    assert c.extra["klemm_weak_links"] == 0
    assert proto.table.lookup(3, NS_PER_S).state is RouteState.VALID  # type: ignore[union-attr]
    acts = hear(proto, 3, 246.0, 1_100 * NS_PER_MS)  # slope 60 m/s: d_0.1 = 252
    assert c.extra["klemm_weak_links"] == 1
    e = proto.table.lookup(3, 1_100 * NS_PER_MS)
    assert e is not None and e.state is RouteState.GDWN
    # the GDWN message: a RERR with 'G' to the precursor (station 1), unicast, TTL 1
    (gd,) = [f for f in sends(acts) if f.control]
    assert gd.next_hop == 1 and gd.packet[8] == 1
    m = decode(wire.udp_payload(gd.packet, 20) or b"")
    assert isinstance(m, Rerr) and m.going_down and not m.no_delete
    assert m.unreachable == ((station_ip_int(3), 5),)
    assert c.routing_sent["gdwn"] == 1
    # once only until back in range
    hear(proto, 3, 248.0, 1_150 * NS_PER_MS)
    assert c.extra["klemm_weak_links"] == 1


def test_gdwn_route_forwards_data_and_rebroadcasts_rreqs_instead_of_replying() -> None:
    def rreq_from_1(proto: AodvRouting, rid: int, t: int) -> list[Frame]:
        m = Rreq(rid, station_ip_int(3), 0, station_ip_int(1), 9, 0, unknown_seq_no=True)
        pkt = wire.build(station_ip_int(1), wire.LIMITED_BROADCAST, 5, m.encode(), rid)
        return sends(list(proto.on_event(FromAir(pkt, 1, BROADCAST), t)))

    proto = station([])
    out = rreq_from_1(proto, 1, NS_PER_S)  # VALID: the intermediate node answers
    assert [f.next_hop for f in out] == [1] and proto.ctx.counters.routing_sent["rrep"] == 1
    e = proto.table.lookup(3, NS_PER_S)
    assert e is not None
    proto.table.set_state(e, RouteState.GDWN, NS_PER_S)
    out = rreq_from_1(proto, 2, 2 * NS_PER_S)  # GDWN: rebroadcast, no RREP
    assert [f.next_hop for f in out] == [BROADCAST]
    assert proto.ctx.counters.routing_sent["rrep"] == 1 and proto.ctx.counters.routing_forwarded["rreq"] == 1
    # transit data still goes out on the GDWN route
    data = sends(list(proto.on_event(FromAir(udp(1, 3), 1, 2), 2 * NS_PER_S)))
    assert [f.next_hop for f in data] == [3]


def test_gdwn_message_goes_upstream_and_the_source_rediscovers() -> None:
    """Chain 1-2-3 plus 1-4-3 (added later): 2 predicts 3 out of range; 1 gets GDWN, rediscovers
    (destination sequence number + 1) and the new route avoids the weak link (via 4)."""
    net = SimNetwork(4, lambda ctx: _with(ctx, ["proactive_lm"]), [(1, 2), (2, 3)], seed=4)
    n = net.nodes
    for k in range(5):
        net.inject(1, udp(1, 3, k), at_ns=k * 100 * NS_PER_MS)
    net.run_until(NS_PER_S)
    assert len(n[3].delivered) == 5
    p1, p2, p3 = (n[s].runtime.protocol for s in (1, 2, 3))
    assert isinstance(p1, AodvRouting) and isinstance(p2, AodvRouting) and isinstance(p3, AodvRouting)
    seq_before = p1.table.lookup(3, NS_PER_S).dest_seq_no  # type: ignore[union-attr]
    net.link_up(1, 4)
    net.link_up(4, 3)
    rreq_before = n[1].ctx.counters.routing_sent["rreq"]

    def walk_away() -> None:  # both ends see the same distances (symmetric two-ray)
        t0 = net.now_ns
        for a, b in ((2, 3), (3, 2)):
            n[a].runtime.handle(FromAir(udp(b, a), b, a, rssi_dbm=rssi_at(200.0)), t0 - 100 * NS_PER_MS)
            n[a].runtime.handle(FromAir(udp(b, a), b, a, rssi_dbm=rssi_at(246.0)), t0)

    net.at(NS_PER_S + 50 * NS_PER_MS, walk_away)
    net.run_until(NS_PER_S + 60 * NS_PER_MS)
    assert n[2].ctx.counters.extra["klemm_weak_links"] == 1
    assert p2.table.lookup(3, net.now_ns).state is RouteState.GDWN  # type: ignore[union-attr]
    for k in range(5, 10):
        net.inject(1, udp(1, 3, k), at_ns=NS_PER_S + k * 100 * NS_PER_MS)
    net.run_until(3 * NS_PER_S)
    c1 = n[1].ctx.counters
    assert c1.extra["klemm_gdwn_received"] >= 1 and c1.extra["klemm_gdwn_rediscoveries"] == 1
    assert c1.routing_sent["rreq"] > rreq_before
    e = p1.table.lookup(3, net.now_ns)
    assert e is not None and e.state is RouteState.VALID and e.next_hop == 4
    assert e.dest_seq_no == seq_before + 1
    from1 = [p for _, p in n[3].delivered if p[12:16] == station_ip_bytes(1)]
    assert sorted(int.from_bytes(p[-4:], "big") for p in from1) == list(range(10))
    back = p3.table.lookup(1, net.now_ns)  # the reverse route avoided the weak link too
    assert back is not None and back.next_hop == 4


def _with(ctx: NodeContext, exts: list[str]) -> AodvRouting:
    proto = aodv_create(ctx, {"name": "aodv"})
    attach_extensions(ctx, proto, exts)
    assert isinstance(proto, AodvRouting)
    return proto


# ---------------------------------------------------------------------------------- Reactive LM
def reactive_chain(exts: list[str]) -> tuple[SimNetwork, list[tuple[int, Frame]]]:
    """Chain 1-2-3 whose 2-3 link "breaks" at default power and works again at high power."""
    net = SimNetwork(3, lambda ctx: _with(ctx, exts), [(1, 2), (2, 3)], seed=2)
    sent: list[tuple[int, Frame]] = []
    orig = net._transmit

    def spy(src: int, frame: Frame) -> None:
        sent.append((src, frame))
        if src == 2 and frame.tx_power_dbm is not None:
            net.link_up(2, 3)  # the 275 m range reaches station 3 again
        orig(src, frame)

    net._transmit = spy  # type: ignore[method-assign]
    return net, sent


def test_reactive_lm_repairs_with_high_power_and_never_sends_rreqs_at_high_power() -> None:
    net, sent = reactive_chain(["reactive_lm"])
    n = net.nodes
    for k in range(3):
        net.inject(1, udp(1, 3, k), at_ns=k * 100 * NS_PER_MS)
    net.run_until(NS_PER_S)
    net.link_down(2, 3)
    for k in range(3, 8):
        net.inject(1, udp(1, 3, k), at_ns=NS_PER_S + k * 100 * NS_PER_MS)
    net.run_until(4 * NS_PER_S)
    c2 = n[2].ctx.counters
    high = [(s, f) for s, f in sent if f.tx_power_dbm is not None]
    assert high and all(s == 2 and f.next_hop == 3 and f.meta.get(META_HIGH) for s, f in high)
    assert high[0][1].tx_power_dbm == pytest.approx(HIGH_DBM)
    assert (2, 3, pytest.approx(HIGH_DBM)) in net.power_changes  # type: ignore[comparison-overlap]
    assert c2.extra["aodv_link_breaks"] == 0 and c2.extra["klemm_high_power_links"] == 1
    # the upstream source got the GDWN message and started a new route discovery
    assert n[1].ctx.counters.extra["klemm_gdwn_received"] == 1
    assert n[1].ctx.counters.extra["klemm_gdwn_rediscoveries"] == 1
    # RREQs (every broadcast) and every control frame at default power; no SetPower for "all"
    assert all(f.tx_power_dbm is None for _, f in sent if f.next_hop == BROADCAST or f.control)
    assert sum(1 for _, f in sent if f.next_hop == BROADCAST) >= 1
    assert all(nb is not None for _, nb, _ in net.power_changes)
    assert sorted(int.from_bytes(p[-4:], "big") for _, p in n[3].delivered) == list(range(8))


def test_reactive_lm_failure_at_high_power_is_a_link_break_and_power_goes_back() -> None:
    proto = station(["reactive_lm"])
    f = Frame(udp(1, 3), 3, meta={"prev_hop": 1})
    acts = fail(proto, f, NS_PER_S)
    (again,) = [x for x in sends(acts) if not x.control]
    assert again.tx_power_dbm == pytest.approx(HIGH_DBM)
    assert SetPower(3, pytest.approx(HIGH_DBM)) in acts  # type: ignore[arg-type]
    assert proto.table.lookup(3, NS_PER_S).state is RouteState.GDWN  # type: ignore[union-attr]
    acts = fail(proto, again, NS_PER_S + 20 * NS_PER_MS)
    assert proto.ctx.counters.extra["aodv_link_breaks"] == 1
    assert SetPower(3, None) in acts
    assert proto.table.lookup(3, 2 * NS_PER_S).state is RouteState.INVALID  # type: ignore[union-attr]


def test_control_frames_are_never_resent_at_high_power() -> None:
    proto = station(["reactive_lm"])
    rrep = Frame(b"\x45" + bytes(27), 3, control=True)
    acts = fail(proto, rrep, NS_PER_S)
    assert not any(isinstance(a, SetPower) for a in acts)
    # as ns-2's rt_ll_failed, a failed control frame is dropped, not a link break (issue 11)
    assert proto.ctx.counters.extra["aodv_link_breaks"] == 0
    assert Drop(rrep.packet, "aodv_control_tx_failed") in acts


@pytest.mark.parametrize("order", [["persistent_mac", "reactive_lm"], ["reactive_lm", "persistent_mac"]])
def test_persistent_mac_goes_first_then_reactive_lm(order: list[str]) -> None:
    proto = station(order)
    hear(proto, 3, 200.0, 0)
    f = Frame(udp(1, 3), 3, meta={"prev_hop": 1})
    (p,) = [x for x in sends(fail(proto, f, NS_PER_S // 2)) if not x.control]
    assert p.meta.get(META_PERSISTED) and p.tx_power_dbm is None
    (h,) = [x for x in sends(fail(proto, p, NS_PER_S // 2 + 20 * NS_PER_MS)) if not x.control]
    assert h.tx_power_dbm == pytest.approx(HIGH_DBM)
    fail(proto, h, NS_PER_S)
    assert proto.ctx.counters.extra["aodv_link_breaks"] == 1


def test_far_end_raises_power_when_it_predicts_the_link_beyond_range() -> None:
    proto = station(["reactive_lm"])
    hear(proto, 3, 200.0, 0)
    acts = hear(proto, 3, 246.0, 100 * NS_PER_MS)  # d_0.1 = 292
    assert SetPower(3, pytest.approx(HIGH_DBM)) in acts  # type: ignore[arg-type]
    assert proto.ctx.counters.extra["klemm_high_power_links"] == 1
    # the far end's frames are now taken as sent at high power too (no P_t in our frames)
    pr = rx_power_w(260.0, P, power_for_range_w(275.0, P))
    proto.on_event(FromAir(udp(3, 2), 3, 2, rssi_dbm=w_to_dbm(pr)), 200 * NS_PER_MS)
    from nodes.extensions.neighbour_table import KlemmStation

    st: KlemmStation = KlemmStation.of(proto.ctx, None)
    assert st.table.entries[3].d2_m == pytest.approx(260.0)


def test_klemm_extensions_need_aodv_hooks() -> None:
    from nodes.protocols.dsr import create as dsr_create

    ctx = NodeContext(1, 3, random.Random(1))
    proto = dsr_create(ctx, {"name": "dsr"})
    with pytest.raises(ParamError):
        attach_extensions(ctx, proto, ["proactive_lm"])


# ---------------------------------------------------------------------------------- issue 46 fixes
def test_a_vetoed_rreq_copy_does_not_suppress_the_good_copy_that_follows() -> None:
    """Station 2 hears 4 moving out of range (Proactive LM: weak, RREQs from it ignored); a RREQ
    copy from 4 is ignored, the same RREQ (same originator and RREQ ID) from 1 just after is
    still processed and rebroadcast."""
    proto = station(["proactive_lm"])
    hear(proto, 4, 200.0, 0)
    hear(proto, 4, 246.0, 100 * NS_PER_MS)  # slope 460 m/s: d_0.1 = 292 m > 250 m
    assert proto.ctx.counters.extra["klemm_weak_links"] == 1
    m = Rreq(7, station_ip_int(9), 0, station_ip_int(5), 3, 1, unknown_seq_no=True)
    pkt = wire.build(station_ip_int(5), wire.LIMITED_BROADCAST, 5, m.encode(), 7)
    acts = list(proto.on_event(FromAir(pkt, 4, BROADCAST), 200 * NS_PER_MS))
    assert Drop(pkt, "aodv_rreq_vetoed") in acts and not sends(acts)
    acts = list(proto.on_event(FromAir(pkt, 1, BROADCAST), 201 * NS_PER_MS))
    assert [f.next_hop for f in sends(acts)] == [BROADCAST]
    assert proto.ctx.counters.routing_forwarded["rreq"] == 1
    back = proto.table.lookup(5, 201 * NS_PER_MS)
    assert back is not None and back.next_hop == 1
    # a third copy is the duplicate now
    acts = list(proto.on_event(FromAir(pkt, 3, BROADCAST), 202 * NS_PER_MS))
    assert Drop(pkt, "aodv_rreq_duplicate") in acts


@pytest.mark.parametrize(
    ("profile", "first", "second"),
    [
        # RFC 6.4 (legacy): hop count 2 + 2 = TTL 4 waits 2 * 40 ms * (4 + 2) = 480 ms; then TTL 6.
        ("legacy", (4, 1480 * NS_PER_MS), 6),
        # ns-2 sendRequest: the route never went down (rt_last_hop_count INFINITY2): TTL 30 at
        # once, 2 * 30 * 30 ms = 1.8 s -> the 0.5 s tick 3.0 s; then 30 again.
        ("ns2", (30, 3 * NS_PER_S), 30),
    ],
)
def test_gdwn_rediscovery_goes_on_after_its_first_timeout(
    profile: str, first: tuple[int, int], second: int
) -> None:
    """A GDWN route still carries data but must not end the rediscovery started for it: the
    discovery retries until a VALID route comes (before, the first timeout took the GDWN route
    for a found one)."""
    ctx = NodeContext(1, 4, random.Random(1))
    proto = aodv_create(ctx, {"name": "aodv", "profile": profile, "params": {"max_broadcast_jitter": 0.0}})
    e = proto.table.add(RouteEntry(3, 2, 2, 5, True, 100 * NS_PER_S))
    proto.table.set_state(e, RouteState.GDWN, NS_PER_S)
    acts = proto.start_discovery(3, NS_PER_S)
    (f,) = sends(acts)
    (t,) = [a for a in acts if isinstance(a, SetTimer)]
    assert (f.packet[8], t.at_ns) == first
    acts = list(proto.on_event(Timer(t.key), t.at_ns))
    rreqs = [x for x in sends(acts) if x.next_hop == BROADCAST]
    assert [x.packet[8] for x in rreqs] == [second]
    assert proto.requests.get(3) is not None


def test_reactive_lm_acts_only_on_a_failed_handshake() -> None:
    """Klemm s4.2.2: "if the RTS-CTS handshake ... with default transmission power is not
    successful". A DATA frame that got its CTS (data_attempts > 0) but no ACK is AODV's ordinary
    link failure: no high-power resend, no SetPower."""
    proto = station(["reactive_lm"])
    f = Frame(udp(1, 3), 3, meta={"prev_hop": 1})
    acts = fail(proto, f, NS_PER_S, rts=1, data=7)
    assert not any(isinstance(a, SetPower) for a in acts)
    assert all(x.tx_power_dbm is None for x in sends(acts))
    assert proto.ctx.counters.extra["aodv_link_breaks"] == 1
    assert proto.ctx.counters.extra["klemm_high_power_resends"] == 0


@pytest.mark.parametrize("profile", ["legacy", "ns2"])
def test_a_repair_during_a_gdwn_rediscovery_takes_the_route_off_the_dead_hop(profile: str) -> None:
    """Station 4 (route back to 1: 3 hops via 3; to 6: 2 hops via 5, GDWN, rediscovery running)
    loses the link to 5 under a transit packet: the break is repaired locally (ns-2's rule: 3 > 2)
    and the running discovery becomes the repair. The route goes into repair, so the next packet
    for 6 is buffered, not sent to the dead hop (before issue 46 the repair returned early and the
    GDWN route kept carrying data to 5)."""
    ctx = NodeContext(4, 6, random.Random(4))
    proto = aodv_create(ctx, {"name": "aodv", "profile": profile, "params": {"max_broadcast_jitter": 0.0}})
    proto.table.add(RouteEntry(1, 3, 3, 5, True, 100 * NS_PER_S))
    e = proto.table.add(RouteEntry(6, 5, 2, 10, True, 100 * NS_PER_S))
    e.precursors.add(3)
    proto.table.set_state(e, RouteState.GDWN, NS_PER_S)
    proto.start_discovery(6, NS_PER_S)
    first = udp(1, 6, 1)
    acts = list(proto.on_event(TxStatus(Frame(first, 5, meta={"prev_hop": 3}), False, 7, 0), NS_PER_S + 1))
    assert e.state is RouteState.REPAIRING
    assert not [f for f in sends(acts) if not f.control]
    acts = list(proto.on_event(FromAir(udp(1, 6, 2), 3, 4), NS_PER_S + 2))
    assert not sends(acts)
    assert len(proto.buffer) == 2
    d = proto.requests.get(6)
    assert d is not None and d.local_repair
