"""Fuzzing: 100,000 random and mutated AODV messages delivered to an AODV core through the real
NodeRuntime must not crash it; each one is either processed (``routing_received``) or counted as
malformed and dropped. Timers run and data flows meanwhile, so retries, repairs and link breaks
are exercised on the fuzzed state too."""

from __future__ import annotations

import random
from typing import Any

import pytest

from nodes.core.addr import station_ip_int
from nodes.core.clock import NS_PER_MS
from nodes.core.events import Frame, FromAir, FromLocal, TxStatus
from nodes.core.ifq import InterfaceQueue
from nodes.core.protocol import NodeContext
from nodes.core.runtime import NodeRuntime
from nodes.protocols.aodv import AodvRouting, RouteState, create
from nodes.protocols.aodv.messages import Rerr, Rrep, RrepAck, Rreq
from nodes.protocols.aodv.wire import LIMITED_BROADCAST, build

ME = 7
N_STATIONS = 20


class _IO:
    def __init__(self) -> None:
        self.outstanding: Frame | None = None
        self.sent = 0
        self.delivered = 0

    def transmit(self, frame: Frame) -> None:
        self.outstanding = frame
        self.sent += 1

    def deliver_local(self, packet: bytes) -> None:
        self.delivered += 1

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
        pass


def _addr(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.8:
        return station_ip_int(rng.randint(1, N_STATIONS))
    if r < 0.9:
        return rng.getrandbits(32)
    return rng.choice([0, 0xFFFFFFFF, station_ip_int(ME), 0x0A00FFFF])


def _seq(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, rng.getrandbits(32), 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, rng.randint(0, 50)])


def _valid(rng: random.Random) -> bytes:
    t = rng.randint(1, 4)
    b = rng.random
    if t == 1:
        return Rreq(
            rng.choice([rng.getrandbits(32), rng.randint(0, 30)]),
            _addr(rng),
            _seq(rng),
            _addr(rng),
            _seq(rng),
            rng.randint(0, 255),
            b() < 0.1,
            b() < 0.1,
            b() < 0.3,
            b() < 0.2,
            b() < 0.5,
        ).encode()
    if t == 2:
        return Rrep(
            _addr(rng),
            _seq(rng),
            _addr(rng),
            rng.choice([0, 1, 3000, 11200, rng.getrandbits(32)]),
            rng.randint(0, 255),
            b() < 0.1,
            b() < 0.3,
            rng.getrandbits(5),
        ).encode()
    if t == 3:
        return Rerr(tuple((_addr(rng), _seq(rng)) for _ in range(rng.randint(1, 6))), b() < 0.2).encode()
    return RrepAck().encode()


def _mutate(rng: random.Random, msg: bytes) -> bytes:
    m = bytearray(msg)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if op == 0 and m:
            m[rng.randrange(len(m))] = rng.getrandbits(8)
        elif op == 1 and m:
            del m[rng.randrange(len(m)) :]
        elif op == 2:
            m += rng.randbytes(rng.randint(1, 16))
        elif op == 3 and m:
            m[0] = rng.choice([0, 1, 2, 3, 4, 5, 255])
        elif op == 4 and len(m) > 3:
            m[3] = rng.getrandbits(8)  # hop count / RERR DestCount
    return bytes(m)


def _message(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.35:
        return _valid(rng)
    if r < 0.8:
        return _mutate(rng, _valid(rng))
    return bytes([rng.choice([1, 2, 3, 4, rng.getrandbits(8)])]) + rng.randbytes(rng.randint(0, 40))


def _frame(rng: random.Random, payload: bytes) -> FromAir:
    src = rng.choice([s for s in range(1, N_STATIONS + 1) if s != ME])
    dst_ip = LIMITED_BROADCAST if rng.random() < 0.6 else station_ip_int(ME)
    pkt = bytearray(build(station_ip_int(src), dst_ip, rng.randint(1, 255), payload, rng.getrandbits(16)))
    r = rng.random()
    if r < 0.03:  # UDP length field
        pkt[24:26] = rng.getrandbits(16).to_bytes(2, "big")
    elif r < 0.04:  # IP total length
        pkt[rng.choice([2, 3])] = rng.getrandbits(8)
    elif r < 0.05:  # version / header length (kept so that the UDP header stays where it is)
        pkt[0] = rng.choice([0x65, 0x44, 0x40, 0x05])
    elif r < 0.06:
        del pkt[rng.randint(0, 27) :]
    return FromAir(
        bytes(pkt),
        src,
        0xFFFFFFFF if dst_ip == LIMITED_BROADCAST else ME,
        rssi_dbm=-rng.uniform(40, 95),
        snr_db=rng.uniform(0, 40),
    )


def _data(rng: random.Random) -> bytes:
    dst = rng.randint(1, N_STATIONS)
    return build(station_ip_int(ME), station_ip_int(dst), 64, b"data")[:20] + b"\x00" * 12


def run_fuzz(n: int, seed: int, params: dict[str, Any]) -> AodvRouting:
    rng = random.Random(seed)
    ctx = NodeContext(station=ME, n_stations=N_STATIONS, rng=random.Random(seed + 1), ifq=InterfaceQueue(50))
    proto = create(ctx, {"name": "aodv", "params": params})
    for event in proto.EMITS:
        ctx.hooks.subscribe(event, lambda ev: None)
    io = _IO()
    rt = NodeRuntime(ctx, proto, io)
    now = 0
    rt.start(now)
    for i in range(n):
        now += rng.randint(0, 2 * NS_PER_MS)
        rt.fire_due(now)
        if i % 50 == 0:
            rt.handle(FromLocal(_data(rng)), now)
        rt.handle(_frame(rng, _message(rng)), now)
        while io.outstanding is not None:
            f, io.outstanding = io.outstanding, None
            rt.tx_done(TxStatus(f, ok=f.next_hop == 0xFFFFFFFF or rng.random() < 0.8, rts_attempts=1), now)
    return proto


def _check(proto: AodvRouting, n: int) -> None:
    c = proto.ctx.counters
    # every message is either processed or counted as malformed (and dropped)
    assert sum(c.routing_received.values()) + sum(c.malformed.values()) == n
    assert c.malformed["aodv_unknown_type"] > 0 and c.malformed["aodv_truncated"] > 0
    assert c.drops["aodv_malformed"] > 0 and c.drops["aodv_unknown_type"] > 0
    for e in proto.table:
        assert e.dst != proto.me and 1 <= e.hop_count <= 255 and isinstance(e.state, RouteState)


def test_fuzz_100k_default_params() -> None:
    n = 100_000
    proto = run_fuzz(n, seed=1, params={})
    _check(proto, n)


@pytest.mark.parametrize("seed", [2, 3])
def test_fuzz_all_options(seed: int) -> None:
    n = 20_000
    params = {"enable_hello": True, "local_repair": True, "rrep_ack": True, "gratuitous_rrep": True}
    proto = run_fuzz(n, seed=seed, params=params)
    _check(proto, n)
