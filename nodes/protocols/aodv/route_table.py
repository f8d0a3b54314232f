"""The AODV routing table (RFC 3561 sections 2, 6.1, 6.2) with precursor lists.

Route entries hold absolute expiry times and are purged lazily on lookup (STYLE.md): a VALID
route whose lifetime has passed becomes INVALID and is kept DELETE_PERIOD more (section 6.11:
"the Lifetime field is updated to current time plus DELETE_PERIOD"), so that its hop count and
sequence number survive for the next discovery (section 6.4); an INVALID entry past that is
deleted.

Route states are an ``IntEnum`` with the allowed transitions as data (``TRANSITIONS``); the table's
``set_state`` rejects an illegal transition and logs ``old -> new``. Every change (including
creation, ``old=None``, and deletion, ``new=None``) is queued in ``changes`` for the core to report
at the ``on_route_state_change`` hook once the event is handled.

``GDWN`` is Klemm et al. 2004's "going down" state. The AODV core never enters it; an extension
sets it (``table.set_state(entry, RouteState.GDWN, now)``). The core forwards data on a GDWN route
but does not answer RREQs from it (Klemm: "rebroadcast instead of answering RREQs").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from .seqno import seq_diff


class RouteState(IntEnum):
    VALID = 1
    INVALID = 2
    REPAIRING = 3
    """Section 6.12 local repair in progress ("being repaired"): data is buffered."""
    GDWN = 4
    """Klemm 2004 "going down" (set only by an extension)."""


TRANSITIONS: Mapping[RouteState, frozenset[RouteState]] = {
    RouteState.VALID: frozenset({RouteState.INVALID, RouteState.REPAIRING, RouteState.GDWN}),
    RouteState.INVALID: frozenset({RouteState.VALID}),
    RouteState.REPAIRING: frozenset({RouteState.VALID, RouteState.INVALID}),
    RouteState.GDWN: frozenset({RouteState.VALID, RouteState.INVALID, RouteState.REPAIRING}),
}

FORWARDING_STATES: frozenset[RouteState] = frozenset({RouteState.VALID, RouteState.GDWN})
"""States in which a route carries data."""


class IllegalTransition(ValueError):
    pass


@dataclass(slots=True)
class RouteEntry:
    dst: int
    next_hop: int
    hop_count: int
    dest_seq_no: int
    valid_seq_no: bool
    expires_ns: int
    state: RouteState = RouteState.VALID
    precursors: set[int] = field(default_factory=set)

    @property
    def usable(self) -> bool:
        return self.state in FORWARDING_STATES

    def to_dict(self) -> dict[str, object]:
        return {
            "dst": self.dst,
            "next_hop": self.next_hop,
            "hop_count": self.hop_count,
            "dest_seq_no": self.dest_seq_no,
            "valid_seq_no": self.valid_seq_no,
            "state": self.state.name,
            "expires_s": self.expires_ns / 1e9,
            "precursors": sorted(self.precursors),
        }


def is_fresher(entry: RouteEntry | None, seq: int, hop_count: int) -> bool:
    """Section 6.2: should (seq, hop_count) -- a valid sequence number -- replace ``entry``?

    "The route is only updated if the new sequence number is either (i) higher than the
    destination sequence number in the route table, or (ii) the sequence numbers are equal, but
    the hop count (of the new information) plus one, is smaller than the existing hop count in
    the routing table, or (iii) the sequence number is unknown." Section 6.7 adds "the sequence
    numbers are the same, but the route is marked as inactive". ``hop_count`` here already counts
    the hop to the sender.
    """
    if entry is None or not entry.valid_seq_no:
        return True
    d = seq_diff(seq, entry.dest_seq_no)
    if d > 0:
        return True
    if d == 0:
        # A GDWN route (Klemm 2004, set only by an extension) is "going down": like an inactive
        # one, the same sequence number replaces it.
        return entry.state is not RouteState.VALID or hop_count < entry.hop_count
    return False


class RoutingTable:
    def __init__(self, delete_period_ns: int, log: logging.Logger | None = None) -> None:
        self.delete_period_ns = delete_period_ns
        self.log = log or logging.getLogger(__name__)
        self._routes: dict[int, RouteEntry] = {}
        self.changes: list[tuple[int, RouteState | None, RouteState | None]] = []
        self.down_hop_count: dict[int, int] = {}
        """Per destination, the hop count of its route when it last became INVALID (kept after
        the entry is deleted; ns-2's ``rt_last_hop_count``, set by rt_down)."""

    def __len__(self) -> int:
        return len(self._routes)

    def __iter__(self) -> Iterator[RouteEntry]:
        return iter(list(self._routes.values()))

    # ---------------------------------------------------------------- lookup (lazy purge)
    def lookup(self, dst: int, now_ns: int) -> RouteEntry | None:
        """The entry for ``dst`` in any state, after lazy expiry; None if absent or deleted."""
        e = self._routes.get(dst)
        if e is None or e.expires_ns > now_ns or e.state is RouteState.REPAIRING:
            return e
        if e.state is RouteState.INVALID:
            del self._routes[dst]
            self.changes.append((dst, e.state, None))
            self.log.debug("route %d deleted (DELETE_PERIOD over)", dst)
            return None
        # VALID or GDWN past its lifetime: section 6.11 "expired" -> invalid for DELETE_PERIOD
        self.set_state(e, RouteState.INVALID, now_ns)
        e.expires_ns = now_ns + self.delete_period_ns
        return e

    def usable(self, dst: int, now_ns: int) -> RouteEntry | None:
        """The entry for ``dst`` if it can carry data now (VALID or GDWN, not expired)."""
        e = self.lookup(dst, now_ns)
        return e if e is not None and e.usable else None

    def purge(self, now_ns: int) -> None:
        for dst in list(self._routes):
            self.lookup(dst, now_ns)

    def via(self, next_hop: int, now_ns: int) -> list[RouteEntry]:
        """Usable routes whose next hop is ``next_hop`` (the routes a link break affects)."""
        return [
            e
            for e in list(self._routes.values())
            if self.usable(e.dst, now_ns) is not None and e.next_hop == next_hop
        ]

    # ---------------------------------------------------------------- updates
    def add(self, entry: RouteEntry) -> RouteEntry:
        old = self._routes.get(entry.dst)
        self._routes[entry.dst] = entry
        self.changes.append((entry.dst, None if old is None else old.state, entry.state))
        self.log.debug(
            "route %d added: via %d, %d hops, %s",
            entry.dst,
            entry.next_hop,
            entry.hop_count,
            entry.state.name,
        )
        return entry

    def remove(self, dst: int) -> None:
        e = self._routes.pop(dst, None)
        if e is not None:
            self.changes.append((dst, e.state, None))

    def set_state(self, entry: RouteEntry, new: RouteState, now_ns: int) -> None:
        """Move ``entry`` to ``new``; an illegal transition raises ``IllegalTransition``."""
        old = entry.state
        if new is old:
            return
        if new not in TRANSITIONS[old]:
            raise IllegalTransition(f"route {entry.dst}: {old.name} -> {new.name} is not allowed")
        entry.state = new
        if new is RouteState.INVALID:
            self.down_hop_count[entry.dst] = entry.hop_count
        self.changes.append((entry.dst, old, new))
        self.log.debug("route %d: %s -> %s", entry.dst, old.name, new.name)

    def refresh(self, dst: int, now_ns: int, lifetime_ns: int) -> None:
        """Section 6.2: a used route's lifetime becomes no less than now + ``lifetime_ns``."""
        e = self._routes.get(dst)
        if e is not None and e.usable and e.expires_ns > now_ns:
            e.expires_ns = max(e.expires_ns, now_ns + lifetime_ns)

    def drain_changes(self) -> list[tuple[int, RouteState | None, RouteState | None]]:
        out, self.changes = self.changes, []
        return out
