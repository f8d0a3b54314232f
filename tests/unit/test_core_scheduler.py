"""Scheduler and clocks: (time, insertion) order, keyed replacement, cancel, lazy deletion."""

from __future__ import annotations

import pytest

from nodes.core.clock import NS_PER_S, EventLoop, MonotonicClock, Scheduler, VirtualClock, seconds


def test_pop_due_orders_by_time_then_insertion() -> None:
    s = Scheduler()
    s.set("c", 30)
    s.set("a", 10)
    s.set("b", 10)
    s.set("d", 20)
    assert s.next_time() == 10
    assert s.pop_due(20) == ["a", "b", "d"]
    assert s.pop_due(29) == []
    assert s.pop_due(30) == ["c"]
    assert s.next_time() is None
    assert len(s) == 0


def test_set_replaces_pending_timer_with_same_key() -> None:
    s = Scheduler()
    s.set("k", 10)
    s.set("k", 50)
    assert len(s) == 1
    assert s.pending("k") == 50
    assert s.next_time() == 50
    assert s.pop_due(10) == []
    assert s.pop_due(50) == ["k"]


def test_replacing_with_earlier_time() -> None:
    s = Scheduler()
    s.set("k", 50)
    s.set("k", 5)
    assert s.pop_due(5) == ["k"]
    assert s.pop_due(100) == []


def test_cancel() -> None:
    s = Scheduler()
    s.set("a", 10)
    s.set("b", 20)
    s.cancel("a")
    s.cancel("missing")
    assert s.pending("a") is None
    assert s.next_time() == 20
    assert s.pop_due(100) == ["b"]


def test_reinsertion_after_cancel_keeps_insertion_order() -> None:
    s = Scheduler()
    s.set("a", 10)
    s.set("b", 10)
    s.cancel("a")
    s.set("a", 10)
    assert s.pop_due(10) == ["b", "a"]


def test_tuple_keys() -> None:
    s = Scheduler()
    s.set(("rreq", 3), 7)
    s.set(("rreq", 4), 7)
    assert s.pop_due(7) == [("rreq", 3), ("rreq", 4)]


def test_virtual_clock_never_goes_back() -> None:
    c = VirtualClock(5)
    c.advance_to(10)
    assert c.now_ns() == 10
    with pytest.raises(ValueError):
        c.advance_to(9)


def test_monotonic_clock_epoch() -> None:
    c = MonotonicClock(0)
    later = MonotonicClock(c.now_ns())
    assert 0 <= later.now_ns() < NS_PER_S


def test_seconds() -> None:
    assert seconds(2) == 2 * NS_PER_S
    assert seconds(0.1) == 100_000_000


def test_event_loop_runs_in_time_order_and_advances_clock() -> None:
    loop = EventLoop()
    seen: list[tuple[str, int]] = []
    loop.call_at(20, lambda: seen.append(("b", loop.now_ns())))
    loop.call_at(10, lambda: seen.append(("a", loop.now_ns())))
    loop.call_at(20, lambda: seen.append(("c", loop.now_ns())))
    loop.run_until(15)
    assert seen == [("a", 10)]
    assert loop.now_ns() == 15
    loop.run_until(100)
    assert seen == [("a", 10), ("b", 20), ("c", 20)]
    assert loop.idle()


def test_changes_moves_with_the_pending_set_only() -> None:
    """``changes`` grows on ``set``, on a ``cancel`` that removes a timer and on a ``pop_due`` that
    returns some; not on reads, a cancel of nothing or an empty ``pop_due`` (the router re-arms
    its loop timer only when it moved)."""
    s = Scheduler()
    c0 = s.changes
    s.set("a", 10)
    c1 = s.changes
    assert c1 > c0
    assert s.next_time() == 10 and s.pending("a") == 10 and len(s) == 1
    s.cancel("missing")
    assert s.pop_due(5) == []
    assert s.changes == c1
    s.set("a", 10)  # the same time again still counts: the caller just asks next_time() again
    c2 = s.changes
    assert c2 > c1
    s.cancel("a")
    c3 = s.changes
    assert c3 > c2 and s.next_time() is None
    s.set("b", 20)
    c4 = s.changes
    assert s.pop_due(20) == ["b"] and s.changes > c4
