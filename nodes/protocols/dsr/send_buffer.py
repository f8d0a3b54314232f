"""The DSR Send Buffer (RFC 4728 section 4.2): packets waiting for a route.

"Packets in the Send Buffer are stored with the time they were placed in the buffer ... a packet
SHOULD be removed from the Send Buffer and discarded if it has been in the buffer for
SendBufferTimeout." When the buffer is full the oldest packet is discarded to make room (the RFC
leaves the policy to the implementation; ns-2 does the same).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Buffered:
    packet: bytes
    """The IP packet as the kernel sent it (no DSR header yet)."""
    dst: int
    enq_ns: int
    salvage: int = 0
    """0: this node's own packet. n > 0: another node's packet that this node salvages and sends
    with Salvage n once a route is found (``salvage_request``, ns-2.29 ``NEW_SALVAGE_LOGIC``)."""


class SendBuffer:
    def __init__(self, capacity: int, timeout_ns: int) -> None:
        self.capacity = capacity
        self.timeout_ns = timeout_ns
        self._q: deque[Buffered] = deque()

    def __len__(self) -> int:
        return len(self._q)

    def add(self, packet: bytes, dst: int, now_ns: int, salvage: int = 0) -> Buffered | None:
        """Buffer ``packet``; return the entry pushed out when the buffer was full."""
        victim = self._q.popleft() if len(self._q) >= self.capacity else None
        self._q.append(Buffered(packet, dst, now_ns, salvage))
        return victim

    def has(self, dst: int, *, own: bool = False) -> bool:
        """Whether packets for ``dst`` wait (with ``own``: packets of this node's own)."""
        return any(b.dst == dst and not (own and b.salvage) for b in self._q)

    def take_salvaged(self, dst: int) -> list[Buffered]:
        """Remove and return the salvaged packets for ``dst`` (this node's own stay)."""
        out = [b for b in self._q if b.dst == dst and b.salvage]
        if out:
            self._q = deque(b for b in self._q if not (b.dst == dst and b.salvage))
        return out

    def dsts(self) -> list[int]:
        """Buffered destinations, in the order of their oldest packet."""
        return list(dict.fromkeys(b.dst for b in self._q))

    def take(self, dst: int) -> list[Buffered]:
        """Remove and return the packets for ``dst`` in arrival order."""
        out = [b for b in self._q if b.dst == dst]
        if out:
            self._q = deque(b for b in self._q if b.dst != dst)
        return out

    def expire(self, now_ns: int) -> list[Buffered]:
        out: list[Buffered] = []
        while self._q and self._q[0].enq_ns + self.timeout_ns <= now_ns:
            out.append(self._q.popleft())
        return out

    def next_expiry_ns(self) -> int | None:
        return self._q[0].enq_ns + self.timeout_ns if self._q else None
