"""Deterministic random streams derived from a run seed and a label.

Every consumer (random placement, each station's random-waypoint walk, ...) gets its own
``random.Random`` whose seed is a hash of ``(seed, labels...)``. Adding a station or a consumer
never shifts another's stream, and nothing uses the module-level ``random`` state.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, *labels: str | int) -> int:
    """A 64-bit seed from ``seed`` and ``labels`` (stable across Python versions and platforms)."""
    text = "/".join([str(seed), *(str(label) for label in labels)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def derive_rng(seed: int, *labels: str | int) -> random.Random:
    """An independent ``random.Random`` for the stream named by ``labels``."""
    return random.Random(derive_seed(seed, *labels))


STATION_RNG_STRIDE = 1_000_003
"""Station ``s`` of a run seeded ``seed`` draws from ``random.Random(seed * stride + s)`` (a prime
above any station count, so that two (seed, station) pairs of nearby seeds never share a stream)."""


def station_rng(seed: int, station: int) -> random.Random:
    """A routing core's RNG (``NodeContext.rng``): the same in the router and in the virtual-time
    simulator ``nodes.core.sim``, so that a simulated run draws what the real one draws."""
    return random.Random(seed * STATION_RNG_STRIDE + station)
