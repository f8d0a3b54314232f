"""The router's epoll loop (nodes/router/loop.py): readers, timers, call_soon, signals, errors."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from nodes.router.loop import EpollLoop, LagHistogram


def test_timers_fire_in_order_and_cancelled_ones_do_not() -> None:
    loop = EpollLoop()
    fired: list[str] = []
    now = loop.time_ns()
    loop.call_at_ns(now + 20_000_000, fired.append, "b")
    loop.call_at_ns(now + 10_000_000, fired.append, "a")
    h = loop.call_at_ns(now + 15_000_000, fired.append, "x")
    h.cancel()
    assert h.cancelled()
    loop.call_at_ns(now + 30_000_000, loop.stop, 7)
    t0 = time.monotonic_ns()
    assert loop.run() == 7
    assert fired == ["a", "b"]
    assert time.monotonic_ns() - t0 >= 30_000_000 - 1_000_000  # never early (ms rounding up)
    loop.close()


def test_reader_is_called_while_data_is_queued_and_soon_runs_first() -> None:
    loop = EpollLoop()
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    b.setblocking(False)
    got: list[bytes] = []
    order: list[str] = []

    def on_readable() -> None:  # one message per callback: level-triggered epoll calls again
        got.append(b.recv(100))
        if len(got) == 3:
            loop.stop(0)

    for m in (b"1", b"2", b"3"):
        a.send(m)
    loop.add_reader(b.fileno(), on_readable)
    loop.call_soon(order.append, "soon")
    assert loop.run() == 0
    assert got == [b"1", b"2", b"3"] and order == ["soon"]
    assert loop.remove_reader(b.fileno()) and not loop.remove_reader(b.fileno())
    loop.close()
    a.close()
    b.close()


def test_signal_wakes_the_loop_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    loop = EpollLoop()
    loop.add_signal_handler(signal.SIGUSR1, loop.stop, 5)
    loop.call_later(0.05, os.kill, os.getpid(), signal.SIGUSR1)
    loop.call_later(10, loop.stop, 99)  # not reached
    assert loop.run() == 5
    loop.close()
    assert signal.getsignal(signal.SIGUSR1) == before


def test_a_failing_callback_is_logged_and_the_loop_goes_on() -> None:
    loop = EpollLoop()

    def boom() -> None:
        raise RuntimeError("bug")

    loop.call_soon(boom)
    loop.call_later(0.01, loop.stop, 3)
    assert loop.run() == 3
    loop.close()


def test_many_cancelled_timers_are_compacted() -> None:
    loop = EpollLoop()
    far = loop.time_ns() + 10**12
    for i in range(1000):
        loop.call_at_ns(far + i, lambda: None).cancel()
    assert len(loop._heap) < 200
    loop.close()


def test_lag_histogram_quantiles_and_late_counts() -> None:
    h = LagHistogram()
    for _ in range(97):
        h.record(300_000)  # 0.3 ms: bucket 3
    h.record(1_500_000)
    h.record(7_000_000)
    h.record(250_000_000)  # beyond the last bucket: counted there, exact maximum
    d = h.to_dict()
    assert d["count"] == 100
    assert d["p50_ns"] == 400_000  # upper edge of the 0.3-0.4 ms bucket
    assert d["p99_ns"] == 7_100_000
    assert d["max_ns"] == 250_000_000
    assert d["late"] == {"1000000": 3, "2000000": 2, "5000000": 2, "10000000": 1, "50000000": 1}
    assert LagHistogram().to_dict()["p99_ns"] == 0


def test_a_timer_run_late_is_recorded_as_lag(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop runs due timers at its clock's now; each one's lateness is now - when_ns (exact)."""
    import nodes.router.loop as loop_mod

    loop = EpollLoop()
    fired: list[str] = []
    loop.call_at_ns(1_000_000_000, fired.append, "a")
    loop.call_at_ns(1_030_000_000, fired.append, "b")
    loop.call_at_ns(1_045_000_000, fired.append, "c").cancel()  # cancelled: no sample
    loop.call_at_ns(2_000_000_000, fired.append, "later")  # not due
    monkeypatch.setattr(loop_mod, "_monotonic_ns", lambda: 1_050_000_000)
    loop._run_timers()
    loop.close()
    assert fired == ["a", "b"]
    lag = loop.lag
    assert lag.count == 2
    assert lag.max_ns == 50_000_000
    assert lag.count_at_least(20_000_000) == 2
    assert lag.count_at_least(50_000_000) == 1
    assert lag.to_dict()["p50_ns"] == 20_100_000  # upper edge of the 20.0-20.1 ms bucket


def test_lag_histogram_round_trips_through_its_dict_and_merges() -> None:
    h = LagHistogram()
    for lag in (300_000, 300_000, 1_500_000, 250_000_000):
        h.record(lag)
    back = LagHistogram.from_dict(h.to_dict())
    assert back is not None
    assert back.to_dict() == h.to_dict()
    other = LagHistogram()
    other.record(7_000_000)
    back.merge(other)
    assert (back.count, back.max_ns, back.count_at_least(5_000_000)) == (5, 250_000_000, 2)
    no_buckets = {k: v for k, v in h.to_dict().items() if k != "buckets"}
    assert LagHistogram.from_dict(no_buckets) is None
