"""Named hooks where cross-layer extensions attach (STYLE.md: "protocol code never says
``if epln_enabled:``; the extension subscribes to the hook").

A protocol declares the hook names it emits (``RoutingProtocol.HOOKS``); subscribing to an unknown
name is an error, so a typo cannot silently disable an extension. A subscriber receives keyword
arguments documented by the emitting protocol and may return actions, which the protocol returns
together with its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from nodes.core.events import Action

HookFn = Callable[..., "list[Action] | None"]


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
