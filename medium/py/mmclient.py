"""Minimal client of the medium's router socket (docs/interfaces.md section 2).

Used by the medium's socket tests (tests/medium/) and the lag benchmark (bench/medium/). The
station router (nodes/router) has its own asyncio implementation; this one is blocking and
small on purpose.
"""

from __future__ import annotations

import json
import math
import socket
import struct
from dataclasses import dataclass

MAGIC = 0x4D4D
VERSION = 1
HEADER = struct.Struct("<HBBIQ")
T_HELLO, T_TX, T_SET_POWER, T_BYE = 1, 2, 3, 4
T_WELCOME, T_TX_STATUS, T_RX = 129, 130, 131
BROADCAST = 0xFFFF_FFFF
STATUS = {0: "acked", 1: "failed", 2: "sent", 3: "rejected"}


@dataclass(frozen=True, slots=True)
class Welcome:
    time_ns: int
    station_id: int
    n_stations: int
    epoch_monotonic_ns: int
    default_tx_power_dbm: float


@dataclass(frozen=True, slots=True)
class TxStatus:
    time_ns: int
    cookie: int
    status: str
    rts_attempts: int
    data_attempts: int
    cause: int
    t_start_ns: int
    t_end_ns: int


@dataclass(frozen=True, slots=True)
class Rx:
    time_ns: int
    src: int
    dst: int
    flags: int
    rssi_dbm: float
    snr_db: float
    noise_dbm: float
    payload: bytes


def header(msg_type: int, seq: int) -> bytes:
    return HEADER.pack(MAGIC, VERSION, msg_type, seq, 0)


def hello(seq: int, station_id: int, flags: int = 0) -> bytes:
    return header(T_HELLO, seq) + struct.pack("<II", station_id, flags)


def tx(
    seq: int,
    cookie: int,
    dst: int,
    payload: bytes,
    power_dbm: float = math.nan,
    retry_limit: int = 0,
    flags: int = 0,
) -> bytes:
    return (
        header(T_TX, seq)
        + struct.pack("<QIfBBH", cookie, dst, power_dbm, retry_limit, flags, len(payload))
        + payload
    )


def set_power(seq: int, neighbour: int, power_dbm: float) -> bytes:
    return header(T_SET_POWER, seq) + struct.pack("<If", neighbour, power_dbm)


def bye(seq: int) -> bytes:
    return header(T_BYE, seq)


def parse(b: bytes) -> Welcome | TxStatus | Rx:
    magic, version, msg_type, _seq, time_ns = HEADER.unpack_from(b)
    if magic != MAGIC or version != VERSION:
        raise ValueError("bad header")
    body = b[HEADER.size :]
    if msg_type == T_WELCOME:
        sid, n, epoch, power, _ = struct.unpack("<IIQfI", body)
        return Welcome(time_ns, sid, n, epoch, power)
    if msg_type == T_TX_STATUS:
        cookie, st, rts, data, cause, t0, t1 = struct.unpack("<QBBBBQQ", body)
        return TxStatus(time_ns, cookie, STATUS[st], rts, data, cause, t0, t1)
    if msg_type == T_RX:
        src, dst, flags, rssi, snr, noise, n = struct.unpack_from("<IIB3xfffH", body)
        return Rx(time_ns, src, dst, flags, rssi, snr, noise, body[26 : 26 + n])
    raise ValueError(f"unknown type {msg_type}")


class Router:
    """One fake router: a SOCK_SEQPACKET connection with its own sequence numbers."""

    def __init__(self, path: str, station_id: int, flags: int = 0, timeout: float = 5.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.seq = 0
        self.station_id = station_id
        self.send_raw(hello(self.next_seq(), station_id, flags))
        w = self.recv()
        assert isinstance(w, Welcome), w
        self.welcome = w

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def send_raw(self, b: bytes) -> None:
        self.sock.send(b)

    def send_tx(self, cookie: int, dst: int, payload: bytes, **kw: float) -> None:
        self.send_raw(tx(self.next_seq(), cookie, dst, payload, **kw))  # type: ignore[arg-type]

    def recv(self) -> Welcome | TxStatus | Rx:
        b = self.sock.recv(65536)
        if not b:
            raise ConnectionError("the medium closed the connection")
        return parse(b)

    def wait_status(self, cookie: int) -> TxStatus:
        while True:
            m = self.recv()
            if isinstance(m, TxStatus) and m.cookie == cookie:
                return m

    def close(self) -> None:
        self.sock.close()


class Control:
    """The orchestrator's JSON-lines control socket."""

    def __init__(self, path: str, timeout: float = 5.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rwb")

    def call(self, **req: object) -> dict:
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        return json.loads(self.f.readline())

    def close(self) -> None:
        self.f.close()
        self.sock.close()
