"""Cross-layer extensions, attached to a protocol core's named hooks (STYLE.md).

Each extension module exposes ``NEEDS`` (a :class:`~nodes.core.hooks.Needs`: the hooks it
subscribes to, whether it needs the endpoint agent) and ``attach(ctx: NodeContext, protocol:
RoutingProtocol, params: Mapping) -> object`` which subscribes to hooks and returns the extension
object. Which extensions run is configuration (scenario ``routing.extensions``); any combination
from the papers can be composed. Which protocol an extension works with is derived here from
``NEEDS`` and the cores' ``HOOKS`` (:func:`compatible_protocols`); nothing else lists it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, ParamError, RoutingProtocol
from nodes.protocols import PROTOCOLS, core_class

EXTENSIONS: dict[str, str] = {
    "abra": "nodes.extensions.abra",  # Ghanem 2008 s3
    "fixed_rto": "nodes.extensions.fixed_rto",  # Dyer & Boppana 2001
    "elfn": "nodes.extensions.elfn",  # Holland & Vaidya; Yu 2004 s3.1/3.2
    "atcp": "nodes.extensions.atcp",  # Liu & Singh 2001
    "epln": "nodes.extensions.epln",  # Yu 2004 s4.2-4.3.5, Algorithm 2
    "bead": "nodes.extensions.bead",  # Yu 2004 s4.3.2-4.3.3, Algorithm 1
    "dsr_update": "nodes.extensions.dsr_update",  # Yu 2004 s2.2 (distributed cache update)
    "persistent_mac": "nodes.extensions.persistent_mac",  # Klemm 2004 s4.1
    "proactive_lm": "nodes.extensions.proactive_lm",  # Klemm 2004 s4.2.1, s4.2.3 (GDWN)
    "reactive_lm": "nodes.extensions.reactive_lm",  # Klemm 2004 s4.2.2, s4.2.3 (GDWN)
    "route_control": "nodes.extensions.route_control",  # Cohen & Levin s3-4 (Table I, SR-5)
}
"""name -> module (docs/extensions.md)."""


def needs_of(name: str) -> Needs:
    """The extension's declaration (imports its module)."""
    needs: Needs = importlib.import_module(EXTENSIONS[name]).NEEDS
    return needs


def compatible_protocols(name: str) -> frozenset[str]:
    """The routing protocols whose core emits every hook the extension needs."""
    needs = needs_of(name)
    return frozenset(p for p in PROTOCOLS if needs.works_with(core_class(p).HOOKS))


def check_protocol(name: str, protocol: RoutingProtocol) -> None:
    """A clear error when ``protocol`` does not emit the hooks extension ``name`` needs."""
    if not needs_of(name).works_with(protocol.HOOKS):
        compatible = compatible_protocols(name)
        allowed = " or ".join(p for p in PROTOCOLS if p in compatible)
        raise ParamError(f"extension {name!r} works over {allowed}, not {protocol.name!r}")


def attach_extensions(
    ctx: NodeContext,
    protocol: RoutingProtocol,
    specs: Sequence[str | Mapping[str, Any]],
) -> list[object]:
    """Attach each extension; a spec is a name or ``{"name": ..., "params": {...}}``."""
    attached: list[object] = []
    for spec in specs:
        name = spec if isinstance(spec, str) else spec.get("name")
        params = {} if isinstance(spec, str) else dict(spec.get("params") or {})
        if name not in EXTENSIONS:
            raise ValueError(f"extensions: unknown extension {name!r}; known: {sorted(EXTENSIONS)}")
        module = importlib.import_module(EXTENSIONS[name])
        attached.append(module.attach(ctx, protocol, params))
    return attached
