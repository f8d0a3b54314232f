"""AODV (RFC 3561) for the station router: ``create(ctx, config) -> AodvRouting``.

``config`` is the router config's ``protocol`` object: ``{"name": "aodv", "profile": "ns2",
"params": {...}}``; ``profile`` is a routing profile (``nodes.protocols.profiles``; default ns2),
``params`` names fields of :class:`AodvParams` set on top of it (unknown names are errors). See
docs/aodv.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.core.protocol import NodeContext
from nodes.protocols.profiles import DEFAULT_PROFILE, resolve_params

from .events import RrepDecision, RreqDecision
from .messages import AODV_PORT, MalformedMessage, MsgType, Rerr, Rrep, RrepAck, Rreq, decode
from .params import PROFILES, AodvParams
from .protocol import TIMER_KEYS, AodvRouting
from .route_table import TRANSITIONS, IllegalTransition, RouteEntry, RouteState, RoutingTable

__all__ = [
    "AODV_PORT",
    "TIMER_KEYS",
    "TRANSITIONS",
    "AodvParams",
    "AodvRouting",
    "IllegalTransition",
    "MalformedMessage",
    "MsgType",
    "Rerr",
    "Rrep",
    "RrepAck",
    "RrepDecision",
    "Rreq",
    "RreqDecision",
    "RouteEntry",
    "RouteState",
    "RoutingTable",
    "create",
    "decode",
]


CORE = AodvRouting
"""The core class: ``nodes.protocols.core_class`` reads its ``EMITS``."""


def create(ctx: NodeContext, config: Mapping[str, Any]) -> AodvRouting:
    extra = sorted(set(config) - {"name", "params", "profile"})
    if extra:
        raise ValueError(f"protocol: aodv takes only 'profile' and 'params', got {extra}")
    params = resolve_params(
        AodvParams,
        PROFILES,
        config.get("profile") or DEFAULT_PROFILE,
        config.get("params"),
        "protocol.params",
    )
    return AodvRouting(ctx, params)
