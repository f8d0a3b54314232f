"""The medium wire codec (nodes.formats.medium) against its scapy layers and literal bytes."""

from __future__ import annotations

import math
import struct

import pytest

from nodes.formats import medium as wire

L = wire.scapy_layers()
PAYLOAD = bytes(range(40))


def test_header_is_16_bytes_and_sizes() -> None:
    assert wire.HEADER_LEN == 16
    assert wire.FIXED_LEN == {
        wire.HELLO: 24,
        wire.TX: 36,
        wire.SET_POWER: 24,
        wire.BYE: 16,
        wire.WELCOME: 40,
        wire.TX_STATUS: 44,
        wire.RX: 42,
    }


def test_literal_hello() -> None:
    assert wire.encode_hello(1, 3, wire.HELLO_PROMISCUOUS) == bytes.fromhex(
        "4d4d01010100000000000000000000000300000001000000"
    )


def test_literal_tx() -> None:
    got = wire.encode_tx(
        2,
        cookie=0x0102030405060708,
        dst=0xFFFFFFFF,
        payload=b"\xab\xcd",
        tx_power_dbm=1.5,
        retry_limit=7,
        flags=wire.TX_NO_RTS,
    )
    assert got == bytes.fromhex(
        "4d4d01020200000000000000000000000807060504030201ffffffff0000c03f07010200abcd"
    )


def test_literal_tx_status_and_rx() -> None:
    assert wire.encode_tx_status(
        5, 1000, 9, wire.FAILED, 7, 0, wire.CAUSE_OUT_OF_RANGE, 10, 20
    ) == bytes.fromhex(
        "4d4d018205000000e8030000000000000900000000000000010700010a000000000000001400000000000000"
    )
    assert wire.encode_rx(6, 0, 1, 2, b"\x45", wire.RX_OVERHEARD, -60.0, 30.0, -90.0) == bytes.fromhex(
        "4d4d0183060000000000000000000000010000000200000001000000000070c20000f0410000b4c2010045"
    )


def test_literal_welcome_set_power_bye() -> None:
    assert wire.encode_welcome(1, 0, 3, 5, 123456789, 15.0) == bytes.fromhex(
        "4d4d0181010000000000000000000000030000000500000015cd5b07000000000000704100000000"
    )
    nan = wire.encode_set_power(4, wire.ALL_NEIGHBOURS)
    assert nan[:20] == bytes.fromhex("4d4d0103040000000000000000000000ffffffff")
    assert math.isnan(struct.unpack("<f", nan[20:])[0])
    assert wire.encode_bye(9) == bytes.fromhex("4d4d0104090000000000000000000000")


CASES = [
    (wire.encode_hello(1, 7, 1), L.Hello(station_id=7, flags=1), dict(seq=1)),
    (
        wire.encode_tx(2, 77, 3, PAYLOAD, 12.5, 4, 1),
        L.Tx(cookie=77, dst=3, tx_power_dbm=12.5, retry_limit=4, flags=1, payload_bytes=PAYLOAD),
        dict(seq=2),
    ),
    (wire.encode_set_power(3, 4, -3.0), L.SetPower(neighbour=4, tx_power_dbm=-3.0), dict(seq=3)),
    (wire.encode_bye(4), L.Bye(), dict(seq=4)),
    (
        wire.encode_welcome(1, 55, 2, 10, 987654321, 15.0),
        L.Welcome(station_id=2, n_stations=10, epoch_monotonic_ns=987654321, default_tx_power_dbm=15.0),
        dict(seq=1, time_ns=55),
    ),
    (
        wire.encode_tx_status(2, 66, 77, wire.ACKED, 1, 2, 0, 60, 66),
        L.TxStatus(cookie=77, status=0, rts_attempts=1, data_attempts=2, cause=0, t_start_ns=60, t_end_ns=66),
        dict(seq=2, time_ns=66),
    ),
    (
        wire.encode_rx(3, 70, 1, 2, PAYLOAD, 1, -61.5, 33.5, -95.0),
        L.Rx(src=1, dst=2, flags=1, rssi_dbm=-61.5, snr_db=33.5, noise_dbm=-95.0, payload_bytes=PAYLOAD),
        dict(seq=3, time_ns=70),
    ),
]


@pytest.mark.parametrize("raw_msg,body,hdr", CASES, ids=[type(c[1]).__name__ for c in CASES])
def test_codec_matches_scapy_both_ways(raw_msg: bytes, body: object, hdr: dict[str, int]) -> None:
    built = bytes(L.MediumHeader(**hdr) / body)
    assert built == raw_msg
    dissected = L.MediumHeader(raw_msg)
    assert dissected.type == raw_msg[3]
    if len(raw_msg) > wire.HEADER_LEN:  # scapy does not dissect an empty body (BYE)
        assert isinstance(dissected.payload, type(body))
    msg = wire.decode(raw_msg)
    assert msg.seq == hdr["seq"]
    for name, value in body.fields.items():  # type: ignore[attr-defined]
        if name == "payload_bytes":
            assert msg.payload == value  # type: ignore[union-attr]
        elif name not in ("len", "reserved"):
            assert getattr(msg, name) == value, name
    assert wire.encode(msg) == raw_msg


def test_nan_power_roundtrip() -> None:
    msg = wire.decode(wire.encode_tx(1, 1, 2, b"x"))
    assert isinstance(msg, wire.Tx) and math.isnan(msg.tx_power_dbm)


@pytest.mark.parametrize(
    "raw_msg,reason",
    [
        (b"", "short_header"),
        (b"\x4d\x4d\x01\x04\x01\x00\x00", "short_header"),
        (b"\x4e" + wire.encode_bye(1)[1:], "bad_magic"),
        (wire.encode_bye(1)[:2] + b"\x02" + wire.encode_bye(1)[3:], "bad_version"),
        (wire.encode_bye(1)[:3] + b"\x05" + wire.encode_bye(1)[4:], "bad_type"),
        (wire.encode_bye(1) + b"\x00", "bad_length"),
        (wire.encode_hello(1, 1)[:-1], "bad_length"),
        (wire.encode_rx(1, 0, 1, 2, b"abc")[:-1], "bad_length"),
        (wire.encode_rx(1, 0, 1, 2, b"abc") + b"d", "bad_length"),
        (wire.encode_rx(1, 0, 1, 2, b"")[:40] + struct.pack("<H", 2305) + bytes(2305), "oversized"),
    ],
)
def test_malformed(raw_msg: bytes, reason: str) -> None:
    with pytest.raises(wire.MalformedMessage) as info:
        wire.decode(raw_msg)
    assert info.value.reason == reason


def test_oversized_payload_is_refused_on_encode() -> None:
    with pytest.raises(ValueError):
        wire.encode_tx(1, 1, 2, bytes(wire.MAX_PAYLOAD + 1))
    assert len(wire.encode_tx(1, 1, 2, bytes(wire.MAX_PAYLOAD))) == 36 + 2304
