"""DSR's own cross-layer events (RFC 4728): those whose payload only DSR has. The events DSR
shares with AODV and static routing (``LinkFailure``, ``PacketDropped``, ``LocalDelivery``,
``DataForwarded``, ``RouteDiscoveryStarted``, ``RouteDiscoveryJoined``) are in ``nodes.core.hooks``; ``DsrRouting.EMITS``
lists both (docs/dsr.md "Events").
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.hooks import CrossLayerEvent
from nodes.protocols.dsr.options import DsrOption, RouteError

Path = tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrRouteErrorSent(CrossLayerEvent):
    """A ROUTE ERROR (section 8.3.4; ``rerr`` with its ``salvage`` count) is about to leave for
    ``dst`` because the link ``link`` broke. ``packets`` are the packets lost or salvaged that
    triggered it. ``extra_options`` is the list of options the ROUTE ERROR will carry after it:
    a subscriber appends its own (Yu 2004's ``conn_list``, the ELFN option).

    ``optional``: a ROUTE ERROR DSR itself would not send (``link_failure_rerrs = failed_packet``,
    ns-2's ``xmitFailed``: the source of packets that only waited in the interface queue); it
    leaves only if a subscriber appends an option, for the notifications that tell every source
    (Yu 2004 s4.3.1: "For the lost packets that have different source nodes, the node sends one
    notification to each source")."""

    rerr: RouteError
    dst: int
    extra_options: list[DsrOption]
    packets: tuple[bytes, ...]
    link: tuple[int, int]
    optional: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrRouteErrorReceived(CrossLayerEvent):
    """A packet carrying ``rerr`` was received, forwarded or ``overheard``; ``following`` are the
    options after it (a ``conn_list`` from another node, a nested ROUTE ERROR); ``for_me`` when
    this station is the error's destination (section 8.3.5)."""

    rerr: RouteError
    following: tuple[DsrOption, ...]
    packet: bytes
    for_me: bool
    overheard: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrPacketSalvaged(CrossLayerEvent):
    """``packet`` (the new bytes) leaves over ``new_route`` after meeting a broken link on
    ``old_route`` (section 8.3.6; ``salvage``: its new Salvage count)."""

    packet: bytes
    old_route: Path
    new_route: Path
    salvage: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrCacheInsert(CrossLayerEvent):
    """``route`` entered the route cache (``cache``: primary/secondary/link)."""

    route: Path
    cache: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrCacheRemove(CrossLayerEvent):
    """``route`` left the cache (``reason``: evicted/expired/link_broken)."""

    route: Path
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrCacheUse(CrossLayerEvent):
    """A cache lookup for ``dst`` found ``route``."""

    dst: int
    route: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrCacheMiss(CrossLayerEvent):
    """A cache lookup for ``dst`` found nothing."""

    dst: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrPacketOverheard(CrossLayerEvent):
    """Promiscuous reception of a frame from ``src`` for ``dst``."""

    packet: bytes
    src: int
    dst: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrRouteSent(CrossLayerEvent):
    """This node sent ``next_hop`` a packet carrying the full path ``route`` (a source route it
    originated, forwarded or salvaged, or the route in a Route Reply; ``kind``: data/rrep/...), so
    ``next_hop`` may now cache its links (Yu 2004 s2.2's cache table)."""

    route: Path
    next_hop: int
    kind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DsrControlForwarded(CrossLayerEvent):
    """A routing packet (``kind``) is forwarded; ``packet`` is the mutable ``bytearray`` about to
    leave: a subscriber may change option bytes in place, keeping the length (BEAD's ``ack_sent``,
    Yu 2004 s4.3.2)."""

    packet: bytearray
    kind: str
    prev_hop: int
    next_hop: int
