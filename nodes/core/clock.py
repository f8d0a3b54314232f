"""Time as integer nanoseconds from an injected clock, and a timer scheduler.

STYLE.md: "the same scheduler runs in virtual time in tests and on the wall clock in the emulator
(simpy's Environment / RealtimeEnvironment idea). Events at the same time run in insertion order:
a heap of (time, seq, callback)." Keyed timers (a protocol's ``SetTimer(key, at)``) replace the
pending timer with the same key; cancelled entries are skipped lazily.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Protocol

NS_PER_S: int = 1_000_000_000
NS_PER_MS: int = 1_000_000
NS_PER_US: int = 1_000


def seconds(s: float) -> int:
    """Seconds to integer nanoseconds (for parameters written in seconds)."""
    return round(s * NS_PER_S)


class Clock(Protocol):
    def now_ns(self) -> int: ...


class MonotonicClock:
    """Wall clock: CLOCK_MONOTONIC minus an epoch (the medium's virtual time 0)."""

    def __init__(self, epoch_ns: int = 0) -> None:
        self.epoch_ns = epoch_ns

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.epoch_ns


class VirtualClock:
    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns

    def now_ns(self) -> int:
        return self._now

    def advance_to(self, t_ns: int) -> None:
        if t_ns < self._now:
            raise ValueError(f"virtual time cannot go back ({t_ns} < {self._now})")
        self._now = t_ns


class Scheduler:
    """Heap of ``(time_ns, seq, key)``; at most one live entry per key."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int]] = {}
        self._seq = itertools.count()
        self.changes = 0
        """Grows whenever the set of pending timers changes (``set``, a ``cancel`` that removes
        one, a ``pop_due`` that returns some); read it, never write it. ``next_time()`` is a
        function of that set only, so a caller that remembers this number with its answer knows
        the answer still holds while the number is the same (the router's ``_rearm``, without
        the call on every packet: docs/benchmarks.md)."""

    def __len__(self) -> int:
        return len(self._live)

    def set(self, key: Hashable, at_ns: int) -> None:
        seq = next(self._seq)
        self._live[key] = (at_ns, seq)
        heapq.heappush(self._heap, (at_ns, seq, key))
        self.changes += 1

    def cancel(self, key: Hashable) -> None:
        if self._live.pop(key, None) is not None:
            self.changes += 1

    def pending(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def next_time(self) -> int | None:
        if not self._heap:
            return None
        self._skip_dead()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ns: int) -> list[Hashable]:
        """Remove and return the keys due at or before ``now_ns``, in (time, insertion) order."""
        due: list[Hashable] = []
        while True:
            self._skip_dead()
            if not self._heap or self._heap[0][0] > now_ns:
                if due:
                    self.changes += 1
                return due
            _, _, key = heapq.heappop(self._heap)
            del self._live[key]
            due.append(key)

    def _skip_dead(self) -> None:
        heap = self._heap
        while heap:
            t, seq, key = heap[0]
            if self._live.get(key) == (t, seq):
                return
            heapq.heappop(heap)


class EventLoop:
    """A virtual-time loop of callbacks: ``call_at(t, fn)``; ``run_until(t)`` (tests, sim)."""

    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now_ns(self) -> int:
        return self.clock.now_ns()

    def call_at(self, t_ns: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(t_ns, self.clock.now_ns()), next(self._seq), fn))

    def run_until(self, t_ns: int) -> None:
        while self._heap and self._heap[0][0] <= t_ns:
            t, _, fn = heapq.heappop(self._heap)
            self.clock.advance_to(t)
            fn()
        self.clock.advance_to(max(t_ns, self.clock.now_ns()))

    def idle(self) -> bool:
        return not self._heap
