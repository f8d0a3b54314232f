"""Router counters written to ``sta<N>.counters.json`` (docs/interfaces.md section 4).

"Routing packets sent and forwarded by type" is the papers' packet overhead (Yu 2004 section 5:
routing packets sent and forwarded, including EPLN/BEAD/Update ROUTE ERRORs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Counters:
    routing_sent: Counter[str] = field(default_factory=Counter)
    routing_forwarded: Counter[str] = field(default_factory=Counter)
    routing_received: Counter[str] = field(default_factory=Counter)
    data_originated: int = 0
    data_forwarded: int = 0
    data_delivered: int = 0
    drops: Counter[str] = field(default_factory=Counter)
    malformed: Counter[str] = field(default_factory=Counter)
    mac: Counter[str] = field(default_factory=Counter)
    extra: Counter[str] = field(default_factory=Counter)
    samples: dict[str, list[float]] = field(default_factory=dict)

    def sample(self, name: str, value: float) -> None:
        """Record one observation (e.g. discovery latency in seconds)."""
        self.samples.setdefault(name, []).append(value)

    @property
    def routing_packets(self) -> int:
        return sum(self.routing_sent.values()) + sum(self.routing_forwarded.values())

    def to_dict(self) -> dict[str, Any]:
        def stats(v: list[float]) -> dict[str, float]:
            s = sorted(v)
            return {
                "n": len(s),
                "mean": sum(s) / len(s),
                "p50": s[len(s) // 2],
                "max": s[-1],
            }

        return {
            "routing_sent": dict(self.routing_sent),
            "routing_forwarded": dict(self.routing_forwarded),
            "routing_received": dict(self.routing_received),
            "routing_packets": self.routing_packets,
            "data_originated": self.data_originated,
            "data_forwarded": self.data_forwarded,
            "data_delivered": self.data_delivered,
            "drops": dict(self.drops),
            "malformed": dict(self.malformed),
            "mac": dict(self.mac),
            "extra": dict(self.extra),
            "samples": {k: stats(v) for k, v in self.samples.items() if v},
        }
