"""Routing protocol cores, by the name a scenario gives in ``routing.protocol``.

Each protocol module exposes ``create(ctx: NodeContext, config: Mapping) -> RoutingProtocol``
where ``config`` is the router config's ``protocol`` object (``name``, ``params``, and
protocol-specific keys such as static ``routes``). Modules are imported lazily so a station only
loads the protocol it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.protocols.profiles import resolve_params

PROTOCOLS: dict[str, str] = {
    "static": "nodes.protocols.static",
    "dsr": "nodes.protocols.dsr",
    "aodv": "nodes.protocols.aodv",
}


def create_protocol(ctx: NodeContext, config: Mapping[str, Any]) -> RoutingProtocol:
    name = config.get("name")
    if name not in PROTOCOLS:
        raise ValueError(f"protocol.name: unknown protocol {name!r}; known: {sorted(PROTOCOLS)}")
    module = importlib.import_module(PROTOCOLS[name])
    proto: RoutingProtocol = module.create(ctx, config)
    return proto


PROFILED: frozenset[str] = frozenset({"dsr", "aodv"})
"""The protocols with routing profiles (a ``params`` module with ``PARAMS_CLASS`` and ``PROFILES``)."""


def protocol_params_class(name: str) -> type[Any]:
    """The parameter dataclass of a protocol with profiles."""
    cls: type[Any] = importlib.import_module(f"{PROTOCOLS[name]}.params").PARAMS_CLASS
    return cls


def effective_params(
    name: str, profile: str, params: Mapping[str, Any] | None, where: str = "params"
) -> object | None:
    """The parameters protocol ``name`` runs under ``profile`` with ``params`` on top
    (``nodes.protocols.profiles.resolve_params``; ``ParamError`` naming ``where``), None for a
    protocol without profiles (static)."""
    if name not in PROFILED:
        return None
    module = importlib.import_module(f"{PROTOCOLS[name]}.params")
    resolved: object = resolve_params(module.PARAMS_CLASS, module.PROFILES, profile, params, where)
    return resolved


def core_class(name: str) -> type[RoutingProtocol]:
    """The core class of protocol ``name`` (its ``EMITS`` are the events extensions can subscribe to)."""
    core: type[RoutingProtocol] = importlib.import_module(PROTOCOLS[name]).CORE
    return core
