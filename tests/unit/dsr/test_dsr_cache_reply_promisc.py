"""Replies from cache (section 8.2.3) with the loop check and reply-storm delay (8.2.5);
promiscuous learning and automatic route shortening (sections 3.4.3, 8.1.5)."""

from __future__ import annotations

import random

from dsr_helpers import chain_links, core, net, record_hooks, sent, source_route, standalone, udp

from nodes.core import NS_PER_MS, NS_PER_S, FromAir, Send, SetTimer, Timer
from nodes.protocols.dsr.core import ReplyTimer
from nodes.protocols.dsr.events import (
    DsrCacheInsert,
    DsrPacketOverheard,
    DsrRouteErrorReceived,
    DsrRouteErrorSent,
)
from nodes.protocols.dsr.options import RouteError, RouteReply, RouteRequest, SourceRoute, build, parse


def test_intermediate_node_replies_from_cache() -> None:
    n = net(4, chain_links(4))
    n.inject(2, udp(2, 4))
    n.run_until(NS_PER_S)
    t0 = n.now_ns
    n.inject(1, udp(1, 4))
    n.run_until(t0 + NS_PER_S)
    assert n.nodes[2].ctx.counters.extra["cached_replies"] == 1
    assert n.nodes[1].ctx.counters.routing_sent["rreq"] == 1  # the non-propagating one sufficed
    assert core(n, 1).cache.find(4, n.now_ns) == (1, 2, 3, 4)
    assert len(n.nodes[4].delivered) == 2


def test_cached_reply_loop_check() -> None:
    # node 2's cached route to 4 goes back through the initiator 1: 1-2-1-3-4 has a loop
    n = net(4, [(1, 2), (1, 3), (3, 4)])
    core(n, 2).add_route((2, 1, 3, 4), primary=True)
    n.inject(1, udp(1, 4))
    n.run_until(NS_PER_S)
    assert n.nodes[2].ctx.counters.extra["cached_reply_loop"] == 2  # both request copies
    assert n.nodes[2].ctx.counters.routing_sent["rrep"] == 0
    assert core(n, 1).cache.find(4, n.now_ns) == (1, 3, 4)
    assert len(n.nodes[4].delivered) == 1


def test_reply_storm_delay_exact() -> None:
    """d = H * (h - 1 + r): H = 1 ms, h = 4 hops returned, r the core's first RNG draw."""
    c = standalone(station=3, seed=7)
    c.add_route((3, 8, 9), primary=True)
    rreq = build(1, None, [RouteRequest(5, 9, (2,))], ttl=254)
    t = 10 * NS_PER_MS
    acts = c.on_event(FromAir(rreq, 2, 0xFFFF_FFFF), t)
    r = random.Random(7).random()
    assert SetTimer(ReplyTimer(1, 5), t + int(NS_PER_MS * (3 + r))) in acts
    assert not [a for a in acts if isinstance(a, Send)]  # neither forwarded nor answered yet
    acts = c.on_event(Timer(ReplyTimer(1, 5)), t + 4 * NS_PER_MS)
    (s,) = [a for a in acts if isinstance(a, Send)]
    dp = parse(s.frame.packet)
    rrep = dp.find(RouteReply)
    assert isinstance(rrep, RouteReply) and rrep.addresses == (2, 3, 8, 9)
    assert (dp.src, dp.dst, s.frame.next_hop, s.frame.control) == (3, 1, 2, True)
    assert source_route(dp).addresses == (2,)  # back to 1 over 2


def test_reply_storm_cancelled_by_shorter_overheard_route() -> None:
    c = standalone(station=3, seed=7)
    c.add_route((3, 8, 9), primary=True)
    c.on_event(FromAir(build(1, None, [RouteRequest(5, 9, (2,))], ttl=254), 2, 0xFFFF_FFFF), 0)
    data = build(1, 9, [SourceRoute((4,), 1)], next_header=17, payload=b"\0" * 8)
    acts = c.on_event(FromAir(data, 1, 4, overheard=True), NS_PER_MS)
    assert any(getattr(a, "key", None) == ReplyTimer(1, 5) for a in acts)
    assert c.pending_replies == {}


def test_duplicate_request_forwarded_once() -> None:
    n = net(5, [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)], nonprop_request=False)
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    c4 = n.nodes[4].ctx.counters
    assert c4.routing_forwarded["rreq"] == 1 and c4.extra["rreq_duplicate"] == 1
    assert len(n.nodes[5].delivered) == 1


def test_promiscuous_learning_from_overheard_source_route() -> None:
    # 4 hears 2 (not on the route 1-2-3)
    n = net(4, [(1, 2), (2, 3), (2, 4)], promiscuous=True)
    log4 = record_hooks(n, 4, DsrPacketOverheard, DsrCacheInsert)
    n.inject(1, udp(1, 3))
    n.run_until(NS_PER_S)
    assert any(isinstance(x, DsrPacketOverheard) and x.src == 2 for x in log4)
    assert any(isinstance(x, DsrCacheInsert) and x.route == (4, 2, 3) for x in log4)
    # the overheard Route Reply (2 -> 1) goes to the primary cache, source routes to the secondary
    cached = core(n, 4).cache.paths()  # type: ignore[union-attr]
    assert (4, 2, 3) in cached and (4, 2, 1) in cached


def test_promiscuous_route_error_removes_link() -> None:
    n = net(5, [(1, 2), (2, 3), (3, 4), (2, 5)], promiscuous=True)
    n.inject(1, udp(1, 4))
    n.run_until(NS_PER_S)
    core(n, 5).add_route((5, 2, 3, 4), primary=True)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 4))
    n.run_until(t0 + NS_PER_S)
    # the ROUTE ERROR 3 -> 2 -> 1 is overheard by 5 when 2 forwards it
    assert core(n, 5).cache.find(4, n.now_ns) is None


def test_gratuitous_reply_shortens_route() -> None:
    n = net(4, chain_links(4), promiscuous=True)
    n.inject(1, udp(1, 4))
    n.run_until(NS_PER_S)
    assert core(n, 1).cache.find(4, n.now_ns) == (1, 2, 3, 4)
    n.link_up(2, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 4))
    n.run_until(t0 + NS_PER_S)
    assert n.nodes[4].ctx.counters.extra["grat_replies"] == 1
    assert core(n, 1).cache.find(4, n.now_ns) == (1, 2, 4)
    assert len(n.nodes[4].delivered) == 2  # the overheard copy is not delivered twice
    n.inject(1, udp(1, 4))
    n.run_until(n.now_ns + NS_PER_S)
    assert n.nodes[4].ctx.counters.extra["grat_replies"] == 1  # holdoff / route now short


def test_route_error_extra_options_hook() -> None:
    """An extension appends an option (e.g. conn_list) to an outgoing ROUTE ERROR and reads it at
    the receiver."""
    from nodes.protocols.dsr.options import OPT_CONN_LIST, RawOption

    n = net(5, chain_links(5))
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    marker = RawOption(OPT_CONN_LIST, b"\x01\x02\x03\x04")

    def add(ev: DsrRouteErrorSent) -> None:
        ev.extra_options.append(marker)

    got: list[object] = []
    n.nodes[3].ctx.hooks.subscribe(DsrRouteErrorSent, add)
    n.nodes[1].ctx.hooks.subscribe(
        DsrRouteErrorReceived, lambda ev: got.extend(ev.following) if ev.for_me else None
    )
    n.link_down(3, 4)
    n.inject(1, udp(1, 5))
    n.run_until(n.now_ns + NS_PER_S)
    assert got == [marker]
    rerr_pkts = [dp for _, s, _, dp in sent(n, 3) if dp.find(RouteError)]
    assert rerr_pkts and rerr_pkts[0].options[-1] == marker
