"""Helpers for the AODV unit tests: a core driven directly, and control packets to feed it."""

from __future__ import annotations

import random
from typing import Any

from scapy.layers.inet import IP, UDP

from nodes.core.addr import station_ip, station_ip_int
from nodes.core.events import Action, Frame, FromAir, Send, SetTimer
from nodes.core.protocol import NodeContext
from nodes.protocols.aodv import AodvParams, AodvRouting, create, decode
from nodes.protocols.aodv.messages import Message
from nodes.protocols.aodv.wire import LIMITED_BROADCAST, build

BCAST_IP = LIMITED_BROADCAST


def ip(s: int) -> int:
    return station_ip_int(s)


def core(station: int = 1, n: int = 10, profile: str = "legacy", **params: Any) -> AodvRouting:
    """A core of ``profile`` (the tests written before profiles test ``legacy``, the dataclass
    defaults) with ``params`` on top."""
    params.setdefault("max_broadcast_jitter", 0.0)
    ctx = NodeContext(station=station, n_stations=n, rng=random.Random(station))
    return create(ctx, {"name": "aodv", "profile": profile, "params": params})


def data(src: int, dst: int, payload: bytes = b"x" * 10, ttl: int = 64) -> bytes:
    return bytes(
        IP(src=station_ip(src), dst=station_ip(dst), ttl=ttl) / UDP(sport=5000, dport=5001) / payload
    )


def control(msg: Message, src: int, dst_ip: int = BCAST_IP, ttl: int = 1) -> bytes:
    return build(ip(src), dst_ip, ttl, msg.encode())


def air(msg: Message, src: int, to: int | None = None, ttl: int = 1, **kw: Any) -> FromAir:
    """A control message from neighbour ``src`` (broadcast, or unicast to station ``to``)."""
    dst_ip = BCAST_IP if to is None else ip(to)
    return FromAir(control(msg, src, dst_ip, ttl), src, 0xFFFF_FFFF if to is None else to, **kw)


def sends(actions: list[Action]) -> list[Send]:
    return [a for a in actions if isinstance(a, Send)]


def sent_msgs(actions: list[Action]) -> list[tuple[Frame, int, Message]]:
    """(frame, IP TTL, decoded AODV message) of each control frame sent."""
    out = []
    for s in sends(actions):
        if s.frame.control:
            p = s.frame.packet
            out.append((s.frame, p[8], decode(p[28:])))
    return out


def timers(actions: list[Action]) -> list[SetTimer]:
    return [a for a in actions if isinstance(a, SetTimer)]


def params(**kw: Any) -> AodvParams:
    return AodvParams(**kw)
