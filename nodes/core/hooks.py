"""Named hooks where cross-layer extensions attach (STYLE.md: "protocol code never says
``if epln_enabled:``; the extension subscribes to the hook").

A protocol declares the hook names it emits (``RoutingProtocol.HOOKS``); subscribing to an unknown
name is an error, so a typo cannot silently disable an extension. A subscriber receives keyword
arguments documented by the emitting protocol and may return actions, which the protocol returns
together with its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nodes.core.events import Action

HookFn = Callable[..., "list[Action] | None"]
S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Needs:
    """What a cross-layer extension needs from its station (docs/extensions.md, "Declarations").

    The one owner of "which extension works with which protocol": a protocol core declares the
    hooks it emits (``RoutingProtocol.HOOKS``), an extension declares these needs, and the
    scenario's compatibility table, the router's attach check and the orchestrator's choice to run
    the endpoint agent are all derived from the two (``nodes.extensions.compatible_protocols``).
    """

    hooks: tuple[frozenset[str], ...] = (frozenset(),)
    """Alternatives: the extension works over a core that emits every hook of at least one set
    (ELFN subscribes to DSR's ROUTE ERROR hooks or to AODV's RERR hook)."""
    endpoint: bool = False
    """It acts on kernel TCP through the endpoint agent (``ctx.endpoint``, nodes.tcpctl), so the
    orchestrator runs the agent on every station when a scenario turns the extension on."""

    def works_with(self, emitted: frozenset[str]) -> bool:
        return any(alt <= emitted for alt in self.hooks)


@dataclass(slots=True)
class Services:
    """State shared by extensions of one station, keyed by its type (EPLN's loss notifier, which
    BEAD also feeds; the Klemm neighbour table of the three LM extensions)."""

    _by_type: dict[type, object] = field(default_factory=dict)

    def get(self, cls: type[S]) -> S | None:
        obj = self._by_type.get(cls)
        return obj if isinstance(obj, cls) else None

    def get_or_create(self, cls: type[S], make: Callable[[], S]) -> S:
        obj = self.get(cls)
        if obj is None:
            obj = make()
            self._by_type[cls] = obj
        return obj


class UnknownHook(KeyError):
    pass


class Hooks:
    def __init__(self, names: Iterable[str] = ()) -> None:
        self._subs: dict[str, list[HookFn]] = {n: [] for n in names}

    def declare(self, *names: str) -> None:
        for n in names:
            self._subs.setdefault(n, [])

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._subs)

    def subscribe(self, name: str, fn: HookFn) -> None:
        if name not in self._subs:
            raise UnknownHook(f"no hook named {name!r}; known: {sorted(self._subs)}")
        self._subs[name].append(fn)

    def has_subscribers(self, name: str) -> bool:
        return bool(self._subs.get(name))

    def emit(self, name: str, **kwargs: Any) -> list[Action]:
        """Call every subscriber of ``name``; collect the actions they return."""
        subs = self._subs.get(name)
        if subs is None:
            raise UnknownHook(f"emitting undeclared hook {name!r}")
        out: list[Action] = []
        for fn in subs:
            res = fn(**kwargs)
            if res:
                out.extend(res)
        return out
