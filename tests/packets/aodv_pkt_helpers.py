"""A bare AODV core for the packet tests."""

from __future__ import annotations

import random

from nodes.core.protocol import NodeContext
from nodes.protocols.aodv import AodvRouting, create


def make_core(station: int) -> AodvRouting:
    ctx = NodeContext(station=station, n_stations=10, rng=random.Random(station))
    return create(ctx, {"name": "aodv", "params": {}})
