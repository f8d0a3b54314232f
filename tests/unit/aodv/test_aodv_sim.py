"""AODV on the virtual-time network (nodes.core.sim): the real NodeRuntime, ideal links."""

from __future__ import annotations

from typing import Any

from aodv_helpers import data, ip
from scapy.layers.inet import IP

from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.protocols.aodv import AodvRouting, Rerr, Rrep, Rreq, create, decode


def make(**params: Any) -> Any:
    def f(ctx: NodeContext) -> AodvRouting:
        return create(ctx, {"name": "aodv", "profile": "legacy", "params": params})

    return f


def aodv_trace(net: SimNetwork) -> list[tuple[int, int, int, int, object]]:
    """(t, src, dst, ip ttl, message) of every AODV frame on the air."""
    out: list[tuple[int, int, int, int, object]] = []
    for t in net.trace:
        p = t.packet
        if p[9] == 17 and p[22:24] == b"\x02\x8e":
            out.append((t.t_ns, t.src, t.dst, p[8], decode(p[28:])))
    return out


def proto(net: SimNetwork, s: int) -> AodvRouting:
    p = net.nodes[s].runtime.protocol
    assert isinstance(p, AodvRouting)
    return p


def test_chain_discovery_ttls_and_delivery() -> None:
    net = SimNetwork.chain(5, make(max_broadcast_jitter=0.0))
    net.inject(1, data(1, 5))
    net.run_for(2 * NS_PER_S)
    assert len(net.nodes[5].delivered) == 1
    originated = [(t, ttl) for t, src, _, ttl, m in aodv_trace(net) if src == 1 and isinstance(m, Rreq)]
    # TTL 1 at 0, TTL 3 after 240 ms, TTL 5 after 400 ms more (RING_TRAVERSAL_TIME), which reaches 5.
    assert originated == [(0, 1), (240 * NS_PER_MS, 3), (640 * NS_PER_MS, 5)]
    e = proto(net, 1).table.usable(5, net.now_ns)
    assert e is not None and (e.next_hop, e.hop_count) == (2, 4)
    c = net.nodes[1].ctx.counters
    assert c.routing_sent["rreq"] == 3 and c.samples["discovery_latency_s"][0] > 0.64
    assert net.nodes[5].ctx.counters.routing_sent["rrep"] == 1
    assert IP(net.nodes[5].delivered[0][1]).ttl == 64 - 3  # three forwarders


def test_second_packet_uses_the_route_without_discovery() -> None:
    net = SimNetwork.chain(3, make())
    net.inject(1, data(1, 3))
    net.run_for(NS_PER_S)
    net.inject(1, data(1, 3, b"two"))
    net.run_for(NS_PER_S)
    assert len(net.nodes[3].delivered) == 2
    assert net.nodes[1].ctx.counters.routing_sent["rreq"] == 2  # TTL 1, then TTL 3


def test_station_moves_away_rerr_then_new_route_and_flow_continues() -> None:
    # 1-2-3-4-5 plus a longer detour 2-6-7-4
    links = [(1, 2), (2, 3), (3, 4), (4, 5), (2, 6), (6, 7), (7, 4)]
    net = SimNetwork(7, make(), links)
    for i in range(60):  # 20 packets/s for 3 s
        net.inject(1, data(1, 5, i.to_bytes(2, "big")), at_ns=i * 50 * NS_PER_MS)

    def station_3_moves_away() -> None:
        net.link_down(2, 3)
        net.link_down(3, 4)

    net.at(NS_PER_S, station_3_moves_away)
    net.run_until(6 * NS_PER_S)
    got = {IP(p).load[:2] for _, p in net.nodes[5].delivered}
    assert len(got) >= 55  # a few may die with the link
    rerrs = [(src, m) for _, src, _, _, m in aodv_trace(net) if isinstance(m, Rerr)]
    assert rerrs and rerrs[0][0] == 2  # the node upstream of the break reports it
    e = proto(net, 1).table.usable(5, net.now_ns)
    assert e is not None and e.hop_count == 5
    assert proto(net, 2).table.usable(5, net.now_ns).next_hop == 6  # type: ignore[union-attr]
    late = [t for t, p in net.nodes[5].delivered if IP(p).load[:2] == (59).to_bytes(2, "big")]
    assert late, "the flow continued after the break"


def test_unreachable_destination_gives_up_and_drops() -> None:
    net = SimNetwork(3, make(), [(1, 2)])
    net.inject(1, data(1, 3))
    net.run_until(30 * NS_PER_S)
    c = net.nodes[1].ctx.counters
    assert c.drops["no_route"] == 1
    assert c.routing_sent["rreq"] == 7
    assert c.extra["aodv_discovery_failed"] == 1


def test_local_repair_keeps_source_route() -> None:
    # 1-2-3-4-5 with a detour 3-6-4 around the 3-4 link; the break is half-way: the RFC rule
    # (destination within MAX_REPAIR_TTL) repairs it, ns-2's (closer to the destination) would not
    links = [(1, 2), (2, 3), (3, 4), (4, 5), (3, 6), (6, 4)]
    net = SimNetwork(6, make(local_repair=True, local_repair_rule="rfc"), links)
    for i in range(40):
        net.inject(1, data(1, 5, i.to_bytes(2, "big")), at_ns=i * 50 * NS_PER_MS)
    net.at(NS_PER_S, lambda: net.link_down(3, 4))
    net.run_until(4 * NS_PER_S)
    assert net.nodes[3].ctx.counters.extra["aodv_local_repairs"] == 1
    rreqs_from_1 = net.nodes[1].ctx.counters.routing_sent["rreq"]
    assert rreqs_from_1 == 3  # only the initial discovery: the break was repaired locally
    # the new route is longer (3 hops from 3 instead of 2): RERR with the 'N' flag upstream
    # (the neighbour route to 4 itself is broken: that one is a plain RERR)
    about_5 = [
        m for _, src, _, _, m in aodv_trace(net) if isinstance(m, Rerr) and (ip(5), 1) in m.unreachable
    ]
    assert about_5 and all(m.no_delete for m in about_5)
    assert len({IP(p).load[:2] for _, p in net.nodes[5].delivered}) >= 39


def _chain_with_detour(a: int, b: int, **params: Any) -> SimNetwork:
    """1-2-3-4-5 plus station 6 linked to ``a`` and ``b`` (a detour around the a-b link); 40
    packets 1 -> 5 every 50 ms, the a-b link down at 1 s."""
    links = [(1, 2), (2, 3), (3, 4), (4, 5), (a, 6), (6, b)]
    net = SimNetwork(6, make(**params), links)
    for i in range(40):
        net.inject(1, data(1, 5, i.to_bytes(2, "big")), at_ns=i * 50 * NS_PER_MS)
    net.at(NS_PER_S, lambda: net.link_down(a, b))
    net.run_until(4 * NS_PER_S)
    return net


def test_local_repair_ns2_rule_near_the_destination() -> None:
    # Default parameters (ns-2's AODV_LOCAL_REPAIR): 4 -> 5 breaks; the packets have come 3 hops
    # and have 1 to go, so 4 repairs locally: no new discovery at the source, nothing lost.
    net = _chain_with_detour(4, 5)
    assert net.nodes[4].ctx.counters.extra["aodv_local_repairs"] == 1
    assert net.nodes[1].ctx.counters.routing_sent["rreq"] == 3  # the initial discovery only
    assert net.nodes[4].ctx.counters.drops["link_failure"] == 0
    assert len({IP(p).load[:2] for _, p in net.nodes[5].delivered}) == 40


def test_local_repair_ns2_rule_not_near_the_source() -> None:
    # 2 -> 3 breaks: the packets have come 1 hop and have 3 to go: ns-2 brings the route down
    # (RERR to the source, which rediscovers) instead of repairing.
    net = _chain_with_detour(2, 3)
    assert net.nodes[2].ctx.counters.extra["aodv_local_repairs"] == 0
    assert net.nodes[2].ctx.counters.routing_sent["rerr"] >= 1
    assert net.nodes[1].ctx.counters.routing_sent["rreq"] > 3  # rediscovered
    e = proto(net, 1).table.usable(5, net.now_ns)
    assert e is not None and e.hop_count == 5  # via the detour 2-6-3


def test_per_hop_discovery_latency_is_measured() -> None:
    net = SimNetwork.chain(5, make(max_broadcast_jitter=0.0))
    net.inject(1, data(1, 5))
    net.run_for(2 * NS_PER_S)
    per_hop = proto(net, 1).traversal.per_hop_ns(5)
    # the RREP answered the TTL-5 RREQ sent at 640 ms; ideal links: well under NODE_TRAVERSAL_TIME
    latency = net.nodes[1].ctx.counters.samples["discovery_latency_s"][0] - 0.640
    assert per_hop is not None and 0 < per_hop < 40 * NS_PER_MS
    assert abs(per_hop - latency * NS_PER_S / 4) < NS_PER_MS


def test_hello_detects_silent_link_loss() -> None:
    net = SimNetwork.chain(3, make(enable_hello=True))
    net.inject(1, data(1, 3))
    net.run_for(3 * NS_PER_S)
    hellos = [
        m
        for _, _, _, ttl, m in aodv_trace(net)
        if isinstance(m, Rrep) and m.hop_count == 0 and ttl == 1 and m.dest_ip == m.orig_ip
    ]
    assert hellos
    assert sum(n.ctx.counters.routing_sent["hello"] for n in net.nodes.values()) == len(hellos)
    net.link_down(2, 3)
    t0 = net.now_ns
    net.run_for(4 * NS_PER_S)
    assert net.nodes[2].ctx.counters.extra["aodv_hello_loss"] >= 1
    assert proto(net, 2).table.usable(3, net.now_ns) is None
    assert t0 > 0


def test_hello_off_by_default() -> None:
    net = SimNetwork.chain(3, make())
    net.inject(1, data(1, 3))
    net.run_for(5 * NS_PER_S)
    assert all(n.ctx.counters.routing_sent["hello"] == 0 for n in net.nodes.values())
