"""Route maintenance (RFC 4728 sections 4.4 and 8.3): link-layer feedback, ROUTE ERRORs,
salvaging, queued packets, gratuitous and nested ROUTE ERRORs, network-layer ACKs."""

from __future__ import annotations

from typing import Any

import pytest
from dsr_helpers import chain_links, core, net, record_hooks, sent, source_route, standalone, udp

from nodes.core import NS_PER_MS, NS_PER_S, Frame, FromAir, Send, SetTimer, Timer, TxStatus
from nodes.core.hooks import LinkFailure, PacketDropped
from nodes.core.sim import DEFAULT_FAIL_NS, SimNetwork
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.core import AckTimer
from nodes.protocols.dsr.events import DsrPacketSalvaged, DsrRouteErrorReceived, DsrRouteErrorSent
from nodes.protocols.dsr.options import (
    Ack,
    AckRequest,
    DsrPacket,
    RouteError,
    RouteRequest,
    SourceRoute,
    build,
    parse,
)
from nodes.protocols.dsr.srcroute import add_source_route


def established(n_nodes: int, links: list[tuple[int, int]], src: int, dst: int, **kw: Any) -> SimNetwork:
    n = net(n_nodes, links, **kw)
    n.inject(src, udp(src, dst))
    n.run_until(NS_PER_S)
    assert len(n.nodes[dst].delivered) == 1
    return n


def rerrs(n: SimNetwork, src: int | None = None) -> list[tuple[float, int, int, DsrPacket]]:
    return [
        (t, s, d, dp) for t, s, d, dp in sent(n, src) if dp.find(RouteError) and not dp.find(RouteRequest)
    ]


def test_broken_link_route_error_to_source_and_drop() -> None:
    n = established(5, chain_links(5), 1, 5)
    log3 = record_hooks(n, 3, LinkFailure, PacketDropped, DsrRouteErrorSent)
    log1 = record_hooks(n, 1, DsrRouteErrorReceived)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + NS_PER_S)
    # drops and salvages are reported before the ROUTE ERROR leaves (EPLN fills its conn_list)
    lf, dropped, rerr_sent = log3[:3]
    assert isinstance(lf, LinkFailure) and lf.next_hop == 4 and lf.queued == ()
    assert lf.frame is not None and lf.packets == (srcroute.strip(lf.frame.packet),)
    assert isinstance(dropped, PacketDropped) and dropped.reason == "link_failure"
    assert dropped.route == (1, 2, 3, 4, 5)
    assert isinstance(rerr_sent, DsrRouteErrorSent) and rerr_sent.link == (3, 4)
    ((t, s, d, dp),) = [r for r in rerrs(n) if r[1] == 3]
    err = dp.find(RouteError)
    assert isinstance(err, RouteError)
    assert (err.err_src, err.err_dst, err.unreachable, err.salvage) == (3, 1, 4, 0)
    assert source_route(dp).addresses == (2,) and d == 2
    # the failed transmission started after two data hops; the error leaves when the MAC gives up
    data_at_3 = [x[0] for x in sent(n, 3) if x[3].next_header == 17][-1]
    assert t == pytest.approx(data_at_3 + DEFAULT_FAIL_NS / NS_PER_MS, abs=1e-6)
    assert n.nodes[3].ctx.counters.drops["link_failure"] == 1
    assert [x.for_me for x in log1 if isinstance(x, DsrRouteErrorReceived)] == [True]
    assert core(n, 1).cache.find(5, n.now_ns) is None
    assert core(n, 1).last_rerr == err


def test_queued_packets_with_same_next_hop() -> None:
    n = established(5, chain_links(5), 1, 5)
    log3 = record_hooks(n, 3, LinkFailure, DsrRouteErrorSent, PacketDropped)
    n.link_down(3, 4)
    t0 = n.now_ns
    for k in range(3):
        n.inject(1, udp(1, 5), at_ns=t0 + k * 10_000)
    n.run_until(t0 + NS_PER_S)
    (lf,) = [x for x in log3 if isinstance(x, LinkFailure)]
    assert len(lf.queued) == 2 and len(lf.packets) == 3  # two packets waited behind the failing one
    sent_errs = [x for x in log3 if isinstance(x, DsrRouteErrorSent)]
    assert len(sent_errs) == 1 and len(sent_errs[0].packets) == 3  # one ROUTE ERROR per source
    assert [x.reason for x in log3 if isinstance(x, PacketDropped)] == ["link_failure"] * 3
    assert n.nodes[3].ctx.counters.routing_sent["rerr"] == 1


def salvage_net(**kw: Any) -> SimNetwork:
    # 1-2-3-4-5 and a longer detour 3-6-7-5 that node 3 learns from the second Route Reply
    links = chain_links(5) + [(3, 6), (6, 7), (7, 5)]
    n = established(7, links, 1, 5, nonprop_request=False, **kw)
    assert core(n, 1).cache.find(5, n.now_ns) == (1, 2, 3, 4, 5)
    assert core(n, 3).cache.find(5, n.now_ns) in ((3, 4, 5), (3, 6, 7, 5))
    core(n, 3).add_route((3, 6, 7, 5), primary=True)
    return n


def test_salvage_over_cached_route() -> None:
    n = salvage_net()
    log3 = record_hooks(n, 3, DsrPacketSalvaged)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + NS_PER_S)
    assert len(n.nodes[5].delivered) == 2
    (ev,) = log3
    assert isinstance(ev, DsrPacketSalvaged)
    assert ev.old_route == (1, 2, 3, 4, 5) and ev.new_route == (3, 6, 7, 5) and ev.salvage == 1
    salvaged = [dp for _, s, d, dp in sent(n, 3) if d == 6 and dp.next_header == 17]
    sr = source_route(salvaged[-1])
    assert (sr.addresses, sr.segs_left, sr.salvage) == ((3, 6, 7), 2, 1)  # Address[1] = salvager
    assert n.nodes[3].ctx.counters.extra["salvaged"] == 1
    assert n.nodes[3].ctx.counters.routing_sent["rerr"] == 1  # the source still learns


@pytest.mark.parametrize(("max_salvage", "delivered", "reason"), [(0, 1, "salvage_limit"), (1, 2, None)])
def test_salvage_count_limit(max_salvage: int, delivered: int, reason: str | None) -> None:
    n = salvage_net(max_salvage_count=max_salvage)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + NS_PER_S)
    assert len(n.nodes[5].delivered) == delivered
    if reason:
        assert n.nodes[3].ctx.counters.drops[reason] == 1


def test_salvaged_packet_lost_again_reports_to_salvager() -> None:
    """Yu 2004 Fig. 2: the node that cannot forward a salvaged packet sends the ROUTE ERROR to the
    salvaging node (Address[1]), not to the original source."""
    n = salvage_net()
    n.link_down(3, 4)
    n.link_down(6, 7)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + NS_PER_S)
    errs = {(s, d): dp.find(RouteError) for _, s, d, dp in rerrs(n)}
    e6 = [e for (s, _), e in errs.items() if s == 6]
    assert len(e6) == 1 and isinstance(e6[0], RouteError)
    assert (e6[0].err_dst, e6[0].unreachable, e6[0].salvage) == (3, 7, 1)
    assert n.nodes[6].ctx.counters.drops["link_failure"] == 1


def test_gratuitous_route_error_on_next_request() -> None:
    n = established(5, chain_links(5), 1, 5)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + 50 * NS_PER_MS)
    log2 = record_hooks(n, 2, DsrRouteErrorReceived)
    n.inject(1, udp(1, 5))
    n.run_until(t0 + 100 * NS_PER_MS)
    rreq = [dp for t, s, _, dp in sent(n, 1) if dp.find(RouteRequest) and t * NS_PER_MS >= t0][0]
    err = rreq.find(RouteError)
    assert isinstance(err, RouteError) and err.link == (3, 4)
    assert log2 and isinstance(log2[0], DsrRouteErrorReceived) and log2[0].for_me is False
    assert core(n, 1).last_rerr is None  # sent once


def test_nested_route_error() -> None:
    """A ROUTE ERROR meets a broken link: the detecting node sends a ROUTE ERROR to the first
    one's source carrying both; that source re-sends the inner one over another cached route."""
    links = chain_links(5) + [(3, 7), (7, 8), (8, 1)]
    n = established(8, links, 1, 5, nonprop_request=False)
    core(n, 3).add_route((3, 7, 8, 1), primary=True)
    n.link_down(3, 4)
    t0 = n.now_ns
    assert core(n, 1).cache.find(5, t0) == (1, 2, 3, 4, 5)
    n.inject(1, udp(1, 5))
    n.at(t0 + 5 * NS_PER_MS, lambda: n.link_down(1, 2))
    n.run_until(t0 + NS_PER_S)
    nested = [dp for _, s, d, dp in rerrs(n, 2) if dp.src == 2]
    assert len(nested) == 1
    opts = [o for o in nested[0].options if isinstance(o, RouteError)]
    assert [(o.err_src, o.err_dst, o.unreachable) for o in opts] == [(2, 3, 1), (3, 1, 4)]
    assert n.nodes[2].ctx.counters.extra["nested_rerr_sent"] == 1
    assert n.nodes[3].ctx.counters.extra["nested_rerr_resent"] == 1
    resent = [(d, dp) for _, s, d, dp in rerrs(n, 3) if d == 7]
    assert len(resent) == 1
    assert n.nodes[1].ctx.counters.routing_received["rerr"] == 1


def test_own_packet_rerouted_after_first_hop_breaks() -> None:
    n = established(4, [(1, 2), (2, 4), (1, 3), (3, 4)], 1, 4, nonprop_request=False)
    first = core(n, 1).cache.find(4, n.now_ns)
    assert first is not None
    n.link_down(1, first[1])
    t0 = n.now_ns
    n.inject(1, udp(1, 4))
    n.run_until(t0 + NS_PER_S)
    assert len(n.nodes[4].delivered) == 2
    assert n.nodes[1].ctx.counters.data_originated == 2
    assert n.nodes[1].ctx.counters.routing_sent["rerr"] == 0


def test_network_layer_acks_retransmit_then_link_failure() -> None:
    c = standalone(station=2, network_acks=True)
    data = add_source_route(udp(1, 3), (2,))
    acts = c.on_event(FromAir(data, 1, 2), 0)
    send = [a for a in acts if isinstance(a, Send)]
    assert len(send) == 1 and send[0].frame.next_hop == 3
    fwd = parse(send[0].frame.packet)
    req = fwd.find(AckRequest)
    assert isinstance(req, AckRequest) and req.ack_id == 1
    acks = [a for a in acts if isinstance(a, Send) and parse(a.frame.packet).find(AckRequest) is None]
    assert acks == []
    frame = send[0].frame
    t = 1_000_000
    for _retry in range(2):
        acts = c.on_event(TxStatus(frame, True), t)
        assert SetTimer(AckTimer(1), t + 100 * NS_PER_MS) in acts
        t += 100 * NS_PER_MS
        acts = c.on_event(Timer(AckTimer(1)), t)
        assert [a.frame.packet for a in acts if isinstance(a, Send)] == [frame.packet]
    acts = c.on_event(TxStatus(frame, True), t)
    t += 100 * NS_PER_MS
    acts = c.on_event(Timer(AckTimer(1)), t)
    errs = [parse(a.frame.packet).find(RouteError) for a in acts if isinstance(a, Send)]
    assert len(errs) == 1 and isinstance(errs[0], RouteError) and errs[0].link == (2, 3)


def test_network_layer_ack_is_returned_and_clears_buffer() -> None:
    n = established(3, chain_links(3), 1, 3, network_acks=True)
    assert n.nodes[2].ctx.counters.routing_sent["ack"] >= 1
    assert all(len(core(n, s).maint) == 0 for s in (1, 2, 3))


def test_ack_request_from_previous_hop_is_answered() -> None:
    c = standalone(station=3)
    sr = SourceRoute((), 0)
    pkt = build(2, 3, [AckRequest(9), sr], payload=b"", next_header=59)
    acts = c.on_event(FromAir(pkt, 2, 3), 0)
    (s,) = [a for a in acts if isinstance(a, Send)]
    assert s.frame.next_hop == 2 and isinstance(s.frame, Frame)
    ack = parse(s.frame.packet).options[0]
    assert isinstance(ack, Ack) and (ack.ack_id, ack.ack_src, ack.ack_dst) == (9, 3, 2)
