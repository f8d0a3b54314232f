"""The DSR Maintenance Buffer for network-layer acknowledgements (RFC 4728 section 8.3.3).

Only used when ``DsrParams.network_acks`` is on (links without MAC feedback). "When a node
originates or forwards a packet and has no other mechanism of acknowledgement available to
determine reachability of the next-hop node ... that node SHOULD request a network-layer
acknowledgement from that next-hop node." An entry is retransmitted up to MaxMaintRexmt times;
then the link is treated as broken, exactly as a failed TX status. At most RexmtBufferSize
entries are kept (the oldest is forgotten).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from nodes.core.events import Frame


@dataclass(slots=True)
class Pending:
    ack_id: int
    frame: Frame
    retries: int = 0


class MaintenanceBuffer:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._p: OrderedDict[int, Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._p)

    def add(self, ack_id: int, frame: Frame) -> Pending | None:
        """Track ``frame``; return the entry forgotten when the buffer was full."""
        self._p[ack_id] = Pending(ack_id, frame)
        if len(self._p) > self.capacity:
            return self._p.popitem(last=False)[1]
        return None

    def get(self, ack_id: int) -> Pending | None:
        return self._p.get(ack_id)

    def pop(self, ack_id: int) -> Pending | None:
        return self._p.pop(ack_id, None)

    def remove_next_hop(self, next_hop: int) -> list[Pending]:
        out = [p for p in self._p.values() if p.frame.next_hop == next_hop]
        for p in out:
            del self._p[p.ack_id]
        return out
