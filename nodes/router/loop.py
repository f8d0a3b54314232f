"""The router daemon's event loop: one ``epoll``, readiness callbacks, a timer heap, signals.

What the daemon needs from an event loop is small (docs/router.md, "The event loop"): a callback
per readable descriptor (medium socket, TUN, TAP), a few timers (the protocol core's earliest
timer, the periodic counters file), SIGTERM/SIGINT, and "stop with this exit code". asyncio does
all of that but one iteration (``epoll_wait`` + a reader callback) costs 8.0 us on the development
machine (handle objects, the ready queue, the selector's key mapping) against 2.4 us here, i.e.
~11 us per forwarded packet, which takes two wake-ups (RX, then TX_STATUS). See docs/router.md,
"Performance".

Level-triggered epoll: a reader callback handles what it wants (the daemon's handle one message or
packet each) and returns; if more is queued the next ``epoll_wait`` returns at once without
sleeping, so a burst is drained without a context switch and without the ``recv`` that fails with
EAGAIN (an exception, ~2.8 us here) that a drain-until-EAGAIN loop pays on every wake-up.

Times are ``time.monotonic_ns()`` integers. ``epoll_wait`` takes milliseconds, rounded up, so a
timer never fires early and fires at most ~1 ms late (asyncio's selector loop behaves the same).
Signals: ``signal.set_wakeup_fd`` on a non-blocking socketpair registered with the epoll, so a
signal arriving while the loop sleeps wakes it up; the handler runs in the main thread between two
callbacks.

Lag: every timer that fires records its lateness (the loop's "now" when it runs minus its due
time) in a ``LagHistogram`` (100 us buckets up to 100 ms, exact maximum, the count at or beyond
fixed thresholds). On an unloaded host it stays under the ~1 ms of ``epoll_wait``'s rounding; a
station starved of CPU shows it (testbed/validity.py, docs/orchestrator.md "Run validity").
"""

from __future__ import annotations

import heapq
import itertools
import logging
import select
import signal
import socket
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

_monotonic_ns = time.monotonic_ns
_EPOLLIN = select.EPOLLIN
_MAX_TIMEOUT_S = 24 * 3600.0
_log = logging.getLogger(__name__)


LAG_BUCKET_NS = 100_000
"""Width of a loop-lag bucket: 0.1 ms (the loop's own resolution is ~1 ms, see above)."""
LAG_N_BUCKETS = 1_000
"""Buckets of the loop-lag histogram: 100 ms; the last one also holds everything later."""
LAG_LATE_THRESHOLDS_NS = (1_000_000, 2_000_000, 5_000_000, 10_000_000, 50_000_000)
"""Thresholds whose counts ``LagHistogram.to_dict`` reports (``late``), as in the medium's."""


class LagHistogram:
    """Timer lateness: fixed 0.1 ms buckets, exact count and maximum (O(1) per sample)."""

    __slots__ = ("buckets", "count", "max_ns", "sum_ns")

    def __init__(self) -> None:
        self.buckets = [0] * LAG_N_BUCKETS
        self.count = 0
        self.max_ns = 0
        self.sum_ns = 0

    def record(self, lag_ns: int) -> None:
        i = lag_ns // LAG_BUCKET_NS
        self.buckets[i if i < LAG_N_BUCKETS else LAG_N_BUCKETS - 1] += 1
        self.count += 1
        self.sum_ns += lag_ns
        if lag_ns > self.max_ns:
            self.max_ns = lag_ns

    def quantile_ns(self, q: float) -> int:
        """Upper edge of the bucket holding quantile ``q`` (capped at the maximum), ns."""
        if self.count == 0:
            return 0
        target = max(1, -int(-self.count * q // 1))
        acc = 0
        for i, n in enumerate(self.buckets):
            acc += n
            if acc >= target:
                return min((i + 1) * LAG_BUCKET_NS, max(self.max_ns, LAG_BUCKET_NS))
        return self.max_ns

    def count_at_least(self, threshold_ns: int) -> int:
        """Samples with a lag of at least ``threshold_ns`` (exact for multiples of the bucket)."""
        return sum(self.buckets[min(threshold_ns // LAG_BUCKET_NS, LAG_N_BUCKETS - 1) :])

    def merge(self, other: LagHistogram) -> None:
        """Add ``other``'s samples to this one (pooling several stations' wake-ups)."""
        for i, n in enumerate(other.buckets):
            self.buckets[i] += n
        self.count += other.count
        self.sum_ns += other.sum_ns
        self.max_ns = max(self.max_ns, other.max_ns)

    def to_dict(self) -> dict[str, Any]:
        """The counters' ``loop_lag``; ``buckets`` holds the non-empty buckets by index, so that
        ``from_dict`` can rebuild the histogram (testbed.validity pools stations with it)."""
        return {
            "count": self.count,
            "p50_ns": self.quantile_ns(0.5),
            "p99_ns": self.quantile_ns(0.99),
            "max_ns": self.max_ns,
            "mean_ns": self.sum_ns // self.count if self.count else 0,
            "resolution_ns": LAG_BUCKET_NS,
            "late": {str(t): self.count_at_least(t) for t in LAG_LATE_THRESHOLDS_NS},
            "buckets": {str(i): n for i, n in enumerate(self.buckets) if n},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LagHistogram | None:
        """The histogram ``to_dict`` wrote, or None if ``d`` has no ``buckets`` (counters written
        before 2026-11-29) or other bucket widths. Raises ValueError on a malformed one."""
        buckets = d.get("buckets")
        if not isinstance(buckets, Mapping) or int(d.get("resolution_ns", LAG_BUCKET_NS)) != LAG_BUCKET_NS:
            return None
        h = cls()
        for k, n in buckets.items():
            i = int(k)
            if not 0 <= i < LAG_N_BUCKETS or int(n) < 0:
                raise ValueError(f"loop_lag bucket {k!r}: {n!r} out of range")
            h.buckets[i] = int(n)
        h.count = sum(h.buckets)
        h.max_ns = int(d.get("max_ns", 0))
        h.sum_ns = int(d.get("mean_ns", 0)) * h.count
        return h


class TimerHandle:
    """A pending ``call_at``; ``cancel()`` makes it a no-op (removed lazily from the heap)."""

    __slots__ = ("when_ns", "callback", "args", "_cancelled", "_loop")

    def __init__(
        self, when_ns: int, callback: Callable[..., Any], args: tuple[Any, ...], loop: EpollLoop | None = None
    ) -> None:
        self.when_ns = when_ns
        self.callback = callback
        self.args = args
        self._cancelled = False
        self._loop = loop

    def cancel(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            if self._loop is not None:
                self._loop._timer_cancelled()

    def cancelled(self) -> bool:
        return self._cancelled

    def when(self) -> float:
        """The due time in seconds of ``time.monotonic()`` (asyncio's ``TimerHandle.when``)."""
        return self.when_ns / 1e9


class EpollLoop:
    """``add_reader``, ``call_at``/``call_later``/``call_soon``, signal handlers, ``run() -> code``."""

    def __init__(self) -> None:
        self._ep = select.epoll()
        self._readers: dict[int, Callable[[], None]] = {}
        self._heap: list[tuple[int, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._soon: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self._signals: dict[int, Any] = {}
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._old_wakeup_fd = -1
        self._code: int | None = None
        self._closed = False
        self._n_cancelled = 0
        self._poller: Callable[[float], list[tuple[int, int]]] | None = None
        self.lag = LagHistogram()
        """Lateness of every timer fired (``_run_timers``)."""

    # ------------------------------------------------------------------ readers
    def add_reader(self, fd: int, callback: Callable[[], None]) -> None:
        if fd in self._readers:
            self._ep.modify(fd, _EPOLLIN)
        else:
            self._ep.register(fd, _EPOLLIN)
        self._readers[fd] = callback

    def remove_reader(self, fd: int) -> bool:
        if self._readers.pop(fd, None) is None:
            return False
        try:
            self._ep.unregister(fd)
        except (OSError, ValueError):  # already closed
            pass
        return True

    def fileno(self) -> int:
        """The epoll descriptor (a poller set with ``set_poller`` waits on it)."""
        return self._ep.fileno()

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        """``epoll.poll`` on the loop's descriptors."""
        return self._ep.poll(timeout)

    def set_poller(self, poller: Callable[[float], list[tuple[int, int]]] | None) -> None:
        """Wait with ``poller(timeout_s) -> [(fd, events)]`` instead of ``epoll.poll`` (the router's
        native fast path, nodes/router/fastpath.py); None restores ``epoll.poll``. Set it before
        ``run()``: the loop reads it when it starts, not at every iteration."""
        self._poller = poller

    # ------------------------------------------------------------------ timers
    def time_ns(self) -> int:
        return _monotonic_ns()

    def call_at_ns(self, when_ns: int, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        h = TimerHandle(when_ns, callback, args, self)
        heapq.heappush(self._heap, (when_ns, next(self._seq), h))
        return h

    def _timer_cancelled(self) -> None:
        """Drop cancelled handles once they are most of a non-trivial heap (asyncio does the same)."""
        self._n_cancelled += 1
        heap = self._heap
        if self._n_cancelled > 64 and 2 * self._n_cancelled > len(heap):
            heap[:] = [e for e in heap if not e[2]._cancelled]
            heapq.heapify(heap)
            self._n_cancelled = 0

    def call_later(self, delay_s: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        return self.call_at_ns(_monotonic_ns() + round(delay_s * 1e9), callback, *args)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback`` at the next loop iteration, before sleeping."""
        self._soon.append((callback, args))

    # ------------------------------------------------------------------ signals
    def add_signal_handler(self, sig: int, callback: Callable[..., Any], *args: Any) -> None:
        if self._wake_r is None:
            self._wake_r, self._wake_w = socket.socketpair()
            self._wake_r.setblocking(False)
            self._wake_w.setblocking(False)
            self._old_wakeup_fd = signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
            self.add_reader(self._wake_r.fileno(), self._drain_wakeup)

        def handler(signum: int, frame: FrameType | None) -> None:
            callback(*args)

        self._signals[sig] = signal.signal(sig, handler)

    def remove_signal_handlers(self) -> None:
        for sig, old in self._signals.items():
            signal.signal(sig, old)
        self._signals.clear()
        if self._wake_r is not None and self._wake_w is not None:
            signal.set_wakeup_fd(self._old_wakeup_fd)
            self.remove_reader(self._wake_r.fileno())
            self._wake_r.close()
            self._wake_w.close()
            self._wake_r = self._wake_w = None

    def _drain_wakeup(self) -> None:
        assert self._wake_r is not None
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    # ------------------------------------------------------------------ running
    def stop(self, code: int) -> None:
        """Make ``run()`` return ``code`` after the current callback (the first stop wins)."""
        if self._code is None:
            self._code = code

    def stopping(self) -> bool:
        return self._code is not None

    def run(self) -> int:
        """Run until ``stop(code)``; return the code.

        An exception in a callback is logged and the loop goes on (as asyncio's loop does): one
        bad packet must not take the station down.
        """
        while self._code is None:
            try:
                self._run()
            except Exception:
                _log.exception("exception in an event loop callback")
        return self._code

    def _run(self) -> None:
        poll = self._poller or self._ep.poll
        readers = self._readers
        heap = self._heap
        soon = self._soon
        while self._code is None:
            if soon:
                timeout = 0.0
            elif heap:
                timeout = (heap[0][0] - _monotonic_ns()) / 1e9
                if timeout < 0.0:
                    timeout = 0.0
                elif timeout > _MAX_TIMEOUT_S:
                    timeout = _MAX_TIMEOUT_S
            else:
                timeout = -1.0
            for fd, _ in poll(timeout):
                cb = readers.get(fd)
                if cb is not None:
                    cb()
                if self._code is not None:
                    break
            if soon:
                for _ in range(len(soon)):  # not the ones these add: they run next iteration
                    fn, args = soon.pop(0)
                    fn(*args)
            if heap and heap[0][0] <= _monotonic_ns():
                self._run_timers()

    def _run_timers(self) -> None:
        heap = self._heap
        now = _monotonic_ns()
        record = self.lag.record
        while heap and heap[0][0] <= now and self._code is None:
            h = heapq.heappop(heap)[2]
            if h._cancelled:
                self._n_cancelled -= 1
            else:
                h._loop = None  # fired: a late cancel() no longer counts against the heap
                record(now - h.when_ns)
                h.callback(*h.args)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.remove_signal_handlers()
        self._readers.clear()
        self._heap.clear()
        self._ep.close()
