"""DSR and AODV behaviour in virtual time with links from positions (issue 13 item 4): route
discovery on the line, a ROUTE ERROR when the middle station moves away and the flow rerouted over
a newcomer, and Klemm 2004's GDWN ahead of a walk out of range. The geometry is that of the
real-namespace tests (tests/netns/test_dsr_netns.py, test_aodv_netns.py, test_ext_aodv.py), which
keep one wall-clock run each of the same story (tests/README.md)."""

from __future__ import annotations

from typing import Any

import pytest
from mobile_net import FAR, LINE, MobileNetwork, jumps, rx_power_dbm, still, walk
from scapy.layers.inet import IP, UDP
from scapy.packet import raw

from nodes.core.addr import station_ip
from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions import attach_extensions
from nodes.protocols.aodv import create as aodv_create
from nodes.protocols.aodv import decode as aodv_decode
from nodes.protocols.aodv.messages import Rerr
from nodes.protocols.dsr import create as dsr_create
from topologies.radio import NS2_WAVELAN

MARK = b"MNET"
"""The test's data payloads start with this, then a 2-byte flow id and a 2-byte index."""


def core(protocol: str, extensions: list[str] | None = None) -> Any:
    def make(ctx: NodeContext) -> RoutingProtocol:
        p: RoutingProtocol
        if protocol == "aodv":
            p = aodv_create(ctx, {"name": "aodv"})
        else:
            p = dsr_create(ctx, {"name": "dsr"})
        if extensions:
            attach_extensions(ctx, p, extensions)
        return p

    return make


def data(src: int, dst: int, i: int) -> bytes:
    body = MARK + src.to_bytes(2, "big") + i.to_bytes(2, "big")
    return raw(IP(src=station_ip(src), dst=station_ip(dst)) / UDP(sport=5000, dport=5001) / body)


def index_of(packet: bytes) -> tuple[int, int] | None:
    """(flow source, index) of one of the test's data packets, None for anything else."""
    k = packet.find(MARK)
    if k < 0:
        return None
    return int.from_bytes(packet[k + 4 : k + 6], "big"), int.from_bytes(packet[k + 6 : k + 8], "big")


def two_way_flow(net: MobileNetwork, a: int, b: int, t0_s: float, t1_s: float) -> list[tuple[int, int]]:
    """``a`` -> ``b`` every 50 ms and ``b`` -> ``a`` every 100 ms (a TCP flow and its ACKs, in
    volume) from ``t0_s`` to ``t1_s``; returns (index, send time ns) of the a -> b packets."""
    sent = []
    for i in range(int((t1_s - t0_s) * 20)):
        t = int(t0_s * NS_PER_S) + i * 50 * NS_PER_MS
        net.inject(a, data(a, b, i), at_ns=t)
        sent.append((i, t))
        if i % 2 == 0:
            net.inject(b, data(b, a, i // 2), at_ns=t + 25 * NS_PER_MS)
    return sent


def delivered(net: MobileNetwork, at: int, src: int) -> set[int]:
    out = set()
    for _, p in net.nodes[at].delivered:
        got = index_of(p)
        if got is not None and got[0] == src:
            out.add(got[1])
    return out


def data_hops(net: MobileNetwork, src: int) -> list[tuple[int, int, int]]:
    """(t_ns, transmitter, receiver) of every successful transmission of ``src``'s data."""
    out = []
    for e in net.trace:
        got = index_of(e.packet)
        if e.ok and got is not None and got[0] == src:
            out.append((e.t_ns, e.src, e.dst))
    return out


def aodv_rerrs(net: MobileNetwork) -> list[tuple[int, int, Rerr]]:
    """(t_ns, sender, message) of every AODV ROUTE ERROR on the air (GDWN ones included)."""
    out = []
    for e in net.trace:
        p = e.packet
        if p[9] == 17 and p[22:24] == b"\x02\x8e":
            m = aodv_decode(p[28:])
            if isinstance(m, Rerr):
                out.append((e.t_ns, e.src, m))
    return out


def routing_sent(net: MobileNetwork, kind: str) -> int:
    return sum(n.ctx.counters.routing_sent[kind] for n in net.nodes.values())


def first_time_out_of_range(net: MobileNetwork, a: int, b: int, t0_s: float, t1_s: float) -> int:
    """First virtual time (1 ms steps) at which ``a`` and ``b`` are farther apart than the range."""
    for ms in range(int(t0_s * 1000), int(t1_s * 1000)):
        if net.distance(a, b, ms * NS_PER_MS) > net.range_m():
            return ms * NS_PER_MS
    raise AssertionError(f"{a} and {b} stay in range")


# ----------------------------------------------------------------------------- the harness itself


def test_links_and_power_come_from_the_radio_model() -> None:
    net = MobileNetwork({s: still(*xy) for s, xy in enumerate(LINE, 1)}, core("aodv"))
    assert 249 < net.range_m() < 251  # ns-2 WaveLAN: 250 m
    assert [net.neighbours(s) for s in (1, 3, 5)] == [[2], [2, 4], [4]]
    # the received power at the decode range is the decode threshold (same model both ways)
    assert rx_power_dbm(NS2_WAVELAN, net.range_m()) == pytest.approx(NS2_WAVELAN.rx_threshold_dbm, abs=1e-6)
    # more power, more range (Reactive LM's high-power frames)
    assert net.range_m(NS2_WAVELAN.tx_power_dbm + 3) > 1.18 * net.range_m()
    moved = jumps((0, 0), (4.0, 100.0, 0.0))
    assert [net.position(1, t * NS_PER_S) for t in (0, 3)] == [(0, 50)] * 2
    net2 = MobileNetwork({1: moved, 2: still(300, 0)}, core("aodv"))
    assert net2.neighbours(1) == [] and net2.distance(1, 2, 4 * NS_PER_S) == 200


# -------------------------------------------------------------------------------- discovery (line)


@pytest.mark.parametrize("protocol", ["aodv", "dsr"])
def test_line_route_discovery_and_forwarding(protocol: str) -> None:
    """tests/netns test_chain5_*: sta1 discovers sta5 four hops away (RREQ flooded, RREP from the
    destination), 2, 3 and 4 forward every packet, each hop between stations in range."""
    net = MobileNetwork({s: still(*xy) for s, xy in enumerate(LINE, 1)}, core(protocol))
    for i in range(20):
        net.inject(1, data(1, 5, i), at_ns=i * 50 * NS_PER_MS)
    net.run_until(5 * NS_PER_S)
    c = {s: net.nodes[s].ctx.counters for s in net.nodes}
    assert delivered(net, 5, 1) == set(range(20))
    assert c[1].routing_sent["rreq"] >= 1 and c[5].routing_sent["rrep"] >= 1
    assert all(c[s].routing_sent["rrep"] == 0 for s in (1, 2, 3, 4))  # nobody else knew a route
    assert [c[s].data_forwarded for s in (2, 3, 4)] == [20, 20, 20]
    assert len(c[1].samples["discovery_latency_s"]) == 1  # one discovery served all 20
    assert sorted({(a, b) for _, a, b in data_hops(net, 1)}) == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert all(net.distance(a, b, t) <= net.range_m() for t, a, b in data_hops(net, 1))


# ---------------------------------------------------------------------- the middle station leaves


def middle_station_moves(protocol: str) -> tuple[MobileNetwork, list[tuple[int, int]]]:
    """tests/netns ``middle_station_moves``: sta6 arrives beside sta3 at 4 s, sta3 leaves at 8 s,
    in the middle of a sta1 <-> sta5 flow (1 s to 20 s)."""
    traj = {s: still(*xy) for s, xy in enumerate(LINE, 1)}
    traj[3] = jumps(LINE[2], (8.0, *FAR))
    traj[6] = jumps(FAR, (4.0, 400.0, 150.0))
    net = MobileNetwork(traj, core(protocol))
    sent = two_way_flow(net, 1, 5, 1.0, 20.0)
    net.run_until(22 * NS_PER_S)
    return net, sent


@pytest.mark.parametrize("protocol", ["aodv", "dsr"])
def test_middle_station_moves_away_route_error_and_reroute(protocol: str) -> None:
    net, sent = middle_station_moves(protocol)
    c = {s: net.nodes[s].ctx.counters for s in net.nodes}
    t_move = 8 * NS_PER_S
    hops = data_hops(net, 1)
    # before the move the flow goes over sta3 (sta6 is in range of 2 and 4 from 4 s but the route
    # is already there); after the repair, over sta6
    assert {(a, b) for t, a, b in hops if t < t_move} == {(1, 2), (2, 3), (3, 4), (4, 5)}
    after = {(a, b) for t, a, b in hops if t > t_move + NS_PER_S}
    assert (2, 6) in after and (6, 4) in after and not any(3 in h for h in after)
    assert all(net.distance(a, b, t) <= net.range_m() for t, a, b in hops)
    # the break is seen by the MAC and reported with a ROUTE ERROR
    assert routing_sent(net, "rerr") >= 1
    if protocol == "aodv":
        rerrs = [(t, s) for t, s, m in aodv_rerrs(net) if not m.going_down]
        assert rerrs and all(t > t_move for t, _ in rerrs)
        assert rerrs[0][1] in (2, 4)  # the station upstream of the break, in either direction
        assert sum(c[s].extra["aodv_link_breaks"] for s in c) >= 1
        # the first discovery and at least one new one (either end may rediscover: sta5's RREQ
        # for its own packets also gives sta1 a reverse route, RFC 3561 s6.5)
        assert sum(len(c[s].samples.get("discovery_latency_s", [])) for s in (1, 5)) >= 2
    else:
        assert sum(c[s].extra["salvaged"] for s in c) + c[1].routing_sent["rreq"] >= 2
    # the flow continued: everything sent before the move and well after it arrived, and the
    # repair lost at most a few packets (the window of one MAC failure and a discovery)
    got = delivered(net, 5, 1)
    before = {i for i, t in sent if t < t_move - 100 * NS_PER_MS}
    late = {i for i, t in sent if t > t_move + 2 * NS_PER_S}
    assert before <= got and late <= got
    assert len(sent) - len(got) <= 10, sorted(set(range(len(sent))) - got)
    assert c[6].data_forwarded > 0


# ----------------------------------------------------------------------- Klemm 2004: GDWN on a walk

CHAIN = [(0, 100), (220, 100), (440, 100), (660, 100), (880, 100)]
"""Five stations 220 m apart (tests/netns/test_ext_aodv.py): each hears only its neighbours."""
KLEMM = ["persistent_mac", "proactive_lm", "reactive_lm"]


def klemm_walk(extensions: list[str]) -> MobileNetwork:
    """sta6 arrives beside the chain at 2 s; sta3 walks north at 12 m/s from 3 s (out of sta2's
    and sta4's range at ~12.9 s) during a sta1 <-> sta5 flow."""
    traj = {s: still(*xy) for s, xy in enumerate(CHAIN, 1)}
    traj[3] = walk(CHAIN[2], 3.0, (440.0, 400.0), 12.0)
    traj[6] = jumps((440.0, 990.0), (2.0, 440.0, 20.0))
    net = MobileNetwork(traj, core("aodv", extensions))
    two_way_flow(net, 1, 5, 1.0, 18.0)
    net.run_until(20 * NS_PER_S)
    return net


def test_klemm_gdwn_before_the_break_and_reroute() -> None:
    """tests/netns test_ext_aodv: the neighbours predict the break from the signal strength, the
    routes go GDWN and GDWN messages go upstream before the link breaks, the source rediscovers and
    the flow goes over sta6."""
    net = klemm_walk(KLEMM)
    c = {s: net.nodes[s].ctx.counters for s in net.nodes}
    t_break = first_time_out_of_range(net, 2, 3, 3.0, 20.0)
    assert 12.8 * NS_PER_S < t_break < 13.0 * NS_PER_S  # the geometry: sqrt(250^2 - 220^2) / 12 + 3
    assert sum(c[s].extra["klemm_weak_links"] for s in (2, 3, 4)) >= 1
    gdwn = [(t, s) for t, s, m in aodv_rerrs(net) if m.going_down]
    assert gdwn, "GDWN messages go upstream"
    # ... just ahead of the break: Proactive LM looks 0.1 s ahead (measured: 0.097 s)
    assert t_break - 300 * NS_PER_MS < gdwn[0][0] < t_break, (gdwn[0][0], t_break)
    assert sum(c[s].extra["klemm_gdwn_routes"] for s in c) >= 1
    assert sum(c[s].extra["klemm_gdwn_rediscoveries"] for s in (1, 5)) >= 1
    assert c[6].data_forwarded > 0, "the flow continued over the new station"
    hops = data_hops(net, 1)
    assert not [h for h in hops if h[0] > t_break and 3 in h[1:]], "no data over the broken link"
    assert delivered(net, 5, 1) == set(range(340)), "nothing lost: the route moved before the break"


def test_without_klemm_the_route_error_comes_after_the_break() -> None:
    """The same walk with plain AODV: no GDWN, and the first ROUTE ERROR only once the MAC has
    failed on the broken link (what the extensions are there to anticipate)."""
    net = klemm_walk([])
    t_break = first_time_out_of_range(net, 2, 3, 3.0, 20.0)
    rerrs = aodv_rerrs(net)
    assert rerrs and not any(m.going_down for _, _, m in rerrs)
    assert rerrs[0][0] > t_break
    assert routing_sent(net, "gdwn") == 0
    assert net.nodes[6].ctx.counters.data_forwarded > 0  # plain AODV repairs too, after the fact
