"""The DSR Route Request Table (RFC 4728 section 4.3).

Two halves, as in the RFC:

- per *target* this node is discovering: when the last Route Request went out, how many were
  sent, the current backoff ("the interval between successive Route Discoveries for this target
  SHOULD be doubled, up to a maximum of MaxRequestPeriod", section 8.2), and the discovery's start
  (for the discovery latency counter);
- per *initiator* whose Route Requests this node has seen: the last RequestTableIds
  (identification, target) pairs, for duplicate suppression ("a node MUST discard the Route
  Request if ... the (initiator, identification) pair is found", section 8.2.2), with at most
  RequestTableSize initiators kept (least recently used out).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass


@dataclass(slots=True)
class Discovery:
    target: int
    started_ns: int
    tries: int = 0
    """Propagating Route Requests sent so far."""
    backoff_ns: int = 0
    last_sent_ns: int = 0
    last_id: int = 0
    nonprop_pending: bool = False
    salvage_only: bool = False
    """Started for a packet this node salvages (``salvage_request``): non-propagating requests
    only, until a packet of this node's own joins."""
    cycle_started_ns: int = 0
    """``request_backoff = ns2_cycles``: when the current request cycle began (``last_rt_req``)."""


class RequestTable:
    def __init__(self, size: int, ids: int) -> None:
        self.size = size
        self.ids = ids
        self.discoveries: dict[int, Discovery] = {}
        self._seen: OrderedDict[int, deque[tuple[int, int]]] = OrderedDict()

    # ---- targets this node is discovering
    def discovery(self, target: int) -> Discovery | None:
        return self.discoveries.get(target)

    def start(self, target: int, now_ns: int) -> Discovery:
        d = Discovery(target, now_ns)
        self.discoveries[target] = d
        return d

    def finish(self, target: int) -> Discovery | None:
        return self.discoveries.pop(target, None)

    # ---- duplicate detection
    def seen(self, initiator: int, rreq_id: int, target: int) -> bool:
        """True if (initiator, rreq_id, target) was seen before; else remember it."""
        q = self._seen.get(initiator)
        if q is None:
            q = deque(maxlen=self.ids)
            self._seen[initiator] = q
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(initiator)
            if (rreq_id, target) in q:
                return True
        q.append((rreq_id, target))
        return False
