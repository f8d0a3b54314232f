"""SimNetwork with static routing on a chain: delivery, TTL decrement, link failure hook."""

from __future__ import annotations

from nodes.core import ipv4
from nodes.core.addr import station_ip_bytes
from nodes.core.events import Action
from nodes.core.hooks import LinkFailure
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.protocols.static import StaticRouting


def packet(src: int, dst: int, ttl: int = 64, payload: bytes = b"data") -> bytes:
    hdr = bytearray(20)
    hdr[0] = 0x45
    hdr[2:4] = (20 + len(payload)).to_bytes(2, "big")
    hdr[8] = ttl
    hdr[9] = ipv4.IPPROTO_UDP
    hdr[12:16] = station_ip_bytes(src)
    hdr[16:20] = station_ip_bytes(dst)
    ipv4.set_header_checksum(hdr)
    return bytes(hdr) + payload


def chain_routes(n: int) -> dict[int, dict[int, int]]:
    """Station s reaches d via s+1 (d > s) or s-1 (d < s)."""
    return {s: {d: (s + 1 if d > s else s - 1) for d in range(1, n + 1) if d != s} for s in range(1, n + 1)}


def make_chain(n: int) -> SimNetwork:
    routes = chain_routes(n)
    return SimNetwork.chain(n, lambda ctx: StaticRouting(ctx, routes[ctx.station]))


def test_delivery_over_four_hops_with_ttl_decrement() -> None:
    net = make_chain(5)
    p = packet(1, 5, ttl=64)
    net.inject(1, p)
    net.run_for(1_000_000_000)
    got = net.nodes[5].delivered
    assert len(got) == 1
    t, q = got[0]
    assert q[8] == 64 - 3  # forwarded by 2, 3 and 4
    assert ipv4.header_checksum_ok(q)
    assert q[20:] == p[20:]
    hops = [(e.src, e.dst) for e in net.trace]
    assert hops == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert [net.nodes[s].ctx.counters.data_forwarded for s in range(1, 6)] == [0, 1, 1, 1, 0]
    assert net.nodes[1].ctx.counters.data_originated == 1
    assert net.nodes[5].ctx.counters.data_delivered == 1
    # each hop takes the airtime of the frame, exactly
    airtime = 192_000 + 4_000 * len(p) + 500_000
    assert t == 4 * airtime


def test_ttl_expiry_drops() -> None:
    net = make_chain(3)
    net.inject(1, packet(1, 3, ttl=1))
    net.run_for(1_000_000_000)
    assert net.nodes[3].delivered == []
    assert net.nodes[2].ctx.counters.drops["ttl_expired"] == 1


def test_link_down_fires_on_link_failure_hook() -> None:
    net = make_chain(3)
    failures: list[tuple[int, int, int]] = []

    def on_link_failure(ev: LinkFailure) -> list[Action]:
        failures.append((2, ev.next_hop, ev.now_ns))
        return []

    net.nodes[2].ctx.hooks.subscribe(LinkFailure, on_link_failure)
    net.link_down(2, 3)
    net.inject(1, packet(1, 3))
    net.run_for(1_000_000_000)
    assert net.nodes[3].delivered == []
    assert [(s, nh) for s, nh, _ in failures] == [(2, 3)]
    c = net.nodes[2].ctx.counters
    assert c.drops["link_failure"] == 1
    assert c.mac["tx_failed"] == 1
    # the failure is reported fail_ns after the second hop started
    airtime = 192_000 + 4_000 * len(packet(1, 3)) + 500_000
    assert failures[0][2] == airtime + net.fail_ns
    # the link comes back: traffic flows again
    net.link_up(2, 3)
    net.inject(1, packet(1, 3))
    net.run_for(1_000_000_000)
    assert len(net.nodes[3].delivered) == 1


def test_ctx_is_per_station() -> None:
    net = make_chain(2)
    ctxs: list[NodeContext] = [node.ctx for node in net.nodes.values()]
    assert [c.station for c in ctxs] == [1, 2]
    assert ctxs[0].rng.random() != ctxs[1].rng.random()
