"""Messages per second (RFC 3561 RREQ_RATELIMIT, RERR_RATELIMIT), as a sliding one-second window.

Section 6.3: "An originating node SHOULD NOT originate more than RREQ_RATELIMIT RREQ messages
per second." Section 6.11: "A node should not generate more than RERR_RATELIMIT RERR messages
per second."
"""

from __future__ import annotations

from collections import deque

from nodes.core.clock import NS_PER_S


class RateLimiter:
    def __init__(self, per_second: int, window_ns: int = NS_PER_S) -> None:
        self.limit = per_second
        self.window_ns = window_ns
        self._sent: deque[int] = deque()

    def _purge(self, now_ns: int) -> None:
        while self._sent and self._sent[0] <= now_ns - self.window_ns:
            self._sent.popleft()

    def allow(self, now_ns: int) -> bool:
        """Record one message at ``now_ns`` if the limit allows it."""
        self._purge(now_ns)
        if len(self._sent) >= self.limit:
            return False
        self._sent.append(now_ns)
        return True

    def next_allowed_ns(self, now_ns: int) -> int:
        """The earliest time at which ``allow`` will succeed."""
        self._purge(now_ns)
        if len(self._sent) < self.limit:
            return now_ns
        return self._sent[0] + self.window_ns
