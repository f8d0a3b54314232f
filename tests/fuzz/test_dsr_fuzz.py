"""Fuzzing the DSR core through the real NodeRuntime: random and mutated DSR frames must never
crash it; the ones that are not well-formed DSR are counted as malformed and dropped.

``DSR_FUZZ_N`` (default 100,000, the issue's figure) sets the number of frames.
"""

from __future__ import annotations

import os
import random
import time

from nodes.core import NS_PER_MS, NodeContext, TxStatus
from nodes.core.events import Frame, FromAir, FromLocal
from nodes.core.runtime import NodeRuntime
from nodes.protocols.dsr import DsrParams, DsrRouting
from nodes.protocols.dsr.options import (
    Ack,
    AckRequest,
    MalformedDsr,
    Pad1,
    PadN,
    RawOption,
    RouteError,
    RouteReply,
    RouteRequest,
    SourceRoute,
    build,
    ip_header,
    parse,
)
from nodes.protocols.dsr.srcroute import add_source_route

N = int(os.environ.get("DSR_FUZZ_N", "100000"))
ME = 3


class _IO:
    def __init__(self) -> None:
        self.sent = 0
        self.delivered = 0

    def transmit(self, frame: Frame) -> None:
        self.sent += 1

    def deliver_local(self, packet: bytes) -> None:
        self.delivered += 1

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
        return None


def corpus() -> list[bytes]:
    udp = ip_header(1, 5, 17, 16) + b"\x13\x88\x13\x89\x00\x10\x00\x00" + b"A" * 8
    return [
        add_source_route(udp, (2, 3, 4)),
        build(2, 5, [SourceRoute((3, 4), 2, 1), Pad1()], next_header=17, payload=b"\0" * 8),
        build(1, None, [RouteRequest(7, 5, (2,))], ttl=30),
        build(1, None, [RouteError(6, 1, 7), RouteRequest(8, 3, (2,))], ttl=30),
        build(5, 1, [SourceRoute((4, 3, 2), 2), RouteReply((2, 3, 4, 5))]),
        build(4, 1, [SourceRoute((3, 2), 2), RouteError(4, 1, 5, salvage=2), RouteError(2, 4, 9), PadN(3)]),
        build(2, 3, [SourceRoute((), 0), AckRequest(5)]),
        build(2, 3, [Ack(5, 2, 3)]),
        build(2, 5, [RawOption(17, b"xyz"), SourceRoute((3, 4), 2)], next_header=6, payload=b"\0" * 20),
    ]


def mutate(rng: random.Random, pkt: bytes) -> bytes:
    b = bytearray(pkt)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 2:
            del b[rng.randrange(len(b) + 1) :]
        elif op == 3:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif len(b) >= 24:  # keep IP lengths consistent so the DSR body is what is wrong
            b[2:4] = len(b).to_bytes(2, "big")
            b[rng.randrange(20, len(b))] = rng.randrange(256)
    return bytes(b)


def random_frame(rng: random.Random, seeds: list[bytes]) -> bytes:
    r = rng.random()
    if r < 0.2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if r < 0.35:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(48)))
        return ip_header(rng.randint(1, 6), rng.choice([None, ME, 5]), 48, len(body)) + body
    return mutate(rng, rng.choice(seeds))


def test_fuzz_dsr_core_never_crashes() -> None:
    rng = random.Random(20240517)
    ctx = NodeContext(station=ME, n_stations=8, rng=random.Random(1), promiscuous=True)
    proto = DsrRouting(ctx, DsrParams(network_acks=False))
    io = _IO()
    rt = NodeRuntime(ctx, proto, io)
    rt.start(0)
    seeds = corpus()
    expected_malformed = 0
    now = 0
    t0 = time.monotonic()
    for i in range(N):
        pkt = random_frame(rng, seeds)
        overheard = rng.random() < 0.1
        try:
            parse(pkt)
        except MalformedDsr:
            expected_malformed += 1
        rt.handle(FromAir(pkt, rng.randint(1, 6), ME if not overheard else 5, overheard=overheard), now)
        if rt.mac_busy is not None:
            rt.tx_done(TxStatus(rt.mac_busy, rng.random() < 0.7), now)
        if i % 50 == 0:
            rt.handle(FromLocal(ip_header(ME, rng.randint(1, 8), 17, 8) + b"\0" * 8), now)
        now += NS_PER_MS
        rt.fire_due(now)
    elapsed = time.monotonic() - t0
    c = ctx.counters
    # every frame that is not well-formed DSR was counted as malformed (other checks add more)
    assert sum(c.malformed.values()) >= expected_malformed
    assert c.drops["malformed"] + c.drops["unknown_option"] >= expected_malformed * 0.9
    assert expected_malformed > N // 2
    print(f"{N} frames in {elapsed:.1f} s; malformed {sum(c.malformed.values())}, drops {dict(c.drops)}")
