"""The behaviours in which the ``ns2`` and ``rfc`` routing profiles differ (issue 46; the table in
docs/dsr.md "Profiles"), one virtual-time test each: the exact sequence, ns-2's outcome under
``ns2`` (dsragent.cc / mobicache.cc of ns-2.1b8a, which ns-2.29 keeps for these) and the RFC 4728
rule under ``rfc``. The parameters come from the profile tables (``effective_params``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsr_helpers import chain_links, profile_core, profile_net, record_hooks, sent, source_route, udp

from nodes.core import NS_PER_MS, NS_PER_S, Drop, FromAir, FromLocal, Send, SetTimer, TxStatus
from nodes.core.events import Action
from nodes.core.hooks import PacketDropped
from nodes.core.sim import SimNetwork
from nodes.protocols import effective_params
from nodes.protocols.dsr import DsrParams
from nodes.protocols.dsr.core import ReplyTimer
from nodes.protocols.dsr.events import DsrRouteErrorReceived, DsrRouteErrorSent
from nodes.protocols.dsr.options import (
    DsrPacket,
    PadN,
    RouteError,
    RouteReply,
    RouteRequest,
    SourceRoute,
    build,
    parse,
)
from topologies.scenario import load_scenario

TOPOLOGIES = Path(__file__).resolve().parents[3] / "topologies"


def route_errors(n: SimNetwork, src: int) -> list[tuple[float, int, DsrPacket]]:
    """Route Error packets ``src`` sent (not Route Requests carrying one): (ms, to, packet)."""
    return [(t, d, dp) for t, s, d, dp in sent(n, src) if dp.find(RouteError) and not dp.find(RouteRequest)]


def requests(n: SimNetwork, src: int, since_ms: float = 0.0) -> list[tuple[float, DsrPacket]]:
    """Route Requests ``src`` originated or forwarded from ``since_ms`` on: (ms, packet)."""
    return [(t, dp) for t, s, _, dp in sent(n, src) if dp.find(RouteRequest) and t >= since_ms]


# ---------------------------------------------------------------- the gratuitous Route Error
def broken_chain(profile: str) -> tuple[SimNetwork, int]:
    """1-2-3-4-5 with the route in use, then 3-4 breaks under a packet from 1: node 3's Route
    Error reaches node 1, which holds it. Returns the network and when node 1 received it."""
    n = profile_net(profile, 5, chain_links(5))
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    assert len(n.nodes[5].delivered) == 1
    got = record_hooks(n, 1, DsrRouteErrorReceived)
    n.link_down(3, 4)
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S + 100 * NS_PER_MS)
    (ev,) = got
    assert isinstance(ev, DsrRouteErrorReceived) and ev.for_me and ev.rerr.link == (3, 4)
    return n, ev.now_ns


@pytest.mark.parametrize(
    ("profile", "carried_by"),
    [
        # ns-2 sendOutRtReq: the non-propagating request carries it and keeps it held, the
        # propagating one 30 ms later carries it too and clears it; node 2 floods it on.
        ("ns2", [1, 255]),
        # the next request carries it, whichever: the hop-limit-1 one, and it is gone
        ("rfc", [1]),
        ("legacy", [1]),
    ],
)
def test_held_route_error_rides_until_a_propagating_request(profile: str, carried_by: list[int]) -> None:
    n, t_err = broken_chain(profile)
    t1 = t_err + 500 * NS_PER_MS
    n.inject(1, udp(1, 5), at_ns=t1)
    n.run_until(t1 + NS_PER_S)
    mine = [(t, dp) for t, dp in requests(n, 1, t1 / NS_PER_MS) if dp.src == 1]
    assert [t - t1 / NS_PER_MS for t, _ in mine][:2] == [0.0, 30.0]
    assert [dp.ttl for _, dp in mine][:2] == [1, 255]
    with_err = [dp.ttl for _, dp in mine if dp.find(RouteError)]
    assert with_err == carried_by
    for _, dp in mine:
        err = dp.find(RouteError)
        assert err is None or (isinstance(err, RouteError) and err.link == (3, 4))
    # beyond one hop: node 2 rebroadcasts the propagating request with the error on it
    relayed = [dp for _, dp in requests(n, 2, t1 / NS_PER_MS) if dp.find(RouteError)]
    assert len(relayed) == (1 if 255 in carried_by else 0)


@pytest.mark.parametrize(
    ("profile", "age_ms", "carried"),
    [
        ("ns2", 999, True),  # max_err_hold = 1 s: "now - route_error_data_time < max_err_hold"
        ("ns2", 1000, False),
        ("ns2", 5000, False),
        ("rfc", 5000, True),  # no age limit
        ("legacy", 5000, True),
    ],
)
def test_held_route_error_older_than_one_second_is_not_sent(profile: str, age_ms: int, carried: bool) -> None:
    n, t_err = broken_chain(profile)
    t1 = t_err + age_ms * NS_PER_MS
    n.inject(1, udp(1, 5), at_ns=t1)
    n.run_until(t1 + NS_PER_S)
    mine = [dp for _, dp in requests(n, 1, t1 / NS_PER_MS) if dp.src == 1]
    assert len(mine) >= 2
    assert any(dp.find(RouteError) for dp in mine) is carried


# ---------------------------------------------------------------- Route Request retries
@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        # ns-2 BackOffTest: cycles 0, 2, 10, 20 s (0.5 x 4^k, capped at 10 s), each a
        # non-propagating request and, 30 ms later, a propagating one
        (
            "ns2",
            [(0, 1), (30, 255), (2000, 1), (2030, 255), (10000, 1), (10030, 255), (20000, 1), (20030, 255)],
        ),
        # RFC 4728 8.2.1: one non-propagating request, then propagating ones 0.5 s apart, doubling
        (
            "rfc",
            [
                (0, 1),
                (30, 255),
                (530, 255),
                (1530, 255),
                (3530, 255),
                (7530, 255),
                (15530, 255),
                (25530, 255),
            ],
        ),
    ],
)
def test_route_request_times_after_the_first_failure(profile: str, expected: list[tuple[int, int]]) -> None:
    n = profile_net(profile, 2, [])
    dropped: list[tuple[int, str]] = []
    n.nodes[1].ctx.hooks.subscribe(PacketDropped, lambda ev: dropped.append((ev.now_ns, ev.reason)))
    n.inject(1, udp(1, 2))
    n.run_until(29_900 * NS_PER_MS)
    assert [(round(t), dp.ttl) for t, dp in requests(n, 1)] == expected
    assert dropped == []
    n.run_until(31 * NS_PER_S)
    assert dropped == [(30 * NS_PER_S, "send_buffer_timeout")]  # SendBufferTimeout, ns-2 SEND_TIMEOUT


# ---------------------------------------------------------------- Route Errors at a link failure
def two_sources(profile: str) -> SimNetwork:
    """1-2-3-4-5 and 6-2: sources 1 and 6 send to 5 through 3; then 3-4 breaks while a packet of
    each is on its way, the second waiting in node 3's interface queue behind the first."""
    n = profile_net(profile, 6, [*chain_links(5), (6, 2)])
    two_sources_run(n)
    return n


def two_sources_run(n: SimNetwork) -> None:
    n.inject(1, udp(1, 5))
    n.inject(6, udp(6, 5), at_ns=200 * NS_PER_MS)
    n.run_until(NS_PER_S)
    assert len(n.nodes[5].delivered) == 2
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5), at_ns=t0)
    n.inject(6, udp(6, 5), at_ns=t0 + NS_PER_MS)
    n.run_until(t0 + 300 * NS_PER_MS)


@pytest.mark.parametrize(
    ("profile", "told"),
    [
        ("ns2", [1]),  # xmitFailed: one Route Error, for the failed packet (source 1)
        ("rfc", [1]),  # 8.3.4: for the packet whose delivery could not be confirmed
        ("legacy", [1, 6]),  # one per source of the failed and the queued packets
    ],
)
def test_one_route_error_per_failed_packet_queued_packets_dropped(profile: str, told: list[int]) -> None:
    n = two_sources(profile)
    errs = route_errors(n, 3)
    dsts = sorted(dp.dst for _, _, dp in errs if dp.dst is not None)
    assert dsts == told
    for _, _, dp in errs:
        err = dp.find(RouteError)
        assert isinstance(err, RouteError) and err.link == (3, 4) and err.err_dst == dp.dst
    # both packets lost at node 3 (no other route to salvage over), each reported as a drop
    assert n.nodes[3].ctx.counters.drops["link_failure"] == 2
    assert n.nodes[3].ctx.counters.routing_sent["rerr"] == len(told)


@pytest.mark.parametrize(("profile", "told"), [("ns2", [1, 6]), ("legacy", [1, 6])])
def test_a_notification_still_reaches_every_source(profile: str, told: list[int]) -> None:
    """Under ns2 the queued packet's source gets no Route Error of DSR's own, but a subscriber
    that appends an option to the offered (``optional``) one sends it: EPLN's notification to
    each source (Yu 2004 s4.3.1). Without one it stays unsent (the test above)."""
    n = profile_net(profile, 6, [*chain_links(5), (6, 2)])
    offered: list[tuple[int, bool]] = []

    def notify(ev: DsrRouteErrorSent) -> list[Action]:
        offered.append((ev.dst, ev.optional))
        ev.extra_options.append(PadN(2))
        return []

    n.nodes[3].ctx.hooks.subscribe(DsrRouteErrorSent, notify)
    two_sources_run(n)
    assert sorted(dp.dst for _, _, dp in route_errors(n, 3) if dp.dst is not None) == told
    assert sorted(offered) == ([(1, False), (6, True)] if profile == "ns2" else [(1, False), (6, False)])


# ---------------------------------------------------------------- the path cache
@pytest.mark.parametrize(
    ("profile", "found"),
    [
        ("ns2", (3, 9, 5)),  # MobiCache::findRoute: shortest over both caches
        ("rfc", (3, 9, 5)),  # one cache: its shortest route
        ("legacy", (3, 1, 2, 4, 5)),  # the primary cache's route first
    ],
)
def test_shortest_route_over_both_caches(profile: str, found: tuple[int, ...]) -> None:
    c = profile_core(profile, station=3)
    c.add_route((3, 1, 2, 4, 5), primary=True)
    c.add_route((3, 9, 5), primary=False)
    assert c.cache.find(5, 0) == found


@pytest.mark.parametrize("profile", ["ns2", "rfc", "legacy"])
def test_equal_length_routes_primary_wins(profile: str) -> None:
    c = profile_core(profile, station=3)
    c.add_route((3, 1, 5), primary=True)
    c.add_route((3, 9, 5), primary=False)
    assert c.cache.find(5, 0) == (3, 1, 5)


@pytest.mark.parametrize(
    ("profile", "store"),
    [
        ("ns2", "primary"),  # returnSrcRouteToRequestor: route_cache->addRoute -> primary
        ("rfc", "primary"),
        ("legacy", "secondary"),
    ],
)
def test_target_caches_the_reversed_route_record(profile: str, store: str) -> None:
    c = profile_core(profile, station=5)
    rreq = build(1, None, [RouteRequest(7, 5, (2, 3, 4))], ttl=250)
    acts = c.on_event(FromAir(rreq, 4, 0xFFFFFFFF), 0)
    (reply,) = [a for a in acts if isinstance(a, Send)]
    assert reply.frame.next_hop == 4
    assert c.cache.paths(store) == [(5, 4, 3, 2, 1)]  # type: ignore[union-attr]
    other = "secondary" if store == "primary" else "primary"
    assert c.cache.paths(other) == []  # type: ignore[union-attr]


# ---------------------------------------------------------------- salvaging a Route Reply
@pytest.mark.parametrize(
    ("profile", "salvaged"),
    [
        ("ns2", False),  # dsragent_dont_salvage_bad_replies: the reply holds the dead link
        ("rfc", True),  # 8.3.6: salvage
        ("legacy", True),
    ],
)
def test_transit_reply_holding_the_dead_link_is_not_salvaged(profile: str, salvaged: bool) -> None:
    """Node 3 forwards 5's Route Reply (route 1-2-3-4-5) towards 1 over 3-2; 3-2 fails; node 3
    has another route to 1 (3-6-1)."""
    c = profile_core(profile, station=3)
    c.add_route((3, 6, 1), primary=True)
    rrep = build(5, 1, [SourceRoute((4, 3, 2), 2), RouteReply((2, 3, 4, 5))], ttl=64)
    acts = c.on_event(FromAir(rrep, 4, 3), 0)
    (fwd,) = [a for a in acts if isinstance(a, Send)]
    assert fwd.frame.next_hop == 2
    acts = c.on_event(TxStatus(fwd.frame, ok=False), NS_PER_MS)
    sends = [a.frame for a in acts if isinstance(a, Send)]
    replies = [f for f in sends if parse(f.packet).find(RouteReply)]
    assert [f.next_hop for f in replies] == ([6] if salvaged else [])
    # the Route Error to the reply's source (5) goes out either way
    errs = [(parse(f.packet).dst, f.next_hop) for f in sends if parse(f.packet).find(RouteError)]
    assert errs == [(5, 4)]
    drops = [a.reason for a in acts if isinstance(a, Drop)]
    assert drops == ([] if salvaged else ["link_failure"])  # ns-2 DROP_RTR_MAC_CALLBACK


# ---------------------------------------------------------------- a salvager loses its salvage
@pytest.mark.parametrize("profile", ["ns2", "rfc"])
def test_salvager_losing_its_own_salvaged_packet_sends_no_route_error(profile: str) -> None:
    """1-2-3-4-5 with a detour 3-6-7-5 cached at 3; 3-4 and 3-6 are both down. Node 3 tells 1
    about 3-4 and salvages over 3-6; that transmission fails too. ns-2 xmitFailed: the Route
    Error would go to srh->addrs[0], the salvager itself ("no need to send the route error if
    it's for us"), so none leaves; the packet is dropped (Yu 2004 s4.3.1, node 31 of Fig. 1:
    EPLN and BEAD learn nothing of this loss)."""
    n = profile_net(profile, 7, [*chain_links(5), (3, 6), (6, 7), (7, 5)], nonprop_request=False)
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    assert len(n.nodes[5].delivered) == 1
    n.nodes[3].runtime.protocol.add_route((3, 6, 7, 5), primary=True)  # type: ignore[attr-defined]
    n.link_down(3, 4)
    n.link_down(3, 6)
    t0 = n.now_ns
    n.inject(1, udp(1, 5))
    n.run_until(t0 + 300 * NS_PER_MS)
    assert n.nodes[3].ctx.counters.extra["salvaged"] == 1
    errs = route_errors(n, 3)
    assert [(d, dp.dst) for _, d, dp in errs] == [(2, 1)]
    err = errs[0][2].find(RouteError)
    assert isinstance(err, RouteError) and err.link == (3, 4)
    assert source_route(errs[0][2]).addresses == (2,)
    assert n.nodes[3].ctx.counters.drops["link_failure"] == 1


# ---------------------------------------------------------------- a salvager without a route
def salvager_without_route(profile: str, **overrides: bool) -> tuple[SimNetwork, int]:
    """1-2-3-4-5 in use; node 6 (a neighbour of 3 only from now on) has a route to 5; 3-4
    breaks under a packet from 1: node 3 has no other route to salvage over."""
    n = profile_net(profile, 6, [*chain_links(5), (6, 5)], **overrides)
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    assert len(n.nodes[5].delivered) == 1
    n.nodes[6].runtime.protocol.add_route((6, 5), primary=True)  # type: ignore[attr-defined]
    n.link_up(3, 6)
    n.link_down(3, 4)
    t0 = n.now_ns
    n.inject(1, udp(1, 5), at_ns=t0)
    return n, t0


@pytest.mark.parametrize(
    ("profile", "overrides", "delivered"),
    [
        ("ns2", {}, 1),  # ns-2.1b8a undeliverablePkt: no route, dropped at once
        ("ns2", {"salvage_request": True}, 2),  # ns-2.29 NEW_SALVAGE_LOGIC: 6 answers the ring-0 request
        ("rfc", {}, 1),  # 8.3.6: salvage over a cached route only
    ],
)
def test_salvager_without_a_route_asks_its_neighbours(
    profile: str, overrides: dict[str, bool], delivered: int
) -> None:
    n, t0 = salvager_without_route(profile, **overrides)
    n.run_until(t0 + 3 * NS_PER_S)
    assert len(n.nodes[5].delivered) == delivered
    asked = [(dp.ttl, dp.src) for _, dp in requests(n, 3, t0 / NS_PER_MS)]
    if delivered == 2:
        assert asked == [(1, 3)]  # one non-propagating request from the salvager, none propagating
        salvaged = [dp for _, s, d, dp in sent(n, 3) if d == 6 and dp.next_header == 17]
        sr = source_route(salvaged[-1])
        assert (sr.addresses, sr.segs_left, sr.salvage) == ((3, 6), 1, 1)
        assert n.nodes[3].ctx.counters.drops["link_failure"] == 0
    else:
        assert asked == []
        assert n.nodes[3].ctx.counters.drops["link_failure"] == 1


def test_salvaged_packet_without_answer_is_dropped_at_the_next_cycle() -> None:
    """ns-2.29: no neighbour answers; only the non-propagating request goes, and the packet is
    dropped when the next BackOffTest cycle would start, 2 s after it (rt_reqs_outstanding 2 >
    dsr_salvage_max_requests 1)."""
    n = profile_net("ns2", 5, chain_links(5), salvage_request=True)
    n.inject(1, udp(1, 5))
    n.run_until(NS_PER_S)
    dropped: list[tuple[int, str]] = []
    n.nodes[3].ctx.hooks.subscribe(PacketDropped, lambda ev: dropped.append((ev.now_ns, ev.reason)))
    n.link_down(3, 4)
    n.inject(1, udp(1, 5))
    n.run_until(5 * NS_PER_S)
    ((t_req, req),) = [(t, dp) for t, dp in requests(n, 3) if dp.src == 3]
    assert req.ttl == 1
    assert dropped == [(round(t_req * NS_PER_MS) + 2 * NS_PER_S, "no_route")]


@pytest.mark.parametrize(
    ("scenario", "salvage_request"),
    [("yu2004", False), ("yu2004-100", False), ("yu2004-small", False), ("ghanem2008", True)],
)
def test_paper_scenarios_run_their_ns2_release(scenario: str, salvage_request: bool) -> None:
    """Yu 2004 ran ns-2.1b8a (no NEW_SALVAGE_LOGIC), Ghanem 2008 ns-2.29 (defined)."""
    routing = load_scenario(TOPOLOGIES / f"{scenario}.yaml").routing
    assert routing.profile == "ns2"
    params = effective_params("dsr", routing.profile, routing.params)
    assert isinstance(params, DsrParams) and params.salvage_request is salvage_request


# ---------------------------------------------------------------- smaller timing items
@pytest.mark.parametrize(("profile", "jittered"), [("ns2", True), ("rfc", False), ("legacy", False)])
def test_target_reply_jitter(profile: str, jittered: bool) -> None:
    """ns-2 returnSrcRouteToRequestor schedules the target's reply Random::uniform(RREQ_JITTER)
    = [0, 10 ms) later; the RFC and legacy send it at once."""
    jitters = []
    for seed in range(1, 6):
        c = profile_core(profile, station=5, seed=seed)
        rreq = build(1, None, [RouteRequest(7, 5, (2, 3, 4))], ttl=250)
        (reply,) = [a for a in c.on_event(FromAir(rreq, 4, 0xFFFFFFFF), 0) if isinstance(a, Send)]
        assert parse(reply.frame.packet).find(RouteReply) is not None
        jitters.append(reply.jitter_ns)
    if jittered:
        assert all(0 <= j < 10 * NS_PER_MS for j in jitters) and len(set(jitters)) == 5
    else:
        assert jitters == [0] * 5


@pytest.mark.parametrize(("profile", "gap_ms"), [("ns2", 30.0), ("rfc", None), ("legacy", None)])
def test_send_buffer_released_30_ms_apart(profile: str, gap_ms: float | None) -> None:
    """Three packets wait for a discovery on 1-2-3; the Route Reply releases them. ns-2
    acceptRouteReply: ``delay += arp_timeout`` (30 ms) per packet; else back to back."""
    n = profile_net(profile, 3, chain_links(3))
    for k in range(3):
        n.inject(1, udp(1, 3), at_ns=k * NS_PER_MS)
    n.run_until(2 * NS_PER_S)
    assert len(n.nodes[3].delivered) == 3
    data = [t for t, _, _, dp in sent(n, 1) if dp.next_header == 17]
    gaps = [round(b - a, 6) for a, b in zip(data, data[1:], strict=False)]
    if gap_ms is not None:
        assert gaps == [gap_ms, gap_ms]
    else:
        assert all(g < 2.0 for g in gaps)  # one airtime apart (default_airtime_ns: 0.86 ms)


# ---------------------------------------------------------------- replies from the cache
def rreq_from_1_via_2(rreq_id: int = 7) -> FromAir:
    """Initiator 1's propagating Route Request for 5, rebroadcast by 2, heard by 3."""
    return FromAir(build(1, None, [RouteRequest(rreq_id, 5, (2,))], ttl=250), 2, 0xFFFFFFFF)


@pytest.mark.parametrize(("profile", "at_once"), [("ns2", True), ("rfc", False), ("legacy", False)])
def test_cached_reply_holdoff(profile: str, at_once: bool) -> None:
    """ns-2 replyFromRouteCache sends the cached reply at once (its holdoff is compiled out);
    RFC 8.2.5 waits H * (h - 1 + r) with H = 1 ms, h = 4 hops here: 3-4 ms."""
    c = profile_core(profile, station=3)
    c.add_route((3, 4, 5), primary=True)
    acts = c.on_event(rreq_from_1_via_2(), 0)
    replies = [a for a in acts if isinstance(a, Send) and parse(a.frame.packet).find(RouteReply)]
    timers = [a for a in acts if isinstance(a, SetTimer) and isinstance(a.key, ReplyTimer)]
    if at_once:
        assert [(r.frame.next_hop, r.jitter_ns) for r in replies] == [(2, 0)] and timers == []
        rrep = parse(replies[0].frame.packet).find(RouteReply)
        assert isinstance(rrep, RouteReply) and rrep.addresses == (2, 3, 4, 5)
    else:
        assert replies == []
        ((t,),) = [(x.at_ns,) for x in timers]
        assert 3 * NS_PER_MS <= t < 4 * NS_PER_MS


@pytest.mark.parametrize(("profile", "promoted"), [("ns2", False), ("rfc", True), ("legacy", True)])
def test_a_cached_reply_does_not_promote_a_secondary_route(profile: str, promoted: bool) -> None:
    """ns-2 findRoute(..., for_me = 0) from replyFromRouteCache leaves the route in the
    secondary cache; an own packet's lookup (for_me = 1) promotes it."""
    c = profile_core(profile, station=3, reply_storm_hop_delay_s=0.0)
    c.add_route((3, 9, 5), primary=False)
    acts = c.on_event(rreq_from_1_via_2(), 0)
    assert any(isinstance(a, Send) and parse(a.frame.packet).find(RouteReply) for a in acts)
    assert ((3, 9, 5) in c.cache.paths("primary")) is promoted  # type: ignore[union-attr]
    assert ((3, 9, 5) in c.cache.paths("secondary")) is not promoted  # type: ignore[union-attr]
    c.on_event(FromLocal(udp(3, 5)), NS_PER_MS)
    assert (3, 9, 5) in c.cache.paths("primary")  # type: ignore[union-attr]


@pytest.mark.parametrize("profile", ["ns2", "rfc", "legacy"])
def test_looped_cached_reply_is_not_sent_and_the_request_goes_on(profile: str) -> None:
    """Record 1-2-3 joined to the cached 3-2-5 has a loop. ns-2 replyFromRouteCache compresses
    it (compressPath: 1-2-5), finds itself no longer on it and does not reply, which is what
    refusing a looped route does (RFC 8.2.3): the request is propagated."""
    c = profile_core(profile, station=3)
    c.add_route((3, 2, 5), primary=True)
    acts = c.on_event(rreq_from_1_via_2(), 0)
    sends = [parse(a.frame.packet) for a in acts if isinstance(a, Send)]
    assert [dp.find(RouteReply) for dp in sends] == [None]
    rreq = sends[0].find(RouteRequest)
    assert isinstance(rreq, RouteRequest) and rreq.addresses == (2, 3)
    assert not any(isinstance(a, SetTimer) and isinstance(a.key, ReplyTimer) for a in acts)


# ---------------------------------------------------------------- route shortening
@pytest.mark.parametrize(
    ("profile", "kind", "shortened"),
    [
        ("ns2", "data", True),
        ("ns2", "rerr", False),  # tap: "no route shortening on any" DSR packet
        ("rfc", "rerr", True),
        ("legacy", "rerr", True),
    ],
)
def test_route_shortening_for_overheard_packets(profile: str, kind: str, shortened: bool) -> None:
    """Node 4 overhears 2 send a packet of route 1-2-3-4-5 to 3: it could shorten the route to
    1-2-4-5 with a gratuitous Route Reply to 1."""
    c = profile_core(profile, station=4)
    sr = SourceRoute((2, 3, 4), 2)
    if kind == "data":
        pkt = build(1, 5, [sr], ttl=63, payload=b"x" * 8, next_header=17)
    else:
        pkt = build(1, 5, [sr, RouteError(1, 5, unreachable=9)], ttl=63)
    acts = c.on_event(FromAir(pkt, 2, 3, overheard=True), 0)
    grat = [parse(a.frame.packet) for a in acts if isinstance(a, Send)]
    if shortened:
        assert [(dp.dst, dp.find(RouteReply)) for dp in grat] == [(1, RouteReply((2, 4, 5)))]
    else:
        assert grat == []


@pytest.mark.parametrize(("profile", "kept"), [("ns2", 64), ("rfc", 50), ("legacy", 50)])
def test_send_buffer_size(profile: str, kept: int) -> None:
    """ns-2 SEND_BUF_SIZE 64 (stickPacketInSendBuffer drops the oldest); ours 50 otherwise."""
    c = profile_core(profile, station=1)
    drops = []
    for k in range(70):
        acts = c.on_event(FromLocal(udp(1, 9, payload=bytes([k]) * 20)), k * NS_PER_MS)
        drops += [a.packet[-1] for a in acts if isinstance(a, Drop)]
    assert len(c.send_buffer) == kept
    assert drops == list(range(70 - kept))  # the oldest go first


@pytest.mark.parametrize(
    ("profile", "store"), [("ns2", "primary"), ("rfc", "primary"), ("legacy", "secondary")]
)
def test_cached_replier_caches_the_reversed_route_record(profile: str, store: str) -> None:
    """ns-2 replyFromRouteCache: ``route_cache->addRoute(p.route)`` (the record reversed, this
    node first) goes to the primary cache; legacy keeps every record in the secondary."""
    c = profile_core(profile, station=3, reply_storm_hop_delay_s=0.0)
    c.add_route((3, 4, 5), primary=True)
    acts = c.on_event(rreq_from_1_via_2(), 0)
    assert any(isinstance(a, Send) and parse(a.frame.packet).find(RouteReply) for a in acts)
    assert (3, 2, 1) in c.cache.paths(store)  # type: ignore[union-attr]
    other = "secondary" if store == "primary" else "primary"
    assert (3, 2, 1) not in c.cache.paths(other)  # type: ignore[union-attr]
