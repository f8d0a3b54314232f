"""Minimal client of the medium's router socket (docs/interfaces.md section 2).

Used by the medium's socket tests (tests/medium/) and the lag benchmark (bench/medium/). The
station router (nodes/router) has its own asyncio implementation; this one is blocking and
small on purpose. The wire codec is the station's (``nodes.formats.medium``); what this module
adds is a blocking fake router, the control socket, and a TX encoder that also builds the
oversized frames the medium must reject.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodes.formats import medium as wire  # noqa: E402
from nodes.formats.medium import BROADCAST, Rx, Welcome  # noqa: E402,F401  (mm.BROADCAST, mm.Rx)

hello = wire.encode_hello
set_power = wire.encode_set_power
bye = wire.encode_bye


class TxStatus(wire.TxStatusMsg):
    """A TX_STATUS whose ``status`` reads as its name: "acked", "failed", "sent" or "rejected"."""

    __slots__ = ()

    @property
    def status(self) -> str:  # type: ignore[override]
        return wire.STATUS_NAMES[super().status]


def tx(
    seq: int,
    cookie: int,
    dst: int,
    payload: bytes,
    power_dbm: float = wire.NAN,
    retry_limit: int = 0,
    flags: int = 0,
) -> bytes:
    """A TX message. Unlike the codec's encoder, a payload over the 2304-byte limit is encoded too
    (with its true ``len``): the tests check that the medium rejects it."""
    if len(payload) <= wire.MAX_PAYLOAD:
        return wire.encode_tx(seq, cookie, dst, payload, power_dbm, retry_limit, flags)
    fixed = wire.TX_ST.pack(
        wire.MAGIC, wire.VERSION, wire.TX, seq, 0, cookie, dst, power_dbm, retry_limit, flags, len(payload)
    )
    return fixed + payload


def parse(b: bytes) -> Welcome | TxStatus | Rx:
    """Decode a medium -> router message; ValueError (``wire.MalformedMessage``) if malformed or
    not one the medium sends."""
    m = wire.decode(b)
    if isinstance(m, wire.TxStatusMsg):
        return TxStatus._make(m)
    if isinstance(m, (Welcome, Rx)):
        return m
    raise ValueError(f"not a medium -> router message: {type(m).__name__}")


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

    def call(self, **req: object) -> dict[str, Any]:
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        reply: dict[str, Any] = json.loads(self.f.readline())
        return reply

    def close(self) -> None:
        self.f.close()
        self.sock.close()
