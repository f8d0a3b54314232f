"""Packets waiting for a route (RFC 3561 section 6.3), ns-3's ``RequestQueue``.

Section 6.3: "Data packets waiting for a route (i.e., waiting for a RREP after a RREQ has been
sent) SHOULD be buffered. The buffering SHOULD be "first-in, first-out" (FIFO). If a route
discovery has been attempted RREQ_RETRIES times at the maximum TTL without receiving any RREP,
all data packets destined for the corresponding destination SHOULD be dropped from the buffer".

Bounded (the oldest packet is dropped when full, as in ns-3) and with a per-packet timeout;
entries hold absolute expiry times and are purged lazily.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Buffered:
    dst: int
    packet: bytes
    expires_ns: int
    prev_hop: int | None = None
    """The neighbour a transit packet came from (buffered during local repair); None: ours."""
    ttl_done: bool = False
    """The IP TTL was already decremented here."""


class SendBuffer:
    def __init__(self, capacity: int, timeout_ns: int) -> None:
        self.capacity = capacity
        self.timeout_ns = timeout_ns
        self._q: deque[Buffered] = deque()

    def __len__(self) -> int:
        return len(self._q)

    def enqueue(
        self, dst: int, packet: bytes, now_ns: int, prev_hop: int | None = None, ttl_done: bool = False
    ) -> list[Buffered]:
        """Buffer ``packet``; return what had to go (expired packets, then the oldest if full)."""
        gone = self.purge(now_ns)
        if len(self._q) >= self.capacity:
            gone.append(self._q.popleft())
        self._q.append(Buffered(dst, packet, now_ns + self.timeout_ns, prev_hop, ttl_done))
        return gone

    def purge(self, now_ns: int) -> list[Buffered]:
        """Remove and return expired packets."""
        if not self._q or all(b.expires_ns > now_ns for b in self._q):
            return []
        expired = [b for b in self._q if b.expires_ns <= now_ns]
        self._q = deque(b for b in self._q if b.expires_ns > now_ns)
        return expired

    def take(self, dst: int) -> list[Buffered]:
        """Remove and return the packets for ``dst`` in FIFO order."""
        out = [b for b in self._q if b.dst == dst]
        if out:
            self._q = deque(b for b in self._q if b.dst != dst)
        return out

    def has(self, dst: int) -> bool:
        return any(b.dst == dst for b in self._q)
