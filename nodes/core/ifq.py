"""The interface queue between the routing layer and the MAC.

ns-2's ``Queue/DropTail/PriQueue`` as used by every paper's setup: 50 packets, routing packets
ahead of data, drop-tail when full. It is handed to the protocol core (``NodeContext.ifq``) so that
DSR can salvage or drop the queued packets for a broken next hop (RFC 4728 section 8.3.5) and EPLN
can record them in its drop_list (Yu 2004 section 4.1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from nodes.core.events import Frame

DEFAULT_IFQ_LEN: int = 50
"""ns-2 ``Queue/DropTail/PriQueue set limit_ 50`` (the papers' interface queue length)."""


class InterfaceQueue:
    """Two FIFOs (control ahead of data) with one shared capacity."""

    def __init__(self, capacity: int = DEFAULT_IFQ_LEN) -> None:
        if capacity < 1:
            raise ValueError("interface queue capacity must be >= 1")
        self.capacity = capacity
        self._control: deque[Frame] = deque()
        self._data: deque[Frame] = deque()
        self.queued = 0
        """Frames in the queue (``len()``); read it, never write it. A plain attribute so that
        the runtime's pump can skip the MAC when the queue is empty without a Python call
        (docs/benchmarks.md, "Cost of the issue-13 seams")."""

    def __len__(self) -> int:
        return self.queued

    def __iter__(self) -> Iterator[Frame]:
        """Frames in the order the MAC will take them."""
        yield from self._control
        yield from self._data

    def enqueue(self, frame: Frame) -> Frame | None:
        """Add ``frame``; return the frame dropped if the queue was full (else None).

        Drop-tail, except that a control frame arriving at a full queue pushes out the last data
        frame (ns-2 PriQueue puts routing packets at the head, so they are never starved by data).
        """
        if self.queued < self.capacity:
            (self._control if frame.control else self._data).append(frame)
            self.queued += 1
            return None
        if frame.control and self._data:
            victim = self._data.pop()
            self._control.append(frame)
            return victim
        return frame

    def dequeue(self) -> Frame | None:
        if self._control:
            self.queued -= 1
            return self._control.popleft()
        if self._data:
            self.queued -= 1
            return self._data.popleft()
        return None

    def remove_if(self, predicate: Callable[[Frame], bool]) -> list[Frame]:
        """Remove and return every queued frame matching ``predicate`` (in queue order)."""
        removed: list[Frame] = []
        for q in (self._control, self._data):
            keep = [f for f in q if not predicate(f)]
            if len(keep) != len(q):
                removed.extend(f for f in q if predicate(f))
                q.clear()
                q.extend(keep)
        self.queued = len(self._control) + len(self._data)
        return removed

    def snapshot(self) -> list[Frame]:
        return list(self)
