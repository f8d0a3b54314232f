"""``dsr``: the Dynamic Source Routing protocol (RFC 4728) as a station-router core.

See ``docs/dsr.md``. ``create(ctx, config)`` builds :class:`DsrRouting` from the router config's
``protocol`` object: ``{"name": "dsr", "params": {...}}`` where ``params`` are the fields of
:class:`DsrParams` (unknown names are errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.core.protocol import NodeContext, params_from_dict
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.params import DsrParams

# Transitional: ``nodes.extensions`` (bead, elfn, epln) still import ``dsr.fastpath``, the former
# name of ``srcroute`` ("fastpath" is the router's native forwarding path, nodes/router/fastpath.py).
# Remove with those three imports once the typed-events branch (which rewrites them) is merged.
fastpath = srcroute

__all__ = ["DsrParams", "DsrRouting", "create"]


CORE = DsrRouting
"""The core class: ``nodes.protocols.core_class`` reads its ``HOOKS``."""


def create(ctx: NodeContext, config: Mapping[str, Any]) -> DsrRouting:
    extra = sorted(set(config) - {"name", "params"})
    if extra:
        raise ValueError(f"protocol: dsr takes only 'params', got {extra}")
    params = params_from_dict(DsrParams, config.get("params"), where="protocol.params")
    return DsrRouting(ctx, params)
