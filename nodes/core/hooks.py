"""Cross-layer events as types, and the hooks where extensions attach to them (STYLE.md: "protocol
code never says ``if epln_enabled:``; the extension subscribes").

Like ns-3's ``Neighbors`` TX-error callback, a protocol core announces what happens in it (a link
broke, a packet was dropped, a route error arrived, ...) as one frozen dataclass per event, a
subclass of :class:`CrossLayerEvent`. Where DSR and AODV (and static routing) see the same event
the class and its fields are the same, defined here (:class:`LinkFailure`, :class:`PacketDropped`,
...); where the payload differs the class is the protocol's own (``nodes.protocols.dsr.events``:
DSR's ROUTE ERROR with its salvage details and the options after it; ``nodes.protocols.aodv.events``:
AODV's RERR with its unreachable destinations).

A core declares the classes it emits (``RoutingProtocol.EMITS``); :meth:`Hooks.subscribe` to a
class the core does not emit and :meth:`Hooks.emit` of an undeclared one raise
:class:`UndeclaredEvent`, so a typo or a wrong protocol cannot silently disable an extension.
``subscribe(LinkFailure, fn)`` is typed: ``fn`` receives a ``LinkFailure`` and may return actions,
which the core returns together with its own.

An extension declares what it needs (:class:`Needs`: events, the endpoint agent, a core API,
another extension's shared service); the compatibility table, the registry's attach check and the
orchestrator's choice to run the endpoint agent are derived from ``EMITS`` and ``Needs``
(``nodes.extensions``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, TypeVar

from nodes.core.events import Action, Frame


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossLayerEvent:
    """Base of every cross-layer event: when it happened (the core's ``now_ns``)."""

    now_ns: int


E = TypeVar("E", bound=CrossLayerEvent)
Handler = Callable[[E], "list[Action] | None"]
"""What :meth:`Hooks.subscribe` takes for event class ``E``."""
EventClass = type[CrossLayerEvent]


# ------------------------------------------------------------------------------ shared events
# The same class and fields in every core that emits it (docs/extensions.md, "Events").


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkFailure(CrossLayerEvent):
    """The MAC could not deliver ``frame`` to ``next_hop`` (RFC 4728 section 8.3, RFC 3561 section
    6.11 case (i)); ``frame`` is None when the break was found otherwise (an AODV HELLO timeout).
    ``queued`` are the interface-queue frames with the same next hop, taken out of the queue (the
    core then salvages, re-routes, re-buffers or drops each); ``packets`` are the IP packets of
    ``frame`` and ``queued`` in that order, without the core's routing header (DSR's)."""

    next_hop: int
    frame: Frame | None
    queued: tuple[Frame, ...]
    packets: tuple[bytes, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketDropped(CrossLayerEvent):
    """The core discards a data (DSR: or routing) packet. ``packet`` is the packet as the core
    held it (DSR: with its DSR header). ``route`` is the full source route it carried (DSR), None
    when it had none or the core has none. Reasons: ``link_failure``, ``salvage_limit``,
    ``send_buffer_timeout``, ``send_buffer_full``, ``no_route``, ``ttl_expired``, ``ifq_full``."""

    packet: bytes
    reason: str
    route: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalDelivery(CrossLayerEvent):
    """A data packet for this station goes up to the kernel (``packet``: the IP packet, routing
    header removed), received from neighbour ``prev_hop``."""

    packet: bytes
    prev_hop: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DataForwarded(CrossLayerEvent):
    """This station forwards a data packet it received from ``prev_hop`` to ``next_hop``;
    ``packet`` are the bytes that leave (DSR: with the DSR header). Read-only; AODV's mutable
    variant is ``AodvIpForward``."""

    packet: bytes
    prev_hop: int
    next_hop: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteDiscoveryStarted(CrossLayerEvent):
    """This station starts a route discovery for ``dst`` because of ``packet`` (the IP packet it
    originated and found no route for), before the first route request leaves (ELFN's first
    trigger, Yu 2004 s3.2)."""

    dst: int
    packet: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteDiscoveryJoined(CrossLayerEvent):
    """A ``packet`` this station originated for ``dst`` waits for the route discovery this
    station already has under way (buffered, no new request): the TCP sender is still in the
    discovery it initiated (ELFN, Yu 2004 s3.2; docs/fidelity.md "ELFN freeze on salvaging / own
    link failure")."""

    dst: int
    packet: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class NeighbourSignal(CrossLayerEvent):
    """A frame from ``neighbour`` was received (also overheard), with its signal (Klemm 2004's
    neighbour table)."""

    neighbour: int
    rssi_dbm: float
    snr_db: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MacOutcome(CrossLayerEvent):
    """The MAC's TX status of ``frame`` (every unicast and broadcast)."""

    frame: Frame
    ok: bool
    rts_attempts: int
    data_attempts: int


@dataclass(slots=True)
class TxFailureDecision:
    """What the core does with a failed unicast; :class:`TxFailure` subscribers may clear it."""

    link_break: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class TxFailure(CrossLayerEvent):
    """A unicast ``frame`` failed, before the core treats it as a link break. ``decision`` is
    mutable: ``link_break=False`` keeps the link (the subscriber took the frame over, e.g. Klemm's
    Persistent MAC or Reactive LM sending it again)."""

    frame: Frame
    rts_attempts: int
    data_attempts: int
    decision: TxFailureDecision


# ------------------------------------------------------------------------------ hooks


class UndeclaredEvent(LookupError):
    """Subscribing to or emitting an event class the core does not declare in ``EMITS``."""


class Hooks:
    """The subscribers of one station, per event class; only declared classes are accepted."""

    def __init__(self, emitted: Iterable[EventClass] = ()) -> None:
        self._subs: dict[EventClass, list[Callable[[CrossLayerEvent], list[Action] | None]]] = {
            cls: [] for cls in emitted
        }
        self._subscribed: set[EventClass] = set()
        self.has_subscribers: Callable[[EventClass], bool] = self._subscribed.__contains__
        """``has_subscribers(cls)``: does anyone listen to ``cls``? (A core asks before it builds
        an event, on every packet: the set's own ``__contains__`` costs a fraction of a Python
        call, docs/benchmarks.md.)"""

    def declare(self, *emitted: EventClass) -> None:
        for cls in emitted:
            if not (isinstance(cls, type) and issubclass(cls, CrossLayerEvent)):
                raise TypeError(f"{cls!r} is not a CrossLayerEvent class")
            self._subs.setdefault(cls, [])

    @property
    def emitted(self) -> frozenset[EventClass]:
        return frozenset(self._subs)

    def emits(self, cls: EventClass) -> bool:
        return cls in self._subs

    def subscribe(self, cls: type[E], fn: Handler[E]) -> None:
        subs = self._subs.get(cls)
        if subs is None:
            known = ", ".join(sorted(c.__name__ for c in self._subs)) or "none"
            raise UndeclaredEvent(f"the routing core does not emit {cls.__name__}; it emits: {known}")
        subs.append(fn)  # type: ignore[arg-type]  # called only with events of class cls
        self._subscribed.add(cls)

    def emit(self, event: CrossLayerEvent) -> list[Action]:
        """Call every subscriber of ``type(event)`` in subscription order; collect their actions."""
        subs = self._subs.get(type(event))
        if subs is None:
            raise UndeclaredEvent(f"emitting {type(event).__name__}, which the core did not declare")
        out: list[Action] = []
        for fn in subs:
            res = fn(event)
            if res:
                out.extend(res)
        return out


# ------------------------------------------------------------------------------ declarations


class Service(Protocol):
    """State shared by the extensions of one station (EPLN's loss notifier, Klemm's neighbour
    table): a class that declares its own :class:`Needs`. It lives in ``ctx.services`` (one per
    class); its typed accessor (e.g. ``LossNotifier.of(ctx, protocol)``) creates and subscribes it
    the first time an extension asks."""

    NEEDS: ClassVar[Needs]


@dataclass(frozen=True, slots=True)
class Needs:
    """What a cross-layer extension (or a shared service) needs from its station (docs/extensions.md,
    "Declarations").

    The one owner of "which extension works with which protocol": a core declares the event
    classes it emits (``RoutingProtocol.EMITS``), an extension declares these needs, and the
    scenario's compatibility table, the router's attach check and the orchestrator's choice to run
    the endpoint agent are all derived from the two (``nodes.extensions.compatible_protocols``).
    """

    events: frozenset[EventClass] = frozenset()
    """Every one of these must be emitted by the core."""
    one_of: tuple[frozenset[EventClass], ...] = ()
    """Alternatives: besides ``events``, the core emits every class of at least one set (ELFN
    reads DSR's ROUTE ERROR or AODV's RERR). The extension subscribes to the set the core emits."""
    endpoint: bool = False
    """It acts on kernel TCP through the endpoint agent (``ctx.endpoint``, nodes.tcpctl), so the
    orchestrator runs the agent on every station when a scenario turns the extension on."""
    core: type[object] | None = None
    """The core's extension API it calls (a class the core must be, e.g. ``DsrRouting`` for
    ``send_options``); None when events are enough."""
    services: tuple[type[Service], ...] = ()
    """Shared services (:class:`Service` classes) it uses; their own ``NEEDS`` count as its."""
    rewrites_ip_id: bool = False
    """It rewrites the IPv4 Identification of packets it forwards (route control's route-number and
    NEW flag), so that the kernel's ID does not name a packet along its path: testbed.explain then
    follows TCP packets by their TCP identity."""

    def flattened(self) -> Needs:
        """These needs with every service's needs merged in (recursively)."""
        events, one_of, endpoint, core = set(self.events), list(self.one_of), self.endpoint, self.core
        rewrites_ip_id = self.rewrites_ip_id
        for svc in self.services:
            sub: Needs = svc.NEEDS.flattened()
            events |= sub.events
            one_of += [alt for alt in sub.one_of if alt not in one_of]
            endpoint = endpoint or sub.endpoint
            rewrites_ip_id = rewrites_ip_id or sub.rewrites_ip_id
            if sub.core is not None:
                if core is not None and not (issubclass(core, sub.core) or issubclass(sub.core, core)):
                    raise TypeError(f"services need incompatible cores {core.__name__}, {sub.core.__name__}")
                core = sub.core if core is None or issubclass(sub.core, core) else core
        return Needs(frozenset(events), tuple(one_of), endpoint, core, rewrites_ip_id=rewrites_ip_id)

    def missing(self, core_cls: type[object], emitted: frozenset[EventClass]) -> list[str]:
        """Why a core of class ``core_cls`` emitting ``emitted`` cannot carry this (empty: it can)."""
        n = self.flattened()
        why = [f"it does not emit {c.__name__}" for c in sorted(n.events - emitted, key=lambda c: c.__name__)]
        if n.one_of and not any(alt <= emitted for alt in n.one_of):
            alts = " or ".join("{" + ", ".join(sorted(c.__name__ for c in alt)) + "}" for alt in n.one_of)
            why.append(f"it emits none of {alts}")
        if n.core is not None and not issubclass(core_cls, n.core):
            why.append(f"it is not a {n.core.__name__}")
        return why

    def chosen(self, emitted: frozenset[EventClass]) -> frozenset[EventClass]:
        """The first ``one_of`` set the core emits (empty when there are no alternatives)."""
        return next((alt for alt in self.one_of if alt <= emitted), frozenset())


S = TypeVar("S")


@dataclass(slots=True)
class Services:
    """The shared services of one station, one instance per class (typed accessors)."""

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
