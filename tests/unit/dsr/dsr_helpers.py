"""Shared helpers for the DSR unit tests (virtual time, SimNetwork, seeded RNGs)."""

from __future__ import annotations

import dataclasses
import random
import struct
from collections.abc import Iterable
from typing import Any

from nodes.core import NS_PER_MS, NodeContext
from nodes.core.addr import station_ip_bytes
from nodes.core.hooks import CrossLayerEvent, EventClass
from nodes.core.ipv4 import checksum
from nodes.core.sim import SimNetwork
from nodes.protocols import effective_params
from nodes.protocols.dsr import DsrParams, DsrRouting, create
from nodes.protocols.dsr.options import DsrPacket, SourceRoute, parse


def udp(src: int, dst: int, payload: bytes = b"x" * 20, ttl: int = 64) -> bytes:
    """A UDP/IPv4 packet as the kernel would write it to the TUN (UDP checksum 0)."""
    body = struct.pack("!HHHH", 5000, 5001, 8 + len(payload), 0) + payload
    h = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(body),
            1,
            0,
            ttl,
            17,
            0,
            station_ip_bytes(src),
            station_ip_bytes(dst),
        )
    )
    h[10:12] = checksum(h).to_bytes(2, "big")
    return bytes(h) + body


def net(
    n: int,
    links: Iterable[tuple[int, int]],
    *,
    promiscuous: bool = False,
    seed: int = 1,
    profile: str = "legacy",
    **params: Any,
) -> SimNetwork:
    """A DSR network; the tests written before routing profiles play the ``legacy`` behaviour
    (tests/unit/dsr/test_dsr_ns2_profile.py plays ``ns2`` and ``rfc``)."""
    return SimNetwork(
        n,
        lambda ctx: create(ctx, {"name": "dsr", "profile": profile, "params": params}),
        list(links),
        seed=seed,
        promiscuous=promiscuous,
    )


def profile_params(profile: str, **overrides: Any) -> DsrParams:
    """The parameters of a routing profile, read from its table (``effective_params``), with
    ``overrides`` on top."""
    params = effective_params("dsr", profile, None)
    assert isinstance(params, DsrParams)
    return dataclasses.replace(params, **overrides)


def profile_net(
    profile: str, n: int, links: Iterable[tuple[int, int]], *, seed: int = 1, **overrides: Any
) -> SimNetwork:
    """A DSR network whose cores run ``profile``'s parameters (tests of the profiles)."""
    params = profile_params(profile, **overrides)
    return SimNetwork(n, lambda ctx: DsrRouting(ctx, params), list(links), seed=seed)


def profile_core(profile: str, station: int = 3, n: int = 10, seed: int = 7, **overrides: Any) -> DsrRouting:
    """One core in ``profile``, driven event by event."""
    ctx = NodeContext(station=station, n_stations=n, rng=random.Random(seed))
    return DsrRouting(ctx, profile_params(profile, **overrides))


def chain_links(n: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(1, n)]


def core(net_: SimNetwork, s: int) -> DsrRouting:
    proto = net_.nodes[s].runtime.protocol
    assert isinstance(proto, DsrRouting)
    return proto


def standalone(station: int = 3, n: int = 10, seed: int = 7, **params: Any) -> DsrRouting:
    ctx = NodeContext(station=station, n_stations=n, rng=random.Random(seed))
    return DsrRouting(ctx, DsrParams(**params))


def sent(net_: SimNetwork, kind_src: int | None = None) -> list[tuple[float, int, int, DsrPacket]]:
    """The trace as (ms, src, dst, parsed packet)."""
    out = []
    for t in net_.trace:
        if kind_src is None or t.src == kind_src:
            out.append((t.t_ns / NS_PER_MS, t.src, t.dst, parse(t.packet)))
    return out


def source_route(dp: DsrPacket) -> SourceRoute:
    sr = dp.find(SourceRoute)
    assert isinstance(sr, SourceRoute)
    return sr


def record_hooks(net_: SimNetwork, station: int, *events: EventClass) -> list[CrossLayerEvent]:
    """Every event of these classes the station's core emits, in order."""
    log: list[CrossLayerEvent] = []
    hooks = net_.nodes[station].ctx.hooks
    for cls in events:
        hooks.subscribe(cls, log.append)
    return log
