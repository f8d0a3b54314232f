"""The seam every routing protocol core implements, and what it is given.

A core is a sans-I/O state machine (STYLE.md): ``on_event(event, now_ns) -> list[Action]``. It
never reads a clock, opens a socket or uses module-level ``random``: the clock time comes with
each event, randomness from ``ctx.rng``, and the interface queue, hooks and counters from the
``NodeContext``. Parameters are a frozen dataclass per protocol (``Params``), built from the
scenario's ``routing.params`` dict by :func:`params_from_dict`, which rejects unknown names.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from nodes.core.addr import station_ip_bytes
from nodes.core.counters import Counters
from nodes.core.events import Action, Event
from nodes.core.hooks import EventClass, Hooks, Services
from nodes.core.ifq import InterfaceQueue

if TYPE_CHECKING:  # the agent's API type only; nodes.core never imports nodes.tcpctl at run time
    from nodes.tcpctl.api import TcpControl

P = TypeVar("P")


@dataclass(slots=True)
class NodeContext:
    """Everything a core may touch besides its own state."""

    station: int
    n_stations: int
    rng: random.Random
    ifq: InterfaceQueue = field(default_factory=InterfaceQueue)
    hooks: Hooks = field(default_factory=Hooks)
    counters: Counters = field(default_factory=Counters)
    promiscuous: bool = False
    endpoint: TcpControl | None = None
    """The endpoint agent (nodes.tcpctl) when one runs: extensions call its API (freeze, thaw...);
    an extension whose ``NEEDS.endpoint`` is true gets it with ``nodes.extensions.endpoint_of``."""
    services: Services = field(default_factory=Services)
    """State extensions of this station share, one per class (EPLN's ``LossNotifier``, the Klemm
    ``KlemmStation``), each reached through its class's typed accessor (``LossNotifier.of``)."""
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("nodes"))

    @property
    def ip(self) -> bytes:
        return station_ip_bytes(self.station)


class ParamError(ValueError):
    pass


def params_from_dict(cls: type[P], values: Mapping[str, Any] | None, where: str = "params") -> P:
    """Build a frozen parameter dataclass, naming any unknown or ill-typed field."""
    values = dict(values or {})
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - names)
    if unknown:
        raise ParamError(f"{where}: unknown parameter(s) {unknown}; known: {sorted(names)}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise ParamError(f"{where}: {exc}") from exc


class RoutingProtocol(ABC):
    """Base class of protocol cores.

    ``EMITS`` are the cross-layer event classes the core emits (``nodes.core.hooks``; extensions
    subscribe to them, and which extension works with which core is derived from them). ``name``
    is the scenario's ``routing.protocol`` value.
    """

    name: ClassVar[str] = ""
    EMITS: ClassVar[frozenset[EventClass]] = frozenset()

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        ctx.hooks.declare(*self.EMITS)

    def start(self, now_ns: int) -> list[Action]:
        """Called once before the first event (e.g. to arm periodic timers)."""
        return []

    @abstractmethod
    def on_event(self, event: Event, now_ns: int) -> list[Action]: ...

    def ip_packet(self, packet: bytes) -> bytes:
        """The IP datagram as its source sent it, from a copy this core holds (a ``PacketDropped``
        packet): the same bytes unless the core adds a header of its own (DSR's options header)."""
        return packet

    def state(self) -> dict[str, Any]:
        """A JSON-able view of the routing state (route table/cache) for the CLI and results."""
        return {}
