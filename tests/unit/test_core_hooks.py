"""Cross-layer events as types: declared classes only, typed subscribers, actions collected, and
the compatibility derived from a core's EMITS and an extension's NEEDS."""

from __future__ import annotations

import random
import textwrap
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from nodes.core.events import Action, Drop, Event
from nodes.core.hooks import (
    CrossLayerEvent,
    Hooks,
    LinkFailure,
    LocalDelivery,
    Needs,
    PacketDropped,
    UndeclaredEvent,
)
from nodes.core.protocol import NodeContext, ParamError, RoutingProtocol
from nodes.extensions import check_protocol
from nodes.protocols.aodv.events import AodvRouteErrorReceived
from nodes.protocols.dsr.events import DsrRouteErrorReceived

ROOT = Path(__file__).resolve().parents[2]


def test_subscribe_to_an_event_the_core_does_not_emit_raises() -> None:
    h = Hooks([LinkFailure])
    with pytest.raises(UndeclaredEvent, match="does not emit PacketDropped; it emits: LinkFailure"):
        h.subscribe(PacketDropped, lambda ev: None)


def test_emit_of_an_undeclared_event_raises() -> None:
    with pytest.raises(UndeclaredEvent, match="emitting LocalDelivery, which the core did not declare"):
        Hooks([LinkFailure]).emit(LocalDelivery(now_ns=0, packet=b"", prev_hop=1))


def test_declare_takes_event_classes_only() -> None:
    with pytest.raises(TypeError, match="not a CrossLayerEvent class"):
        Hooks().declare(Drop)  # type: ignore[arg-type]


def test_events_are_frozen_and_keyword_only() -> None:
    ev = PacketDropped(now_ns=5, packet=b"p", reason="no_route")
    with pytest.raises(FrozenInstanceError):
        ev.reason = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        PacketDropped(5, b"p", "no_route")  # type: ignore[misc]


def test_emit_hands_the_event_and_collects_actions_in_subscription_order() -> None:
    h = Hooks()
    h.declare(PacketDropped)
    seen: list[PacketDropped] = []

    def first(ev: PacketDropped) -> list[Action]:
        seen.append(ev)
        return [Drop(b"a", "x")]

    def second(ev: PacketDropped) -> None:
        seen.append(ev)

    def third(ev: PacketDropped) -> list[Action]:
        return [Drop(b"b", ev.reason)]

    assert not h.has_subscribers(PacketDropped)
    for fn in (first, second, third):
        h.subscribe(PacketDropped, fn)
    assert h.has_subscribers(PacketDropped)
    ev = PacketDropped(now_ns=7, packet=b"p", reason="r")
    assert h.emit(ev) == [Drop(b"a", "x"), Drop(b"b", "r")]
    assert seen == [ev, ev]
    assert h.emitted == frozenset({PacketDropped}) and h.emits(PacketDropped)


def test_emit_without_subscribers_is_empty() -> None:
    assert (
        Hooks([LinkFailure]).emit(LinkFailure(now_ns=0, next_hop=2, frame=None, queued=(), packets=())) == []
    )


def test_a_wrongly_typed_subscriber_is_a_mypy_error(tmp_path: Path) -> None:
    """``subscribe(E, fn)`` is typed: fn must take an ``E`` (mypy --strict, as ``make lint``)."""
    mypy_api = pytest.importorskip("mypy.api")
    src = tmp_path / "wrong.py"
    src.write_text(
        textwrap.dedent(
            """
            from nodes.core.hooks import Hooks, LinkFailure, PacketDropped

            def on_drop(ev: PacketDropped) -> None: ...
            def on_fail(ev: LinkFailure) -> None: ...

            h = Hooks([LinkFailure, PacketDropped])
            h.subscribe(PacketDropped, on_drop)
            h.subscribe(LinkFailure, on_fail)
            h.subscribe(LinkFailure, on_drop)
            """
        )
    )
    out, _err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", "--cache-dir=/dev/null", str(src)]
    )
    assert status == 1
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "wrong.py:10:" in errors[0]
    assert '"Callable[[PacketDropped], None]"; expected "Callable[[LinkFailure]' in errors[0]


# ------------------------------------------------------------------------------ derivation


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe(CrossLayerEvent):
    hops: int


class _Core(RoutingProtocol):
    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        return []


class EmitsLinkFailure(_Core):
    name = "a"
    EMITS = frozenset({LinkFailure, PacketDropped, DsrRouteErrorReceived})


class EmitsRerr(_Core):
    name = "b"
    EMITS = frozenset({LinkFailure, AodvRouteErrorReceived})


class EmitsLinkFailureToo(EmitsLinkFailure):
    name = "c"


class Shared:
    NEEDS: ClassVar[Needs] = Needs(events=frozenset({PacketDropped}))


class SharedOnCore:
    NEEDS: ClassVar[Needs] = Needs(core=EmitsLinkFailure, services=(Shared,))


@pytest.mark.parametrize(
    ("needs", "a", "b"),
    [
        (Needs(), [], []),
        (Needs(events=frozenset({LinkFailure})), [], []),
        (Needs(events=frozenset({Probe})), ["it does not emit Probe"], ["it does not emit Probe"]),
        (
            Needs(one_of=(frozenset({DsrRouteErrorReceived}), frozenset({AodvRouteErrorReceived}))),
            [],
            [],
        ),
        (
            Needs(one_of=(frozenset({DsrRouteErrorReceived, Probe}),)),
            ["it emits none of {DsrRouteErrorReceived, Probe}"],
            ["it emits none of {DsrRouteErrorReceived, Probe}"],
        ),
        (Needs(services=(Shared,)), [], ["it does not emit PacketDropped"]),
        (
            Needs(services=(SharedOnCore,)),
            [],
            ["it does not emit PacketDropped", "it is not a EmitsLinkFailure"],
        ),
    ],
    ids=[
        "nothing",
        "shared-event",
        "unknown-event",
        "either-rerr",
        "no-alternative",
        "service",
        "service-core",
    ],
)
def test_needs_are_checked_against_emits_and_the_core_class(needs: Needs, a: list[str], b: list[str]) -> None:
    assert needs.missing(EmitsLinkFailure, EmitsLinkFailure.EMITS) == a
    assert needs.missing(EmitsRerr, EmitsRerr.EMITS) == b
    assert needs.missing(EmitsLinkFailureToo, EmitsLinkFailureToo.EMITS) == a  # a subclass is one


def test_flattened_merges_services_recursively() -> None:
    n = Needs(endpoint=False, services=(SharedOnCore,)).flattened()
    assert n.events == {PacketDropped} and n.core is EmitsLinkFailure and n.services == ()


def test_check_protocol_names_the_extension_the_protocols_and_why() -> None:
    from nodes.protocols.static import StaticRouting

    proto = StaticRouting(NodeContext(1, 2, random.Random(1)), {})
    with pytest.raises(ParamError) as err:
        check_protocol("epln", proto)
    msg = str(err.value)
    assert "extension 'epln' works over dsr, not 'static'" in msg
    assert "it does not emit DsrRouteErrorReceived" in msg and "it is not a DsrRouting" in msg


def test_the_cores_declare_what_they_emit() -> None:
    """Each core's ctx.hooks accepts exactly its EMITS."""
    from nodes.protocols import PROTOCOLS, create_protocol

    configs = {"static": {"name": "static"}, "dsr": {"name": "dsr"}, "aodv": {"name": "aodv"}}
    for name in PROTOCOLS:
        ctx = NodeContext(1, 3, random.Random(1))
        proto = create_protocol(ctx, configs[name])
        assert ctx.hooks.emitted == type(proto).EMITS and LinkFailure in ctx.hooks.emitted
