"""The medium <-> router wire protocol, version 1 (docs/interfaces.md section 2).

Two halves:

- a ``struct`` codec (module level, no scapy import): this IS on the data path of every station
  and of the medium's Python tests, so encoding is one ``Struct.pack`` plus a payload
  concatenation and decoding one ``unpack_from``;
- scapy layers of every message (:func:`scapy_layers`), the specification the codec is tested
  against byte for byte (``tests/packets/test_medium_codec.py``). They are built on first call so
  that importing the codec never imports scapy (about 40 MB and 0.4 s per station otherwise).

All integers are little-endian, floats IEEE 754 f32. Every message starts with the 16-byte header
``u16 magic, u8 version, u8 type, u32 seq, u64 time_ns``.
"""

from __future__ import annotations

import functools
import math
import struct
from types import SimpleNamespace
from typing import Any, NamedTuple

MAGIC: int = 0x4D4D
VERSION: int = 1
MAX_PAYLOAD: int = 2304
"""Largest payload of a TX or RX message (the 802.11 MSDU limit)."""

# message types ------------------------------------------------------------
HELLO: int = 1
TX: int = 2
SET_POWER: int = 3
BYE: int = 4
WELCOME: int = 129
TX_STATUS: int = 130
RX: int = 131

TYPE_NAMES: dict[int, str] = {
    HELLO: "HELLO",
    TX: "TX",
    SET_POWER: "SET_POWER",
    BYE: "BYE",
    WELCOME: "WELCOME",
    TX_STATUS: "TX_STATUS",
    RX: "RX",
}

# HELLO flags, TX flags, RX flags
HELLO_PROMISCUOUS: int = 0x01
"""HELLO flags bit 0: deliver overheard unicast frames."""
TX_NO_RTS: int = 0x01
"""TX flags bit 0: no RTS/CTS for this frame."""
RX_OVERHEARD: int = 0x01
"""RX flags bit 0: the frame was addressed to another station."""

BROADCAST: int = 0xFFFF_FFFF
ALL_NEIGHBOURS: int = 0xFFFF_FFFF

# TX_STATUS status
ACKED: int = 0
FAILED: int = 1
SENT: int = 2
REJECTED: int = 3
STATUS_NAMES: dict[int, str] = {ACKED: "acked", FAILED: "failed", SENT: "sent", REJECTED: "rejected"}

# TX_STATUS cause (ground truth for FAILED frames; the router only counts it)
CAUSE_NONE: int = 0
CAUSE_OUT_OF_RANGE: int = 1
CAUSE_COLLISION: int = 2
CAUSE_CHANNEL_ERROR: int = 3
CAUSE_SCRIPTED: int = 4
CAUSE_NAMES: dict[int, str] = {
    CAUSE_NONE: "none",
    CAUSE_OUT_OF_RANGE: "out_of_range",
    CAUSE_COLLISION: "collision",
    CAUSE_CHANNEL_ERROR: "channel_error",
    CAUSE_SCRIPTED: "scripted",
}

NAN: float = math.nan

# structs: header + body in one format, so one call packs or unpacks a whole message -------------
HEADER = struct.Struct("<HBBIQ")
HELLO_ST = struct.Struct("<HBBIQII")
TX_ST = struct.Struct("<HBBIQQIfBBH")
SET_POWER_ST = struct.Struct("<HBBIQIf")
BYE_ST = HEADER
WELCOME_ST = struct.Struct("<HBBIQIIQfI")
TX_STATUS_ST = struct.Struct("<HBBIQQBBBBQQ")
RX_ST = struct.Struct("<HBBIQIIB3xfffH")

HEADER_LEN: int = HEADER.size  # 16
FIXED_LEN: dict[int, int] = {
    HELLO: HELLO_ST.size,  # 24
    TX: TX_ST.size,  # 36 + len
    SET_POWER: SET_POWER_ST.size,  # 24
    BYE: BYE_ST.size,  # 16
    WELCOME: WELCOME_ST.size,  # 40
    TX_STATUS: TX_STATUS_ST.size,  # 44
    RX: RX_ST.size,  # 42 + len
}
HAS_PAYLOAD: frozenset[int] = frozenset({TX, RX})


class MalformedMessage(ValueError):
    """Wrong magic, version, type or length; ``reason`` is the counter name."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ------------------------------------------------------------------ decoded messages


class Hello(NamedTuple):
    seq: int
    time_ns: int
    station_id: int
    flags: int


class Tx(NamedTuple):
    seq: int
    time_ns: int
    cookie: int
    dst: int
    tx_power_dbm: float
    retry_limit: int
    flags: int
    payload: bytes


class SetPower(NamedTuple):
    seq: int
    time_ns: int
    neighbour: int
    tx_power_dbm: float


class Bye(NamedTuple):
    seq: int
    time_ns: int


class Welcome(NamedTuple):
    seq: int
    time_ns: int
    station_id: int
    n_stations: int
    epoch_monotonic_ns: int
    default_tx_power_dbm: float
    reserved: int


class TxStatusMsg(NamedTuple):
    seq: int
    time_ns: int
    cookie: int
    status: int
    rts_attempts: int
    data_attempts: int
    cause: int
    t_start_ns: int
    t_end_ns: int


class Rx(NamedTuple):
    seq: int
    time_ns: int
    src: int
    dst: int
    flags: int
    rssi_dbm: float
    snr_db: float
    noise_dbm: float
    payload: bytes


Message = Hello | Tx | SetPower | Bye | Welcome | TxStatusMsg | Rx

# ------------------------------------------------------------------ encoders (router -> medium)


def encode_hello(seq: int, station_id: int, flags: int = 0) -> bytes:
    return HELLO_ST.pack(MAGIC, VERSION, HELLO, seq, 0, station_id, flags)


def encode_tx(
    seq: int,
    cookie: int,
    dst: int,
    payload: bytes,
    tx_power_dbm: float = NAN,
    retry_limit: int = 0,
    flags: int = 0,
) -> bytes:
    """A TX message; ``tx_power_dbm`` NaN means the station default, ``retry_limit`` 0 the MAC's."""
    n = len(payload)
    if n > MAX_PAYLOAD:
        raise ValueError(f"TX payload of {n} bytes exceeds {MAX_PAYLOAD}")
    return TX_ST.pack(MAGIC, VERSION, TX, seq, 0, cookie, dst, tx_power_dbm, retry_limit, flags, n) + payload


def encode_set_power(seq: int, neighbour: int, tx_power_dbm: float = NAN) -> bytes:
    return SET_POWER_ST.pack(MAGIC, VERSION, SET_POWER, seq, 0, neighbour, tx_power_dbm)


def encode_bye(seq: int) -> bytes:
    return BYE_ST.pack(MAGIC, VERSION, BYE, seq, 0)


# ------------------------------------------------------------------ encoders (medium -> router)


def encode_welcome(
    seq: int,
    time_ns: int,
    station_id: int,
    n_stations: int,
    epoch_monotonic_ns: int,
    default_tx_power_dbm: float,
    reserved: int = 0,
) -> bytes:
    return WELCOME_ST.pack(
        MAGIC,
        VERSION,
        WELCOME,
        seq,
        time_ns,
        station_id,
        n_stations,
        epoch_monotonic_ns,
        default_tx_power_dbm,
        reserved,
    )


def encode_tx_status(
    seq: int,
    time_ns: int,
    cookie: int,
    status: int,
    rts_attempts: int = 0,
    data_attempts: int = 0,
    cause: int = 0,
    t_start_ns: int = 0,
    t_end_ns: int = 0,
) -> bytes:
    return TX_STATUS_ST.pack(
        MAGIC,
        VERSION,
        TX_STATUS,
        seq,
        time_ns,
        cookie,
        status,
        rts_attempts,
        data_attempts,
        cause,
        t_start_ns,
        t_end_ns,
    )


def encode_rx(
    seq: int,
    time_ns: int,
    src: int,
    dst: int,
    payload: bytes,
    flags: int = 0,
    rssi_dbm: float = 0.0,
    snr_db: float = 0.0,
    noise_dbm: float = 0.0,
) -> bytes:
    n = len(payload)
    if n > MAX_PAYLOAD:
        raise ValueError(f"RX payload of {n} bytes exceeds {MAX_PAYLOAD}")
    return (
        RX_ST.pack(MAGIC, VERSION, RX, seq, time_ns, src, dst, flags, rssi_dbm, snr_db, noise_dbm, n)
        + payload
    )


# ------------------------------------------------------------------ decoding


def decode_header(buf: bytes) -> tuple[int, int, int]:
    """Check magic, version, type and length; return ``(type, seq, time_ns)``.

    The length rule: a message is exactly its fixed part plus, for TX and RX, ``len`` payload
    bytes (``len`` <= 2304). Anything shorter, longer or over the limit is malformed.
    """
    n = len(buf)
    if n < HEADER_LEN:
        raise MalformedMessage("short_header")
    magic, version, mtype, seq, time_ns = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise MalformedMessage("bad_magic")
    if version != VERSION:
        raise MalformedMessage("bad_version")
    fixed = FIXED_LEN.get(mtype)
    if fixed is None:
        raise MalformedMessage("bad_type")
    if mtype in HAS_PAYLOAD:
        if n < fixed:
            raise MalformedMessage("bad_length")
        plen = buf[fixed - 2] | (buf[fixed - 1] << 8)
        if plen > MAX_PAYLOAD:
            raise MalformedMessage("oversized")
        if n != fixed + plen:
            raise MalformedMessage("bad_length")
    elif n != fixed:
        raise MalformedMessage("bad_length")
    return mtype, seq, time_ns


_RX_LEN = RX_ST.size
_TX_STATUS_LEN = TX_STATUS_ST.size
# the first 4 bytes (magic, version, type) of a well-formed RX / TX_STATUS, and the rest of their
# fixed part without them: the hot path checks the 4 bytes with one comparison and unpacks the
# fields in message order (RX: seq .. noise_dbm, then len; TX_STATUS: all of them)
_RX_HEAD = HEADER.pack(MAGIC, VERSION, RX, 0, 0)[:4]
_TX_STATUS_HEAD = HEADER.pack(MAGIC, VERSION, TX_STATUS, 0, 0)[:4]
_RX_FIELDS = struct.Struct("<4x" + RX_ST.format.removeprefix("<HBB")).unpack_from
_TX_STATUS_FIELDS = struct.Struct("<4x" + TX_STATUS_ST.format.removeprefix("<HBB")).unpack_from
_new = tuple.__new__  # a NamedTuple from a tuple of the right length, without its __new__'s checks


def decode(buf: bytes) -> Message:
    """Decode one whole message; raise :class:`MalformedMessage` (``reason``: the counter name)
    unless it passes :func:`decode_header`'s checks.

    RX and TX_STATUS, the two messages of every forwarded packet, are checked with one comparison
    of their first 4 bytes and one length test, and decoded with one ``unpack_from`` each (the
    router's hot path, docs/router.md); everything else, and anything that fails those checks,
    goes through :func:`decode_header`. ``buf`` is ``bytes`` (what ``recv`` returns): an RX's
    payload is a slice of it.
    """
    head = buf[:4]
    if head == _RX_HEAD:
        n = len(buf)
        if n >= _RX_LEN:
            f = _RX_FIELDS(buf)
            plen = f[8]
            if n == _RX_LEN + plen and plen <= MAX_PAYLOAD:
                return _new(Rx, f[:8] + (buf[_RX_LEN:],))  # a slice of bytes is bytes
    elif head == _TX_STATUS_HEAD and len(buf) == _TX_STATUS_LEN:
        return _new(TxStatusMsg, _TX_STATUS_FIELDS(buf))
    mtype, _, _ = decode_header(buf)
    if mtype == RX:
        f = RX_ST.unpack_from(buf)
        return Rx(f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], bytes(buf[RX_ST.size :]))
    if mtype == TX_STATUS:
        return TxStatusMsg(*TX_STATUS_ST.unpack_from(buf)[3:])
    if mtype == TX:
        f = TX_ST.unpack_from(buf)
        return Tx(f[3], f[4], f[5], f[6], f[7], f[8], f[9], bytes(buf[TX_ST.size :]))
    if mtype == HELLO:
        return Hello(*HELLO_ST.unpack_from(buf)[3:])
    if mtype == SET_POWER:
        return SetPower(*SET_POWER_ST.unpack_from(buf)[3:])
    if mtype == WELCOME:
        return Welcome(*WELCOME_ST.unpack_from(buf)[3:])
    return Bye(*BYE_ST.unpack_from(buf)[3:])


def encode(msg: Message) -> bytes:
    """Encode a decoded message back (tests, the fake medium)."""
    if isinstance(msg, Rx):
        return encode_rx(
            msg.seq,
            msg.time_ns,
            msg.src,
            msg.dst,
            msg.payload,
            msg.flags,
            msg.rssi_dbm,
            msg.snr_db,
            msg.noise_dbm,
        )
    if isinstance(msg, TxStatusMsg):
        return encode_tx_status(*msg)
    if isinstance(msg, Tx):
        if msg.time_ns:
            raise ValueError("router messages carry time_ns 0")
        return encode_tx(
            msg.seq, msg.cookie, msg.dst, msg.payload, msg.tx_power_dbm, msg.retry_limit, msg.flags
        )
    if isinstance(msg, Hello):
        return HELLO_ST.pack(MAGIC, VERSION, HELLO, *msg)
    if isinstance(msg, SetPower):
        return SET_POWER_ST.pack(MAGIC, VERSION, SET_POWER, *msg)
    if isinstance(msg, Welcome):
        return encode_welcome(*msg)
    return BYE_ST.pack(MAGIC, VERSION, BYE, *msg)


# ------------------------------------------------------------------ scapy layers (specification)


@functools.cache
def scapy_layers() -> SimpleNamespace:
    """The scapy layers of every message: ``MediumHeader`` / ``Hello`` / ``Tx`` / ... .

    ``MediumHeader`` is bound to the body layers by ``type``, so ``MediumHeader(raw)`` dissects a
    whole message and ``MediumHeader(seq=1) / layers.Tx(cookie=7, payload=b"...")`` builds one
    (``type`` and ``len`` default to None and are filled at build time).
    """
    from scapy.fields import (
        ByteEnumField,
        ByteField,
        Field,
        FlagsField,
        LEFieldLenField,
        LEIntField,
        LELongField,
        LEShortField,
        StrFixedLenField,
        StrLenField,
    )
    from scapy.packet import Packet, bind_layers

    class LEFloatField(Field[float, float]):
        def __init__(self, name: str, default: float) -> None:
            Field.__init__(self, name, default, "<f")

    class MediumHeader(Packet):
        name = "MediumHeader"
        fields_desc = [
            LEShortField("magic", MAGIC),
            ByteField("version", VERSION),
            ByteEnumField("type", None, TYPE_NAMES),
            LEIntField("seq", 1),
            LELongField("time_ns", 0),
        ]

    class HelloLayer(Packet):
        name = "Hello"
        fields_desc = [LEIntField("station_id", 0), FlagsField("flags", 0, -32, ["promiscuous"])]

    class TxLayer(Packet):
        name = "Tx"
        fields_desc = [
            LELongField("cookie", 0),
            LEIntField("dst", 0),
            LEFloatField("tx_power_dbm", NAN),
            ByteField("retry_limit", 0),
            FlagsField("flags", 0, 8, ["no_rts"]),
            LEFieldLenField("len", None, length_of="payload_bytes"),
            StrLenField("payload_bytes", b"", length_from=lambda p: p.len),
        ]

    class SetPowerLayer(Packet):
        name = "SetPower"
        fields_desc = [LEIntField("neighbour", ALL_NEIGHBOURS), LEFloatField("tx_power_dbm", NAN)]

    class ByeLayer(Packet):
        name = "Bye"
        fields_desc: list[Any] = []

    class WelcomeLayer(Packet):
        name = "Welcome"
        fields_desc = [
            LEIntField("station_id", 0),
            LEIntField("n_stations", 0),
            LELongField("epoch_monotonic_ns", 0),
            LEFloatField("default_tx_power_dbm", 0.0),
            LEIntField("reserved", 0),
        ]

    class TxStatusLayer(Packet):
        name = "TxStatus"
        fields_desc = [
            LELongField("cookie", 0),
            ByteEnumField("status", 0, STATUS_NAMES),
            ByteField("rts_attempts", 0),
            ByteField("data_attempts", 0),
            ByteEnumField("cause", 0, CAUSE_NAMES),
            LELongField("t_start_ns", 0),
            LELongField("t_end_ns", 0),
        ]

    class RxLayer(Packet):
        name = "Rx"
        fields_desc = [
            LEIntField("src", 0),
            LEIntField("dst", 0),
            FlagsField("flags", 0, 8, ["overheard"]),
            StrFixedLenField("reserved", b"\x00\x00\x00", 3),
            LEFloatField("rssi_dbm", 0.0),
            LEFloatField("snr_db", 0.0),
            LEFloatField("noise_dbm", 0.0),
            LEFieldLenField("len", None, length_of="payload_bytes"),
            StrLenField("payload_bytes", b"", length_from=lambda p: p.len),
        ]

    _BODIES: dict[int, type[Packet]] = {
        HELLO: HelloLayer,
        TX: TxLayer,
        SET_POWER: SetPowerLayer,
        BYE: ByeLayer,
        WELCOME: WelcomeLayer,
        TX_STATUS: TxStatusLayer,
        RX: RxLayer,
    }
    for t, cls in _BODIES.items():
        bind_layers(MediumHeader, cls, type=t)

    return SimpleNamespace(
        MediumHeader=MediumHeader,
        Hello=HelloLayer,
        Tx=TxLayer,
        SetPower=SetPowerLayer,
        Bye=ByeLayer,
        Welcome=WelcomeLayer,
        TxStatus=TxStatusLayer,
        Rx=RxLayer,
        bodies=_BODIES,
    )
