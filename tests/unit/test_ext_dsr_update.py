"""DSR-Update (Yu 2004 s2.2, distributed cache update) in virtual time over the real DSR core:
the cache table records which neighbour learned each route from this node (route replies it sent
or forwarded, source routes it originated or forwarded), as many routes as DSR's path cache holds;
on a link failure exactly the learners of the routes with that link get a cache update, and each of
them notifies its own, recursively."""

from __future__ import annotations

import pytest

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.addr import station_ip_bytes
from nodes.core.sim import SimNetwork
from nodes.extensions import attach_extensions
from nodes.extensions.dsr_update import CacheUpdateOption, DsrUpdate, DsrUpdateParams
from nodes.protocols.dsr import create
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.events import DsrRouteSent
from nodes.protocols.dsr.options import RouteError, parse
from nodes.tcpctl import packets as P

LINKS = [(1, 2), (2, 3), (3, 4), (2, 5), (2, 6)]
#        1 - 2 - 3 - 4
#           / \
#          5   6


def pkt(src: int, dst: int, i: int) -> bytes:
    return P.build_tcp(
        station_ip_bytes(src), station_ip_bytes(dst), 40000, 5201, 1000 + i, 1, P.ACK, 500, b"", b"x" * 100
    )


def setup(flows: list[tuple[int, int]]) -> tuple[SimNetwork, dict[int, DsrUpdate]]:
    net = SimNetwork(6, lambda ctx: create(ctx, {"name": "dsr"}), LINKS, seed=7)
    ups: dict[int, DsrUpdate] = {}
    for s, node in net.nodes.items():
        (u,) = attach_extensions(node.ctx, node.runtime.protocol, ["dsr_update"])
        assert isinstance(u, DsrUpdate)
        ups[s] = u
    for k, (a, b) in enumerate(flows):
        net.inject(a, pkt(a, b, 0), at_ns=k * 100 * NS_PER_MS)
    net.run_until(NS_PER_S)
    for a, b in flows:
        assert any(P.parse_tcp(p) is not None for _t, p in net.nodes[b].delivered), (a, b)
    return net, ups


def dsr(net: SimNetwork, s: int) -> DsrRouting:
    p = net.nodes[s].runtime.protocol
    assert isinstance(p, DsrRouting)
    return p


def updates(net: SimNetwork) -> list[tuple[int, int, tuple[int, int]]]:
    out = []
    for t in net.trace:
        dp = parse(t.packet)
        cu = dp.find(CacheUpdateOption)
        if isinstance(cu, CacheUpdateOption):
            assert isinstance(dp.find(RouteError), RouteError)
            out.append((t.src, t.dst, cu.link))
    return out


@pytest.mark.parametrize(
    ("flows", "from_2"),
    [
        ([(1, 4), (6, 1)], {1}),  # 6 never learned link (3, 4): not notified
        ([(1, 4), (6, 1), (5, 4)], {1, 5}),  # 5 learned it (reply from 2's cache, then its data)
    ],
)
def test_exactly_the_neighbours_that_learned_the_link_recursively(
    flows: list[tuple[int, int]], from_2: set[int]
) -> None:
    net, ups = setup(flows)
    assert ups[2].learners((3, 4)) >= from_2 | {3}
    assert 6 not in ups[2].learners((3, 4))
    net.link_down(3, 4)
    net.inject(1, pkt(1, 4, 1))
    net.run_until(2 * NS_PER_S)
    sent = updates(net)
    # node 3 detected the break and told node 2 (node 4 is the unreachable one); node 2 told
    # exactly the neighbours that learned (3, 4) from it, never back to node 3, never node 6
    assert sorted((a, b) for a, b, link in sent if link == (3, 4)) == sorted(
        [(3, 2)] + [(2, n) for n in from_2]
    )
    assert {(a, b) for a, b, _l in sent} == {(3, 2)} | {(2, n) for n in from_2}
    assert [(link, n) for _t, link, n in ups[3].notified] == [((3, 4), 2)]
    for n in from_2:
        assert ups[n].counters["updates_received"] == 1
        route = dsr(net, n).cache.find(4, net.now_ns)
        assert route is None or (3, 4) not in zip(route, route[1:], strict=False)
    assert ups[6].counters["updates_received"] == 0
    # the records are gone: the recursion ends
    assert not ups[2].learners((3, 4)) and not ups[2].learners((4, 3))
    assert net.nodes[2].ctx.counters.extra["dsr_update_sent"] == len(from_2)


def test_cache_table_from_route_sent() -> None:
    net, ups = setup([(1, 4)])
    # node 4 replied to node 1's request through node 3; node 3 forwarded the reply to node 2
    assert 3 in ups[4].learners((1, 2))
    assert 2 in ups[3].learners((1, 2))
    assert 1 in ups[2].learners((3, 4))
    # data 1 -> 4: node 1 sent it to 2, node 2 forwarded it to 3, node 3 to 4
    assert 2 in ups[1].learners((3, 4)) and 3 in ups[2].learners((1, 2))
    assert 4 in ups[3].learners((1, 2))


def test_the_table_holds_as_many_routes_as_dsrs_cache_and_forgets_the_oldest() -> None:
    """The cache table holds routes, as many as DSR's path cache, first in first out (ns-2's
    cache: a route sent again keeps its place): a route that left it takes its learners along,
    so a node does not notify a neighbour that learned a link from a route it no longer holds."""
    net, ups = setup([(1, 4)])
    dsr_p = dsr(net, 2).p
    assert ups[2].capacity == dsr_p.primary_cache_size + dsr_p.secondary_cache_size
    u = ups[2]
    oldest = next(iter(u.cache_table))
    u.capacity = len(u.cache_table) + 1
    assert 1 in u.learners((3, 4))
    first = DsrRouteSent(now_ns=net.now_ns, route=(6, 2, 100), next_hop=6, kind="rrep")
    u.on_route_sent(first)
    u.on_route_sent(DsrRouteSent(now_ns=net.now_ns, route=oldest, next_hop=5, kind="data"))  # sent again
    u.on_route_sent(DsrRouteSent(now_ns=net.now_ns, route=(6, 2, 101), next_hop=6, kind="rrep"))
    assert oldest not in u.cache_table  # first in, first out: sending it again did not keep it
    assert list(u.cache_table)[-2:] == [(6, 2, 100), (6, 2, 101)]
    for k in range(len(u.cache_table)):  # newer routes through node 2, told to node 6
        u.on_route_sent(DsrRouteSent(now_ns=net.now_ns, route=(6, 2, 200 + k), next_hop=6, kind="rrep"))
    assert len(u.cache_table) == u.capacity
    assert not u.learners((3, 4))  # the routes with (3, 4) were among the oldest: gone
    assert u.notify((3, 4), {4}, net.now_ns) == []  # nobody left to tell


def test_route_errors_are_not_recorded_and_the_size_is_a_parameter() -> None:
    net = SimNetwork(6, lambda ctx: create(ctx, {"name": "dsr"}), LINKS, seed=7)
    node = net.nodes[2]
    (u,) = attach_extensions(
        node.ctx, node.runtime.protocol, [{"name": "dsr_update", "params": {"cache_table_routes": 2}}]
    )
    assert isinstance(u, DsrUpdate) and u.capacity == 2
    u.on_route_sent(DsrRouteSent(now_ns=0, route=(2, 1), next_hop=1, kind="rerr"))
    assert not u.cache_table  # a ROUTE ERROR (a notification among them) teaches no route
    for k in range(3):
        u.on_route_sent(DsrRouteSent(now_ns=0, route=(1, 2, 10 + k), next_hop=10 + k, kind="data"))
    assert list(u.cache_table) == [(1, 2, 11), (1, 2, 12)]
    with pytest.raises(ValueError, match="cache_table_routes"):
        DsrUpdateParams(cache_table_routes=-1)
