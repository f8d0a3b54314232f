"""Per-packet trace of a station's router: what happened to each packet, in a compact binary form.

``testbed.explain`` joins the routers' traces (and the medium's failed-frame trace) to find, for
each TCP retransmission timeout, where the lost segment died and why (docs/explain.md). A packet
is followed across stations by its **key**, which survives forwarding: the IPv4 source,
destination and identification (DSR inserts its header after the IP header and keeps them; AODV
forwards the packet unchanged), plus the TCP ports, sequence and acknowledgement numbers.

One record per event: a 14-byte header ``HEADER`` (little-endian) and the first ``caplen``
bytes of the packet, as tcpdump's snap length does: ``PLAIN_CAP`` (IPv4 + TCP header without
options) or, for a DSR packet, ``DSR_CAP`` (room for a source route of 13 hops before the TCP
header). The router only slices and appends (about 0.7 us a record, against 3.6 us to parse the
packet there); ``read_records`` parses the headers afterwards (``packet_fields``).

====================  =============================================================
``t_ns`` q            router time (= the medium's run time), ns
``ev`` B              one of ``EV_*``
``code`` B            ``EV_TX_FAIL``: the medium's cause (``MEDIUM_CAUSES``);
                      ``EV_DROP``/``EV_IFQ_DROP``: index into the tracer's ``reasons``
``peer`` H            next hop (TX, TX_OK, TX_FAIL), previous hop (RX), else 0
``caplen`` H          bytes of the packet that follow
====================  =============================================================

The file ``sta<N>.trace.bin`` starts with ``MAGIC``; the reason names (``reasons``) are in the
router's counters file under ``trace``. Sans-I/O: the tracer only appends to a ``bytearray``;
the router daemon writes ``take()`` to its file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

MAGIC = b"MTRTRC02"
"""First bytes of a router trace file (format version 2: header + packet prefix)."""

HEADER = struct.Struct("<qBBHH")
PLAIN_CAP = 40
"""Bytes of a non-DSR packet kept: IPv4 header (20) and TCP header without options (20)."""
DSR_CAP = 96
"""Bytes of a DSR packet kept: IPv4 (20), DSR fixed header (4, RFC 4728 section 6.1), a source
route option of 13 hops (4 + 4 x 13, section 6.7) and the TCP ports, sequence, acknowledgement,
offset and flags (14)."""

EV_ORIG = 0
"""A packet from the local kernel (TUN) entered the router."""
EV_RX = 1
"""A frame from the air (addressed to us or broadcast) reached the core."""
EV_TX = 2
"""A frame left the interface queue for the MAC."""
EV_TX_OK = 3
"""The MAC reported the frame acknowledged (or a broadcast sent)."""
EV_TX_FAIL = 4
"""The MAC gave up on the frame (retry limit); ``code`` is the medium's ground-truth cause."""
EV_DELIVER = 5
"""The packet was written to the local kernel."""
EV_DROP = 6
"""The core dropped the packet; ``code`` indexes ``reasons``."""
EV_IFQ_DROP = 7
"""The interface queue was full and dropped this packet."""
EV_NAMES = ("orig", "rx", "tx", "tx_ok", "tx_fail", "deliver", "drop", "ifq_drop")

IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_DSR = 48
"""RFC 4728 section 6.1: DSR's IP protocol number."""
IPPROTO_NONE = 59
"""RFC 4728 section 6.1: Next Header "No Next Header" (a DSR packet with only options)."""
AODV_PORT = 654
"""RFC 3561 section 4: AODV's UDP port."""
_PACK = HEADER.pack
_TCP4 = struct.Struct("!HHII").unpack_from
_EMPTY4 = b"\0\0\0\0"


def packet_fields(p: bytes) -> tuple[bytes, bytes, int, int, int, int, int, int, int, int, int]:
    """``(src, dst, ip_id, sport, dport, proto, tcp_flags, seq, ack, length, ctl)`` of an IPv4
    packet or of its first bytes (the TCP payload length comes from the IP total length).

    Looks through a DSR header (RFC 4728 section 6.1) to the transport header. Short or non-IPv4
    packets give zeros (never raises).
    """
    n = len(p)
    if n < 20 or p[0] >> 4 != 4:
        return _EMPTY4, _EMPTY4, 0, 0, 0, 0, 0, 0, 0, 0, 0
    off = (p[0] & 15) * 4
    proto = p[9]
    ctl = 0
    if proto == IPPROTO_DSR and n >= off + 4:
        proto = p[off]
        opt = off + 4
        off = opt + ((p[off + 2] << 8) | p[off + 3])
        if proto == IPPROTO_NONE and n > opt:
            ctl = p[opt]
    if proto == IPPROTO_TCP and n >= off + 14:
        sport, dport, seq, ack = _TCP4(p, off)
        length = ((p[2] << 8) | p[3]) - off - (p[off + 12] >> 4) * 4
        return (
            p[12:16],
            p[16:20],
            (p[4] << 8) | p[5],
            sport,
            dport,
            proto,
            p[off + 13],
            seq,
            ack,
            length if 0 <= length <= 0xFFFF else 0,
            0,
        )
    if proto == IPPROTO_UDP and n >= off + 9 and ((p[off + 2] << 8) | p[off + 3]) == AODV_PORT:
        ctl = p[off + 8]
    return p[12:16], p[16:20], (p[4] << 8) | p[5], 0, 0, proto, 0, 0, 0, 0, ctl


class Tracer:
    """Appends trace records to ``buf``; drop reasons get codes in order of first use."""

    __slots__ = ("buf", "codes", "reasons", "records")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.reasons: list[str] = []
        self.codes: dict[str, int] = {}
        self.records = 0

    def add(self, t_ns: int, ev: int, packet: bytes, peer: int = 0, code: int = 0) -> None:
        self.records += 1
        cap = packet[: DSR_CAP if len(packet) > 9 and packet[9] == IPPROTO_DSR else PLAIN_CAP]
        buf = self.buf
        buf += _PACK(t_ns, ev, code, peer & 0xFFFF, len(cap))
        buf += cap

    def drop(self, t_ns: int, ev: int, packet: bytes, reason: str) -> None:
        code = self.codes.get(reason)
        if code is None:
            code = self.codes[reason] = min(len(self.reasons), 255)
            self.reasons.append(reason)
        self.add(t_ns, ev, packet, 0, code)

    def take(self) -> bytes:
        """The records appended since the last call (and forget them)."""
        out = bytes(self.buf)
        self.buf.clear()
        return out


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One decoded router trace record (``station``: whose trace it is)."""

    station: int
    t_ns: int
    ev: int
    code: int
    peer: int
    src: str
    dst: str
    ip_id: int
    sport: int
    dport: int
    proto: int
    tcp_flags: int
    seq: int
    ack: int
    length: int
    ctl: int


class TraceFormatError(ValueError):
    pass


def _ip(b: bytes) -> str:
    return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"


def read_raw(data: bytes, what: str = "trace") -> Iterator[tuple[int, int, int, int, bytes]]:
    """Walk a router trace file's bytes (``MAGIC`` + records): ``(t_ns, ev, code, peer, packet's
    first bytes)`` per record; a truncated last record (a router killed while writing) is ignored."""
    if not data.startswith(MAGIC):
        raise TraceFormatError(
            f"{what}: not a router trace of this version (expected {MAGIC!r} at the start)"
        )
    pos, n, hsize, unpack = len(MAGIC), len(data), HEADER.size, HEADER.unpack_from
    while pos + hsize <= n:
        t, ev, code, peer, caplen = unpack(data, pos)
        pos += hsize
        if pos + caplen > n:
            return
        yield t, ev, code, peer, data[pos : pos + caplen]
        pos += caplen


def packet_key(p: bytes) -> tuple[str, str, int]:
    """IPv4 source, destination (dotted) and identification of a packet's first bytes: the key a
    packet keeps across stations, as ``TraceRecord`` and ``MediumFailure`` carry it."""
    f = packet_fields(p)
    return _ip(f[0]), _ip(f[1]), f[2]


def read_records(data: bytes, station: int, what: str = "trace") -> Iterator[TraceRecord]:
    """Decode a router trace file's bytes (``MAGIC`` + records); a truncated last record (a
    router killed while writing) is ignored."""
    for t, ev, code, peer, packet in read_raw(data, what):
        f = packet_fields(packet)
        yield TraceRecord(station, t, ev, code, peer, _ip(f[0]), _ip(f[1]), *f[2:])


MEDIUM_MAGIC = b"MTMTRC01"
"""First bytes of the medium's failed-frame trace ``medium/trace.bin`` (medium/src/core.rs)."""
MEDIUM_RECORD = struct.Struct("<qHHBBBxf4s4sHBx")
MEDIUM_CAUSES = ("none", "out_of_range", "collision", "channel_error", "scripted")
"""The medium's ground-truth causes by code (docs/medium.md)."""


@dataclass(frozen=True, slots=True)
class MediumFailure:
    """A unicast frame the medium's MAC gave up on, with the ground truth of its last attempt."""

    t_ns: int
    src: int
    dst: int
    cause: str
    rts_attempts: int
    data_attempts: int
    distance_m: float
    ip_src: str
    ip_dst: str
    ip_id: int
    proto: int


def read_medium(data: bytes, what: str = "medium/trace.bin") -> list[MediumFailure]:
    if not data.startswith(MEDIUM_MAGIC):
        raise TraceFormatError(f"{what}: not a medium trace (expected {MEDIUM_MAGIC!r} at the start)")
    body = memoryview(data)[len(MEDIUM_MAGIC) :]
    body = body[: len(body) // MEDIUM_RECORD.size * MEDIUM_RECORD.size]
    out = []
    for t, s, d, c, rts, dat, dist, a, b, ipid, proto in MEDIUM_RECORD.iter_unpack(body):
        cause = MEDIUM_CAUSES[c] if c < len(MEDIUM_CAUSES) else str(c)
        out.append(MediumFailure(t, s, d, cause, rts, dat, dist, _ip(a), _ip(b), ipid, proto))
    return out
