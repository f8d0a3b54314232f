"""AODV (RFC 3561) for the station router: ``create(ctx, config) -> AodvRouting``.

``config`` is the router config's ``protocol`` object: ``{"name": "aodv", "params": {...}}``;
``params`` names fields of :class:`AodvParams` (unknown names are errors). See docs/aodv.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.core.protocol import NodeContext, params_from_dict

from .events import RrepDecision, RreqDecision
from .messages import AODV_PORT, MalformedMessage, MsgType, Rerr, Rrep, RrepAck, Rreq, decode
from .params import AodvParams
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
    params = params_from_dict(AodvParams, config.get("params"), where="protocol.params")
    return AodvRouting(ctx, params)
