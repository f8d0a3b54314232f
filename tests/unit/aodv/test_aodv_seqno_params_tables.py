"""Sequence numbers (RFC 3561 section 6.1), parameters (section 10) and the AODV tables."""

from __future__ import annotations

import logging

import pytest

from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.protocol import ParamError, params_from_dict
from nodes.protocols.aodv import (
    TRANSITIONS,
    AodvParams,
    IllegalTransition,
    RouteEntry,
    RouteState,
    RoutingTable,
)
from nodes.protocols.aodv.id_cache import IdCache
from nodes.protocols.aodv.rate_limit import RateLimiter
from nodes.protocols.aodv.request_table import Discovery, first_ttl, next_attempt, timeout_ns
from nodes.protocols.aodv.route_table import is_fresher
from nodes.protocols.aodv.send_buffer import SendBuffer
from nodes.protocols.aodv.seqno import seq_diff, seq_ge, seq_gt, seq_inc, seq_max

# ------------------------------------------------------------------ sequence numbers


@pytest.mark.parametrize(
    ("a", "b", "gt", "ge"),
    [
        (5, 4, True, True),
        (4, 5, False, False),
        (7, 7, False, True),
        (0, 0xFFFF_FFFF, True, True),  # wrapped: 0 is newer than 2**32-1
        (3, 0xFFFF_FFF0, True, True),
        (0xFFFF_FFF0, 3, False, False),
        (0x8000_0001, 1, False, False),  # exactly half-way apart: signed diff is negative
        (0x7FFF_FFFF + 1, 0, False, False),
        (0x7FFF_FFFF, 0, True, True),
    ],
)
def test_seq_compare_wraps(a: int, b: int, gt: bool, ge: bool) -> None:
    assert seq_gt(a, b) is gt
    assert seq_ge(a, b) is ge


def test_seq_diff_inc_max() -> None:
    assert seq_diff(2, 0xFFFF_FFFE) == 4
    assert seq_diff(0xFFFF_FFFE, 2) == -4
    assert seq_inc(0xFFFF_FFFF) == 1  # 0 is "unknown": never produced by incrementing
    assert seq_inc(0) == 1
    assert seq_inc(41) == 42
    assert seq_max(0xFFFF_FFFF, 2) == 2
    assert seq_max(2, 0xFFFF_FFFF) == 2


def _entry(seq: int, hops: int, state: RouteState = RouteState.VALID, valid: bool = True) -> RouteEntry:
    return RouteEntry(9, 2, hops, seq, valid, 10 * NS_PER_S, state)


@pytest.mark.parametrize(
    ("entry", "seq", "hops", "expected"),
    [
        (None, 1, 3, True),  # no route yet
        (_entry(5, 3, valid=False), 1, 9, True),  # (iii) unknown sequence number in the table
        (_entry(5, 3), 6, 9, True),  # (i) newer sequence number, even if longer
        (_entry(5, 3), 4, 1, False),  # older sequence number, even if shorter
        (_entry(5, 3), 5, 2, True),  # (ii) same number, fewer hops
        (_entry(5, 3), 5, 3, False),  # same number, same hops
        (_entry(5, 3, RouteState.INVALID), 5, 4, True),  # 6.7 (iii) same number, route inactive
        (_entry(0xFFFF_FFFF, 3), 1, 5, True),  # newer across the wrap
    ],
)
def test_route_update_rule(entry: RouteEntry | None, seq: int, hops: int, expected: bool) -> None:
    assert is_fresher(entry, seq, hops) is expected


# ------------------------------------------------------------------ parameters


def test_params_rfc_defaults_and_derived() -> None:
    p = AodvParams()
    assert (p.active_route_timeout, p.allowed_hello_loss, p.hello_interval, p.local_add_ttl) == (
        3.0,
        2,
        1.0,
        2,
    )
    assert (p.net_diameter, p.node_traversal_time, p.rerr_ratelimit, p.rreq_retries) == (35, 0.040, 10, 2)
    assert (p.rreq_ratelimit, p.timeout_buffer, p.ttl_start, p.ttl_increment, p.ttl_threshold) == (
        10,
        2,
        1,
        2,
        7,
    )
    assert p.net_traversal_time_ns == 2800 * NS_PER_MS
    assert p.path_discovery_time_ns == 5600 * NS_PER_MS
    assert p.blacklist_timeout_ns == 5600 * NS_PER_MS
    assert p.delete_period_ns == 15 * NS_PER_S
    assert p.max_repair_ttl == 10
    assert p.my_route_timeout_ns == 11200 * NS_PER_MS
    assert p.next_hop_wait_ns == 50 * NS_PER_MS
    assert p.ring_traversal_time_ns(1) == 240 * NS_PER_MS
    assert p.ring_traversal_time_ns(7) == 720 * NS_PER_MS
    assert not p.enable_hello
    # ns-2 defaults (issue 11): local repair (AODV_LOCAL_REPAIR) with ns-2's rule, per-hop
    # adaptive RREQ waits (PerHopTime), a failed control frame is not a link break.
    assert p.local_repair and p.local_repair_rule == "ns2" and p.adaptive_traversal_time
    assert not p.control_failure_breaks_link and p.traversal_history == 3


def test_params_from_dict_rejects_unknown_and_bad() -> None:
    assert (
        params_from_dict(AodvParams, {"active_route_timeout": 10.0}).active_route_timeout_ns == 10 * NS_PER_S
    )
    with pytest.raises(ParamError, match="unknown parameter"):
        params_from_dict(AodvParams, {"active_route_timout": 1.0})
    with pytest.raises(ParamError):
        params_from_dict(AodvParams, {"ttl_threshold": 50})
    with pytest.raises(ParamError):
        params_from_dict(AodvParams, {"net_diameter": 0})
    with pytest.raises(ParamError, match="local_repair_rule must be one of ns2, rfc"):
        params_from_dict(AodvParams, {"local_repair_rule": "always"})
    with pytest.raises(ParamError, match="traversal_history"):
        params_from_dict(AodvParams, {"traversal_history": 0})


# ------------------------------------------------------------------ expanding ring schedule


def test_expanding_ring_schedule() -> None:
    p = AodvParams()
    d = Discovery(9, first_ttl(p, None), 0)
    seen = [(d.ttl, timeout_ns(p, d) // NS_PER_MS)]
    while next_attempt(p, d):
        seen.append((d.ttl, timeout_ns(p, d) // NS_PER_MS))
    assert seen == [(1, 240), (3, 400), (5, 560), (7, 720), (35, 2800), (35, 5600), (35, 11200)]


@pytest.mark.parametrize(("hops", "ttl"), [(None, 1), (1, 3), (4, 6), (5, 7), (6, 35), (30, 35)])
def test_first_ttl_from_last_hop_count(hops: int | None, ttl: int) -> None:
    assert first_ttl(AodvParams(), hops) == ttl


# ------------------------------------------------------------------ route table


def test_route_table_lazy_expiry_and_delete_period() -> None:
    t = RoutingTable(delete_period_ns=15 * NS_PER_S, log=logging.getLogger("t"))
    t.add(RouteEntry(5, 2, 2, 10, True, 3 * NS_PER_S))
    t.drain_changes()
    assert t.usable(5, 3 * NS_PER_S - 1) is not None
    e = t.lookup(5, 3 * NS_PER_S)
    assert e is not None and e.state is RouteState.INVALID
    assert e.expires_ns == 18 * NS_PER_S
    assert t.drain_changes() == [(5, RouteState.VALID, RouteState.INVALID)]
    assert t.lookup(5, 18 * NS_PER_S - 1) is not None
    assert t.lookup(5, 18 * NS_PER_S) is None
    assert t.drain_changes() == [(5, RouteState.INVALID, None)]
    assert len(t) == 0


def test_route_state_transitions_are_data_and_enforced() -> None:
    t = RoutingTable(delete_period_ns=NS_PER_S)
    e = t.add(RouteEntry(5, 2, 2, 10, True, NS_PER_S))
    t.set_state(e, RouteState.GDWN, 0)
    t.set_state(e, RouteState.INVALID, 0)
    with pytest.raises(IllegalTransition):
        t.set_state(e, RouteState.REPAIRING, 0)
    with pytest.raises(IllegalTransition):
        t.set_state(e, RouteState.GDWN, 0)
    assert RouteState.GDWN in TRANSITIONS[RouteState.VALID]
    assert all(s in TRANSITIONS for s in RouteState)


def test_refresh_only_extends_usable_routes() -> None:
    t = RoutingTable(delete_period_ns=NS_PER_S)
    t.add(RouteEntry(5, 2, 2, 10, True, 5 * NS_PER_S))
    t.refresh(5, NS_PER_S, 3 * NS_PER_S)
    assert t.usable(5, 0) is not None and t.usable(5, 0).expires_ns == 5 * NS_PER_S  # type: ignore[union-attr]
    t.refresh(5, 4 * NS_PER_S, 3 * NS_PER_S)
    assert t.usable(5, 0).expires_ns == 7 * NS_PER_S  # type: ignore[union-attr]


# ------------------------------------------------------------------ id cache, buffer, limiter


def test_id_cache_expires_after_lifetime() -> None:
    c = IdCache(lifetime_ns=5600 * NS_PER_MS)
    assert c.check_and_add(1, 7, 0) is False
    assert c.check_and_add(1, 7, 5600 * NS_PER_MS - 1) is True
    assert c.check_and_add(1, 8, 0) is False
    assert c.check_and_add(2, 7, 0) is False
    assert c.seen(1, 7, 5600 * NS_PER_MS) is False


def test_send_buffer_fifo_capacity_timeout() -> None:
    b = SendBuffer(capacity=2, timeout_ns=NS_PER_S)
    assert b.enqueue(9, b"a", 0) == []
    assert b.enqueue(8, b"b", 1) == []
    gone = b.enqueue(9, b"c", 2)
    assert [g.packet for g in gone] == [b"a"]
    assert [x.packet for x in b.take(9)] == [b"c"]
    assert [x.packet for x in b.purge(NS_PER_S + 1)] == [b"b"]
    assert len(b) == 0


def test_rate_limiter_sliding_second() -> None:
    r = RateLimiter(3)
    assert [r.allow(t * NS_PER_MS) for t in (0, 10, 20, 30)] == [True, True, True, False]
    assert r.next_allowed_ns(30 * NS_PER_MS) == NS_PER_S
    assert r.allow(NS_PER_S) is True
