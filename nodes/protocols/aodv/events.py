"""AODV's own cross-layer events (RFC 3561): those whose payload only AODV has. The events AODV
shares with DSR and static routing (``LinkFailure``, ``PacketDropped``, ``LocalDelivery``,
``DataForwarded``, ``RouteDiscoveryStarted``, ``RouteDiscoveryJoined``, ``NeighbourSignal``, ``MacOutcome``, ``TxFailure``)
are in ``nodes.core.hooks``; ``AodvRouting.EMITS`` lists both (docs/aodv.md "Events").
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.hooks import CrossLayerEvent

from .messages import Rerr, Rrep, Rreq
from .route_table import RouteState


@dataclass(slots=True)
class RreqDecision:
    """What the node does with a RREQ; :class:`AodvRouteRequest` subscribers may clear the flags."""

    reply: bool
    accept: bool = True
    forward: bool = True


@dataclass(slots=True)
class RrepDecision:
    accept: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class AodvRouteErrorReceived(CrossLayerEvent):
    """A RERR (section 6.11; ``rerr.unreachable``: the unreachable destinations and their
    sequence numbers) arrived from ``prev_hop``. A RERR with the 'G' (going down, Klemm 2004) flag
    is not an error: the core passes it to the subscribers only and changes no route."""

    rerr: Rerr
    prev_hop: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AodvRouteRequest(CrossLayerEvent):
    """A new (not duplicate) RREQ arrived from ``prev_hop``. ``decision`` is mutable:
    ``accept=False`` ignores the RREQ entirely (no reverse route, no rebroadcast), ``reply=False``
    makes an intermediate node rebroadcast instead of answering from its route (Klemm's GDWN),
    ``forward=False`` suppresses the rebroadcast. The destination itself always answers."""

    rreq: Rreq
    prev_hop: int
    decision: RreqDecision


@dataclass(frozen=True, slots=True, kw_only=True)
class AodvRouteReply(CrossLayerEvent):
    """A RREP (not a HELLO) arrived from ``prev_hop``; ``decision.accept=False`` ignores it."""

    rrep: Rrep
    prev_hop: int
    decision: RrepDecision


@dataclass(frozen=True, slots=True, kw_only=True)
class AodvRouteStateChange(CrossLayerEvent):
    """The route to ``dst`` changed state (``old=None``: created, ``new=None``: deleted), reported
    after the event that changed it is handled."""

    dst: int
    old: RouteState | None
    new: RouteState | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AodvIpForward(CrossLayerEvent):
    """A data packet is about to be sent to ``next_hop``; ``prev_hop`` is the neighbour it came
    from (None when this station originated it). ``packet`` is a ``bytearray``: a subscriber may
    modify it in place (also its length, by slice assignment; it must then fix the IP header,
    e.g. with ``nodes.core.ipv4.set_header_checksum``); what is in it after all subscribers ran is
    sent (Cohen's Route-control NEW flag)."""

    packet: bytearray
    prev_hop: int | None
    next_hop: int
