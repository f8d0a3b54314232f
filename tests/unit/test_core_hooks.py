"""Hooks: declared names only, subscribers' actions are collected."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.core.events import Action, Drop
from nodes.core.hooks import Hooks, UnknownHook


def test_subscribe_to_unknown_hook_raises() -> None:
    h = Hooks(["on_link_failure"])
    with pytest.raises(UnknownHook):
        h.subscribe("on_link_falure", lambda **kw: None)


def test_emit_undeclared_hook_raises() -> None:
    with pytest.raises(UnknownHook):
        Hooks().emit("nope")


def test_emit_collects_actions_in_subscription_order() -> None:
    h = Hooks()
    h.declare("on_packet_dropped")
    calls: list[dict[str, Any]] = []

    def first(**kw: Any) -> list[Action]:
        calls.append(kw)
        return [Drop(b"a", "x")]

    def second(**kw: Any) -> None:
        calls.append(kw)

    def third(**kw: Any) -> list[Action]:
        return [Drop(b"b", "y")]

    assert not h.has_subscribers("on_packet_dropped")
    for fn in (first, second, third):
        h.subscribe("on_packet_dropped", fn)
    assert h.has_subscribers("on_packet_dropped")
    out = h.emit("on_packet_dropped", packet=b"p", reason="r")
    assert out == [Drop(b"a", "x"), Drop(b"b", "y")]
    assert calls == [{"packet": b"p", "reason": "r"}] * 2
    assert "on_packet_dropped" in h.names


def test_emit_without_subscribers_is_empty() -> None:
    assert Hooks(["x"]).emit("x", a=1) == []
