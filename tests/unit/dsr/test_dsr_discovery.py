"""Route discovery (RFC 4728 sections 4.3 and 8.2) in virtual time, exact where it matters."""

from __future__ import annotations

import pytest
from dsr_helpers import chain_links, core, net, sent, source_route, udp

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.hooks import PacketDropped, RouteDiscoveryJoined, RouteDiscoveryStarted
from nodes.protocols.dsr.options import RouteReply, RouteRequest


def test_chain_discovers_route_and_delivers() -> None:
    n = net(5, chain_links(5))
    pkt = udp(1, 5)
    n.inject(1, pkt)
    n.run_until(2 * NS_PER_S)
    assert len(n.nodes[5].delivered) == 1
    delivered = n.nodes[5].delivered[0][1]
    assert delivered[9] == 17 and delivered[8] == 64 - 3  # DSR header stripped, 3 forwarding hops
    assert delivered[20:] == pkt[20:]
    data = [(s, d, dp) for _, s, d, dp in sent(n) if dp.next_header == 17]
    assert [(s, d) for s, d, _ in data] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert source_route(data[0][2]).addresses == (2, 3, 4)
    assert [source_route(dp).segs_left for _, _, dp in data] == [3, 2, 1, 0]
    c1 = n.nodes[1].ctx.counters
    assert c1.routing_sent["rreq"] == 2  # non-propagating, then propagating
    assert c1.samples["discovery_latency_s"][0] == pytest.approx(0.05101986)
    assert core(n, 1).cache.find(5, n.now_ns) == (1, 2, 3, 4, 5)


def test_nonpropagating_request_then_propagating_at_exact_time() -> None:
    n = net(5, chain_links(5))
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    rreqs = [(t, dp) for t, s, _, dp in sent(n, 1) if dp.find(RouteRequest)]
    assert [t for t, _ in rreqs] == [0.0, 30.0]  # NonpropRequestTimeout = 30 ms
    assert [dp.ttl for _, dp in rreqs] == [1, 255]  # hop limit 1, then DiscoveryHopLimit


def test_neighbour_answers_nonpropagating_request() -> None:
    n = net(2, [(1, 2)])
    n.inject(1, udp(1, 2))
    n.run_until(NS_PER_S)
    assert n.nodes[1].ctx.counters.routing_sent["rreq"] == 1
    assert len(n.nodes[2].delivered) == 1


def test_request_backoff_and_send_buffer_timeout() -> None:
    """No route: requests at 0 (non-propagating), 30 ms, then RequestPeriod doubling up to
    MaxRequestPeriod; the packet leaves the send buffer after SendBufferTimeout."""
    n = net(2, [])
    dropped: list[str] = []
    core(n, 1).ctx.hooks.subscribe(PacketDropped, lambda ev: dropped.append(ev.reason))
    n.inject(1, udp(1, 2))
    n.run_until(40 * NS_PER_S)
    times = [t for t, s, _, dp in sent(n, 1) if dp.find(RouteRequest)]
    expected = [0.0, 30.0]
    gap = 500.0
    while expected[-1] + gap < 30_000:
        expected.append(expected[-1] + gap)
        gap = min(2 * gap, 10_000.0)
    assert times == expected  # 0, 30, 530, 1530, 3530, 7530, 15530, 25530 ms
    assert dropped == ["send_buffer_timeout"]
    assert n.nodes[1].ctx.counters.drops["send_buffer_timeout"] == 1
    assert core(n, 1).requests.discoveries == {}


@pytest.mark.parametrize(("hop_limit", "reached"), [(1, {2}), (2, {2, 3}), (3, {2, 3, 4})])
def test_hop_limit(hop_limit: int, reached: set[int]) -> None:
    n = net(6, chain_links(6), discovery_hop_limit=hop_limit, nonprop_request=False, max_request_rexmt=1)
    n.inject(1, udp(1, 6))
    n.run_until(NS_PER_S)
    got = {s for s in range(2, 7) if n.nodes[s].ctx.counters.routing_received["rreq"]}
    assert got == reached


def test_max_request_rexmt_drops_buffered_packets() -> None:
    n = net(2, [], max_request_rexmt=3, nonprop_request=False)
    n.inject(1, udp(1, 2))
    n.run_until(10 * NS_PER_S)
    # requests at 0, 0.5, 1.5 s; the third timeout (3.5 s) gives up
    assert n.nodes[1].ctx.counters.routing_sent["rreq"] == 3
    assert n.nodes[1].ctx.counters.drops["no_route"] == 1


def test_target_replies_to_every_copy_and_initiator_learns_both() -> None:
    # 1-2-4 and 1-3-4: the target answers both request copies
    n = net(4, [(1, 2), (2, 4), (1, 3), (3, 4)], nonprop_request=False)
    n.inject(1, udp(1, 4))
    n.run_until(NS_PER_S)
    assert n.nodes[4].ctx.counters.routing_sent["rrep"] == 2
    replies = [dp.find(RouteReply) for _, s, d, dp in sent(n) if d == 1 and dp.find(RouteReply)]
    assert {r.addresses for r in replies if isinstance(r, RouteReply)} == {(2, 4), (3, 4)}
    assert len(n.nodes[4].delivered) == 1


def test_packets_wait_in_send_buffer_during_discovery() -> None:
    n = net(4, chain_links(4))
    started: list[RouteDiscoveryStarted] = []
    joined: list[RouteDiscoveryJoined] = []
    core(n, 1).ctx.hooks.subscribe(RouteDiscoveryStarted, started.append)
    core(n, 1).ctx.hooks.subscribe(RouteDiscoveryJoined, joined.append)
    for k in range(5):
        n.inject(1, udp(1, 4, payload=bytes([k]) * 10), at_ns=k * NS_PER_MS)
    n.run_until(NS_PER_S)
    assert [p[-1] for _, p in n.nodes[4].delivered] == [0, 1, 2, 3, 4]
    assert n.nodes[1].ctx.counters.routing_sent["rreq"] == 2  # one discovery only
    assert [e.packet[-1] for e in started] == [0]  # the first packet starts it ...
    assert [(e.packet[-1], e.now_ns) for e in joined] == [
        (k, k * NS_PER_MS) for k in range(1, 5)
    ]  # the others join
