"""Duplicate RREQ detection by (Originator IP Address, RREQ ID) (RFC 3561 section 6.5).

Section 6.5: "the node checks to determine whether it has received a RREQ with the same
Originator IP Address and RREQ ID within at least the last PATH_DISCOVERY_TIME. If such a RREQ
has been received, the node silently discards the newly received RREQ." Section 6.3: "Before
broadcasting the RREQ, the originating node buffers the RREQ ID and the Originator IP address
(its own address) of the RREQ for PATH_DISCOVERY_TIME."

Every entry lives the same time, so insertion order is expiry order: a deque purged from the
front (ns-3's ``IdCache``, without its linear scan).
"""

from __future__ import annotations

from collections import deque


class IdCache:
    def __init__(self, lifetime_ns: int) -> None:
        self.lifetime_ns = lifetime_ns
        self._expiry: dict[tuple[int, int], int] = {}
        self._order: deque[tuple[int, tuple[int, int]]] = deque()

    def __len__(self) -> int:
        return len(self._expiry)

    def _purge(self, now_ns: int) -> None:
        order = self._order
        while order and order[0][0] <= now_ns:
            t, key = order.popleft()
            if self._expiry.get(key) == t:
                del self._expiry[key]

    def seen(self, orig: int, rreq_id: int, now_ns: int) -> bool:
        """True if (orig, rreq_id) was recorded less than the lifetime ago."""
        self._purge(now_ns)
        return (orig, rreq_id) in self._expiry

    def add(self, orig: int, rreq_id: int, now_ns: int) -> None:
        self._purge(now_ns)
        t = now_ns + self.lifetime_ns
        self._expiry[(orig, rreq_id)] = t
        self._order.append((t, (orig, rreq_id)))

    def check_and_add(self, orig: int, rreq_id: int, now_ns: int) -> bool:
        """Record (orig, rreq_id); return True if it was a duplicate (then nothing changes)."""
        if self.seen(orig, rreq_id, now_ns):
            return True
        self.add(orig, rreq_id, now_ns)
        return False
