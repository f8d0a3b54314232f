"""``static``: fixed next hops from the scenario, used to test the substrate (issue 2).

Forwarding works on raw bytes (``nodes.core.ipv4``): the IPv4 TTL is decremented with an
incremental checksum update (RFC 1624) and the packet goes to the configured next hop. A failed
unicast (link-layer feedback from the medium) is reported as a ``LinkFailure`` event and the
packet is dropped; static routing never repairs.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, ClassVar

from nodes.core import ipv4
from nodes.core.addr import MAX_STATIONS, station_ip_int
from nodes.core.events import (
    Action,
    DeliverLocal,
    Drop,
    Event,
    Frame,
    FromAir,
    FromLocal,
    Send,
    TxStatus,
)
from nodes.core.hooks import DataForwarded, EventClass, LinkFailure, PacketDropped
from nodes.core.protocol import NodeContext, RoutingProtocol

_FIRST_STATION_IP = station_ip_int(1)
_LAST_STATION_IP = station_ip_int(MAX_STATIONS)
_DST_UNPACK = struct.Struct("!I").unpack_from
_TTL_PROTO_CSUM = struct.Struct("!BBH")


def forward_copy(packet: bytes) -> bytes | None:
    """A copy of ``packet`` with the TTL decremented and the header checksum updated, or None when
    the TTL is already 0 or 1 (RFC 791: the packet must be destroyed).

    The same result as ``nodes.core.ipv4.decrement_ttl`` on a copy, in one ``unpack_from`` and one
    ``pack_into``. RFC 1624 eqn. 3 with m = TTL << 8 | proto and m' = m - 0x100 gives
    HC' = ~(~HC + ~m + m') = ~(~HC + 0xFEFF), whatever the TTL and protocol; one fold suffices
    because ~HC + 0xFEFF < 0x1FEFF.
    """
    ttl, proto, hc = _TTL_PROTO_CSUM.unpack_from(packet, 8)
    if ttl <= 1:
        return None
    total = (hc ^ 0xFFFF) + 0xFEFF
    total = (total & 0xFFFF) + (total >> 16)
    buf = bytearray(packet)
    _TTL_PROTO_CSUM.pack_into(buf, 8, ttl - 1, proto, total ^ 0xFFFF)
    return bytes(buf)


class StaticRouting(RoutingProtocol):
    """Cross-layer events: ``LinkFailure`` (the failed frame; nothing is taken from the queue),
    ``PacketDropped`` and ``DataForwarded`` (a packet received from a neighbour goes on)."""

    name = "static"
    EMITS: ClassVar[frozenset[EventClass]] = frozenset({LinkFailure, PacketDropped, DataForwarded})

    def __init__(self, ctx: NodeContext, routes: Mapping[int, int]) -> None:
        super().__init__(ctx)
        self.routes: dict[int, int] = dict(routes)

    def next_hop(self, dst: int) -> int:
        """The configured next hop, or the destination itself (one hop) when none is given."""
        return self.routes.get(dst, dst)

    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        if isinstance(event, FromAir):
            if event.overheard:
                return []
            return self._route(event.packet, event.src, now_ns, local=False)
        if isinstance(event, FromLocal):
            return self._route(event.packet, None, now_ns, local=True)
        if isinstance(event, TxStatus) and not event.ok:
            f = event.frame
            acts: list[Action] = [Drop(f.packet, "link_failure")]
            hooks = self.ctx.hooks
            if hooks.has_subscribers(LinkFailure):
                acts += hooks.emit(
                    LinkFailure(now_ns=now_ns, next_hop=f.next_hop, frame=f, queued=(), packets=(f.packet,))
                )
            if hooks.has_subscribers(PacketDropped):
                acts += hooks.emit(PacketDropped(now_ns=now_ns, packet=f.packet, reason="link_failure"))
            return acts
        return []

    def _route(self, packet: bytes, prev: int | None, now_ns: int, *, local: bool) -> list[Action]:
        c = self.ctx.counters
        try:
            ipv4.check(packet)
        except ipv4.MalformedPacket as exc:
            c.malformed[str(exc)] += 1
            return [Drop(packet, "malformed")]
        # ip_to_station(ipv4.dst(packet)) without the copies: the address is in 10.0.0.0/16 and
        # names a station (1..MAX_STATIONS)
        addr = _DST_UNPACK(packet, 16)[0]
        if not _FIRST_STATION_IP <= addr <= _LAST_STATION_IP:
            return [Drop(packet, "not_manet_address")]
        dst = addr & 0xFFFF
        if dst == self.ctx.station:
            if not local:
                c.data_delivered += 1
            return [DeliverLocal(packet)]
        if local:
            c.data_originated += 1
        else:
            fwd = forward_copy(packet)
            if fwd is None:
                return [Drop(packet, "ttl_expired")]
            packet = fwd
            c.data_forwarded += 1
        nh = self.routes.get(dst, dst)  # next_hop(dst), without the call
        acts: list[Action] = [Send(Frame(packet, nh))]
        if prev is not None and self.ctx.hooks.has_subscribers(DataForwarded):
            acts += self.ctx.hooks.emit(
                DataForwarded(now_ns=now_ns, packet=packet, prev_hop=prev, next_hop=nh)
            )
        return acts


CORE = StaticRouting
"""The core class: ``nodes.protocols.core_class`` reads its ``EMITS``."""


def create(ctx: NodeContext, config: Mapping[str, Any]) -> StaticRouting:
    if config.get("params"):
        raise ValueError(
            f"protocol.params: static routing takes no parameters, got {sorted(config['params'])}"
        )
    raw = config.get("routes") or {}
    routes = {int(k): int(v) for k, v in raw.items()}
    return StaticRouting(ctx, routes)
