"""Per-hop packet loss above the MAC: a station discards a received frame with a fixed probability.

Cohen & Levin (route control, section V, Fig. 6/7) vary "the average loss rate per hop" between
0 and 2 % and count the RTOs that result: losses the transport must repair, so losses that the
802.11 MAC's retransmissions do not hide. The medium's per-link ``loss``/``ber`` act on each
transmission attempt, which the MAC repairs (a 2 % frame error rate leaves 0.02^7 after the
retry limit). This is the other kind: a frame that arrived, was acknowledged by the MAC, and is
lost between the MAC and IP, each hop independently, like an ns-2 error model between the link
layer and routing. docs/fidelity.md has the row.

Every frame addressed to the station (unicast to it, or broadcast) is subject to it, data and
routing alike; overheard frames (promiscuous mode) are not, they were never the station's to lose.
The draws come from their own stream (``derive_rng(seed, "hop_loss", station)``), so a run with
``hop_loss`` 0 draws nothing and its other streams are the same as before.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from topologies.seeding import derive_rng

HOP_LOSS_DROP = "hop_loss"
"""The drop reason in the counters and the per-packet trace."""


@dataclass
class HopLoss:
    """Discard each frame received with probability ``probability`` (0 < p <= 1)."""

    probability: float
    rng: random.Random = field(repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.probability <= 1.0:
            raise ValueError(f"hop_loss: must be in (0, 1], got {self.probability}")

    @classmethod
    def for_station(cls, probability: float, seed: int, station: int) -> HopLoss | None:
        """The station's loss process, or None when ``probability`` is 0 (nothing drawn)."""
        if probability == 0.0:
            return None
        return cls(probability, derive_rng(seed, "hop_loss", station))

    def lose(self) -> bool:
        """One draw: is this frame lost?"""
        return self.rng.random() < self.probability
