"""The Gratuitous Route Reply Table (RFC 4728 sections 4.4 and 8.1.5).

"The node searches its Gratuitous Route Reply Table for an entry describing a gratuitous Route
Reply earlier sent by this node, for which the original sender of the packet triggering the
gratuitous Route Reply and the transmitting node from which this node overheard that packet ...
both match ... If such an entry is found ... the node SHOULD NOT perform automatic route
shortening." Entries live GratReplyHoldoff (absolute expiry, purged lazily).
"""

from __future__ import annotations


class GratReplyTable:
    def __init__(self, holdoff_ns: int) -> None:
        self.holdoff_ns = holdoff_ns
        self._t: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self._t)

    def check_and_add(self, source: int, transmitter: int, now_ns: int) -> bool:
        """True (and an entry is created) if no live entry exists for this pair."""
        key = (source, transmitter)
        exp = self._t.get(key)
        if exp is not None and exp > now_ns:
            return False
        if len(self._t) > 64:
            self._t = {k: t for k, t in self._t.items() if t > now_ns}
        self._t[key] = now_ns + self.holdoff_ns
        return True
