"""Route cache (FIFO, primary/secondary, link cache), send buffer, request table, params."""

from __future__ import annotations

import pytest

from nodes.core import NodeContext, ParamError, params_from_dict
from nodes.protocols.dsr import DsrParams, create
from nodes.protocols.dsr.grat_reply_table import GratReplyTable
from nodes.protocols.dsr.request_table import RequestTable
from nodes.protocols.dsr.route_cache import LinkCache, PathCache
from nodes.protocols.dsr.send_buffer import SendBuffer

S = 1_000_000_000


def recorder() -> tuple[list[tuple[str, tuple[int, ...], str]], object]:
    log: list[tuple[str, tuple[int, ...], str]] = []
    return log, lambda e, p, d: log.append((e, p, d))


def test_primary_fifo_eviction() -> None:
    log, cb = recorder()
    c = PathCache(1, primary_size=3, secondary_size=2, timeout_ns=300 * S, notify=cb)  # type: ignore[arg-type]
    for dst in (2, 3, 4, 5):
        assert c.add((1, 9, dst), 0, primary=True)
    assert c.paths("primary") == [(1, 9, 3), (1, 9, 4), (1, 9, 5)]
    assert ("remove", (1, 9, 2), "evicted") in log
    assert c.find(2, 0) is None


@pytest.mark.parametrize(
    ("adds", "expected_secondary"),
    [
        ([(1, 2, 3)], [(1, 2, 3)]),
        ([(1, 2, 3), (1, 2, 3)], [(1, 2, 3)]),  # duplicate
        ([(1, 2, 3), (1, 2)], [(1, 2, 3)]),  # prefix of a cached route
        ([(1, 2), (1, 2, 3)], [(1, 2, 3)]),  # extends a cached route
        ([(1, 2, 1)], []),  # loop
        ([(2, 3)], []),  # does not start here
        ([(1, 2), (1, 3), (1, 4)], [(1, 3), (1, 4)]),  # FIFO, capacity 2
    ],
)
def test_secondary_add_table(adds: list[tuple[int, ...]], expected_secondary: list[tuple[int, ...]]) -> None:
    c = PathCache(1, primary_size=3, secondary_size=2, timeout_ns=300 * S)
    for p in adds:
        c.add(p, 0, primary=False)
    assert c.paths("secondary") == expected_secondary


def test_secondary_hit_promoted_and_shortest_wins() -> None:
    c = PathCache(1, 3, 3, 300 * S)
    c.add((1, 2, 3, 4, 5), 0, primary=True)
    c.add((1, 6, 5), 0, primary=False)
    assert c.find(5, 0) == (1, 2, 3, 4, 5)  # primary searched first
    assert c.find(4, 0) == (1, 2, 3, 4)  # prefix of a longer path
    c2 = PathCache(1, 3, 3, 300 * S)
    c2.add((1, 6, 5), 0, primary=False)
    assert c2.find(5, 0) == (1, 6, 5)
    assert c2.paths("primary") == [(1, 6, 5)] and c2.paths("secondary") == []


def test_remove_link_truncates_and_expiry_is_lazy() -> None:
    log, cb = recorder()
    c = PathCache(1, 3, 3, 10 * S, notify=cb)  # type: ignore[arg-type]
    c.add((1, 2, 3, 4), 0, primary=True)
    c.add((1, 3, 4), 0, primary=False)
    assert c.remove_link(3, 4, 0) == 2
    assert c.paths() == [(1, 2, 3), (1, 3)]  # ns-2: truncated at the broken link
    assert c.remove_link(1, 2, 0) == 1
    assert c.find(4, 0) is None
    c.add((1, 5), S, primary=True)
    assert c.find(5, 10 * S) == (1, 5)  # used at 10 s: expiry refreshed to 20 s
    assert c.find(5, 20 * S) is None
    assert ("remove", (1, 5), "expired") in log


def test_link_cache_bfs_and_removal() -> None:
    c = LinkCache(1, capacity=10, timeout_ns=300 * S)
    c.add((1, 2, 3, 4), 0, primary=True)
    c.add((1, 5, 4), 0, primary=False)
    assert c.find(4, 0) == (1, 5, 4)
    c.remove_link(5, 4, 0)
    assert c.find(4, 0) == (1, 2, 3, 4)
    assert c.find(9, 0) is None


def test_send_buffer_drops_oldest_and_expires() -> None:
    b = SendBuffer(2, 30 * S)
    assert b.add(b"a", 5, 0) is None
    assert b.add(b"b", 6, S) is None
    victim = b.add(b"c", 5, 2 * S)
    assert victim is not None and victim.packet == b"a"
    assert b.dsts() == [6, 5]
    assert [x.packet for x in b.expire(31 * S)] == [b"b"]
    assert b.next_expiry_ns() == 32 * S
    assert [x.packet for x in b.take(5)] == [b"c"] and len(b) == 0


def test_request_table_duplicates_and_lru() -> None:
    t = RequestTable(size=2, ids=2)
    assert not t.seen(1, 10, 9)
    assert t.seen(1, 10, 9)
    assert not t.seen(1, 10, 8)  # another target
    assert not t.seen(1, 11, 9)  # ids=2: (10, 9) forgotten
    assert not t.seen(1, 10, 9)
    assert not t.seen(2, 1, 9)
    assert not t.seen(3, 1, 9)  # size=2: initiator 1 forgotten
    assert not t.seen(1, 11, 9)


def test_grat_reply_holdoff() -> None:
    g = GratReplyTable(S)
    assert g.check_and_add(1, 2, 0)
    assert not g.check_and_add(1, 2, S - 1)
    assert g.check_and_add(1, 2, S)


def test_params_defaults_and_errors() -> None:
    p = DsrParams()
    assert (p.broadcast_jitter_ns, p.request_period_ns, p.max_request_period_ns) == (10**7, 5 * 10**8, 10 * S)
    assert (p.max_salvage_count, p.primary_cache_size, p.secondary_cache_size) == (15, 30, 64)
    with pytest.raises(ParamError):
        params_from_dict(DsrParams, {"bogus": 1})
    with pytest.raises(ParamError):
        params_from_dict(DsrParams, {"max_salvage_count": 16})
    import random

    ctx = NodeContext(station=1, n_stations=2, rng=random.Random(1))
    with pytest.raises(ParamError):
        create(ctx, {"name": "dsr", "params": {"cache": "lru"}})
    assert create(ctx, {"name": "dsr", "params": {"cache": "link"}}).p.cache == "link"
