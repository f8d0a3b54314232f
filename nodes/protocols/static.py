"""``static``: fixed next hops from the scenario, used to test the substrate (issue 2).

Forwarding works on raw bytes (``nodes.core.ipv4``): the IPv4 TTL is decremented with an
incremental checksum update (RFC 1624) and the packet goes to the configured next hop. A failed
unicast (link-layer feedback from the medium) is reported at the ``on_link_failure`` hook and the
packet is dropped; static routing never repairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.core import ipv4
from nodes.core.addr import ip_to_station
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
from nodes.core.protocol import NodeContext, RoutingProtocol


class StaticRouting(RoutingProtocol):
    """Hooks: ``on_link_failure(frame, now_ns)``, ``on_packet_dropped(packet, reason, now_ns)``,
    ``on_forward(packet, prev_hop, next_hop, now_ns)``."""

    name = "static"
    HOOKS = frozenset({"on_link_failure", "on_packet_dropped", "on_forward"})

    def __init__(self, ctx: NodeContext, routes: Mapping[int, int]) -> None:
        super().__init__(ctx)
        self.routes: dict[int, int] = dict(routes)

    def next_hop(self, dst: int) -> int:
        """The configured next hop, or the destination itself (one hop) when none is given."""
        return self.routes.get(dst, dst)

    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        if isinstance(event, FromLocal):
            return self._route(event.packet, None, now_ns, local=True)
        if isinstance(event, FromAir):
            if event.overheard:
                return []
            return self._route(event.packet, event.src, now_ns, local=False)
        if isinstance(event, TxStatus) and not event.ok:
            acts: list[Action] = [Drop(event.frame.packet, "link_failure")]
            acts += self.ctx.hooks.emit("on_link_failure", frame=event.frame, now_ns=now_ns)
            acts += self.ctx.hooks.emit(
                "on_packet_dropped", packet=event.frame.packet, reason="link_failure", now_ns=now_ns
            )
            return acts
        return []

    def _route(self, packet: bytes, prev: int | None, now_ns: int, *, local: bool) -> list[Action]:
        c = self.ctx.counters
        try:
            ipv4.check(packet)
        except ipv4.MalformedPacket as exc:
            c.malformed[str(exc)] += 1
            return [Drop(packet, "malformed")]
        dst = ip_to_station(ipv4.dst(packet))
        if dst is None:
            return [Drop(packet, "not_manet_address")]
        if dst == self.ctx.station:
            if not local:
                c.data_delivered += 1
            return [DeliverLocal(packet)]
        if local:
            c.data_originated += 1
        else:
            buf = bytearray(packet)
            if not ipv4.decrement_ttl(buf):
                return [Drop(packet, "ttl_expired")]
            packet = bytes(buf)
            c.data_forwarded += 1
        nh = self.next_hop(dst)
        acts: list[Action] = [Send(Frame(packet, nh))]
        if self.ctx.hooks.has_subscribers("on_forward"):
            acts += self.ctx.hooks.emit("on_forward", packet=packet, prev_hop=prev, next_hop=nh, now_ns=now_ns)
        return acts


def create(ctx: NodeContext, config: Mapping[str, Any]) -> StaticRouting:
    if config.get("params"):
        raise ValueError(f"protocol.params: static routing takes no parameters, got {sorted(config['params'])}")
    raw = config.get("routes") or {}
    routes = {int(k): int(v) for k, v in raw.items()}
    return StaticRouting(ctx, routes)
