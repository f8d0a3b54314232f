"""``dsr``: the Dynamic Source Routing protocol (RFC 4728) as a station-router core.

See ``docs/dsr.md``. ``create(ctx, config)`` builds :class:`DsrRouting` from the router config's
``protocol`` object: ``{"name": "dsr", "profile": "ns2", "params": {...}}`` where ``profile`` is
a routing profile (``nodes.protocols.profiles``; default ns2) and ``params`` are fields of
:class:`DsrParams` set on top of it (unknown names are errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.core.protocol import NodeContext
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.params import PROFILES, DsrParams
from nodes.protocols.profiles import DEFAULT_PROFILE, resolve_params

__all__ = ["DsrParams", "DsrRouting", "create"]


CORE = DsrRouting
"""The core class: ``nodes.protocols.core_class`` reads its ``EMITS``."""


def create(ctx: NodeContext, config: Mapping[str, Any]) -> DsrRouting:
    extra = sorted(set(config) - {"name", "params", "profile"})
    if extra:
        raise ValueError(f"protocol: dsr takes only 'profile' and 'params', got {extra}")
    params = resolve_params(
        DsrParams, PROFILES, config.get("profile") or DEFAULT_PROFILE, config.get("params"), "protocol.params"
    )
    return DsrRouting(ctx, params)
