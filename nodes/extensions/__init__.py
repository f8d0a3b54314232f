"""Cross-layer extensions, attached to a protocol core's typed events (STYLE.md,
``nodes.core.hooks``).

Each extension module exposes ``NEEDS`` (a :class:`~nodes.core.hooks.Needs`: the event classes
it subscribes to, the core API it calls, the shared services it uses, whether it needs the
endpoint agent), ``PARAMS`` (its frozen parameter dataclass) and ``attach(ctx: NodeContext,
protocol: RoutingProtocol, params: PARAMS) -> object``, which subscribes and returns the
extension object. Which extensions run is configuration (scenario ``routing.extensions``); any
combination from the papers can be composed. Which protocol an extension works with is derived
here from ``NEEDS`` and the cores' ``EMITS`` (:func:`compatible_protocols`,
:func:`check_protocol`); nothing else lists it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, TypeVar

from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, ParamError, RoutingProtocol, params_from_dict
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


def _module(name: str) -> ModuleType:
    return importlib.import_module(EXTENSIONS[name])


def needs_of(name: str) -> Needs:
    """The extension's declaration with its services' needs merged in (imports its module)."""
    needs: Needs = _module(name).NEEDS
    return needs.flattened()


def _why_not(name: str, core: type[RoutingProtocol]) -> list[str]:
    return needs_of(name).missing(core, core.EMITS)


def compatible_protocols(name: str) -> frozenset[str]:
    """The routing protocols whose core emits every event the extension needs and offers the
    core API it calls."""
    return frozenset(p for p in PROTOCOLS if not _why_not(name, core_class(p)))


def check_protocol(name: str, protocol: RoutingProtocol) -> None:
    """A clear error when ``protocol`` cannot carry extension ``name`` (and why)."""
    why = _why_not(name, type(protocol))
    if why:
        compatible = compatible_protocols(name)
        allowed = " or ".join(p for p in PROTOCOLS if p in compatible) or "no protocol"
        raise ParamError(f"extension {name!r} works over {allowed}, not {protocol.name!r} ({'; '.join(why)})")


C = TypeVar("C", bound=RoutingProtocol)


def core_api(protocol: RoutingProtocol, cls: type[C]) -> C:
    """``protocol`` as the core API class an extension's ``NEEDS.core`` names (checked by
    :func:`check_protocol` before ``attach``; a direct caller gets the same clear error)."""
    if not isinstance(protocol, cls):
        raise ParamError(f"{type(protocol).__name__} is not a {cls.__name__}")
    return protocol


def attach_extensions(
    ctx: NodeContext,
    protocol: RoutingProtocol,
    specs: Sequence[str | Mapping[str, Any]],
) -> list[object]:
    """Attach each extension; a spec is a name or ``{"name": ..., "params": {...}}``. Its
    parameters are checked first, then the protocol against its ``NEEDS``."""
    attached: list[object] = []
    for spec in specs:
        name = spec if isinstance(spec, str) else spec.get("name")
        raw = {} if isinstance(spec, str) else dict(spec.get("params") or {})
        if not isinstance(name, str) or name not in EXTENSIONS:
            raise ValueError(f"extensions: unknown extension {name!r}; known: {sorted(EXTENSIONS)}")
        module = _module(name)
        params = params_from_dict(module.PARAMS, raw, f"extensions.{name}")
        check_protocol(name, protocol)
        attached.append(module.attach(ctx, protocol, params))
    return attached
