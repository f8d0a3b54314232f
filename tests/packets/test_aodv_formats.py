"""AODV messages (RFC 3561 section 5): scapy layers and the router's struct codec against literal
bytes laid out as in the RFC figures, and back; unknown and truncated messages are dropped."""

from __future__ import annotations

import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw, raw

from nodes.core.events import Drop, FromAir
from nodes.core.protocol import NodeContext
from nodes.formats.aodv import AODV, AODVRerr, AODVRrep, AODVRrepAck, AODVRreq, AODVUnknown, AODVUnreachable
from nodes.protocols.aodv import AodvRouting, MalformedMessage, Rerr, Rrep, RrepAck, Rreq, create, decode
from nodes.protocols.aodv.wire import build

A1, A5, A6 = 0x0A000001, 0x0A000005, 0x0A000006


def make_core(station: int) -> AodvRouting:
    ctx = NodeContext(station=station, n_stations=10, rng=random.Random(station))
    return create(ctx, {"name": "aodv", "params": {}})


# Section 5.1: |Type|J|R|G|D|U| Reserved |Hop Count| RREQ ID | Dest IP | Dest Seq | Orig IP | Orig Seq
RREQ_BYTES = bytes.fromhex("01 28 00 03  01020304  0a000005  00000007  0a000001  0a0b0c0d")
# Section 5.2: |Type|R|A| Reserved |Prefix Sz|Hop Count| Dest IP | Dest Seq | Orig IP | Lifetime
RREP_BYTES = bytes.fromhex("02 40 00 02  0a000005  00000007  0a000001  00002bc0")
# Section 5.3: |Type|N| Reserved |DestCount| (Unreachable IP, Unreachable Seq) * DestCount
RERR_BYTES = bytes.fromhex("03 80 00 02  0a000005 00000008  0a000006 00000009")
# Section 5.4: |Type|Reserved|
ACK_BYTES = bytes.fromhex("04 00")

CASES = [
    (
        RREQ_BYTES,
        AODVRreq(
            flags="GU",
            hop_count=3,
            rreq_id=0x01020304,
            dest_ip="10.0.0.5",
            dest_seq_no=7,
            orig_ip="10.0.0.1",
            orig_seq_no=0x0A0B0C0D,
        ),
        Rreq(
            rreq_id=0x01020304,
            dest_ip=A5,
            dest_seq_no=7,
            orig_ip=A1,
            orig_seq_no=0x0A0B0C0D,
            hop_count=3,
            gratuitous=True,
            unknown_seq_no=True,
        ),
    ),
    (
        RREP_BYTES,
        AODVRrep(
            flags="A", hop_count=2, dest_ip="10.0.0.5", dest_seq_no=7, orig_ip="10.0.0.1", lifetime=11200
        ),
        Rrep(dest_ip=A5, dest_seq_no=7, orig_ip=A1, lifetime_ms=11200, hop_count=2, ack_required=True),
    ),
    (
        RERR_BYTES,
        AODVRerr(
            flags="N",
            unreachable=[
                AODVUnreachable(dest_ip="10.0.0.5", dest_seq_no=8),
                AODVUnreachable(dest_ip="10.0.0.6", dest_seq_no=9),
            ],
        ),
        Rerr(((A5, 8), (A6, 9)), no_delete=True),
    ),
    (ACK_BYTES, AODVRrepAck(), RrepAck()),
]


@pytest.mark.parametrize(("literal", "layer", "value"), CASES, ids=["rreq", "rrep", "rerr", "rrep_ack"])
def test_message_to_bytes_and_back(literal: bytes, layer: AODV, value: object) -> None:
    assert raw(layer) == literal
    assert value.encode() == literal  # type: ignore[attr-defined]
    assert decode(literal) == value
    back = AODV(literal)
    assert type(back) is type(layer)
    assert back.fields == AODV(raw(layer)).fields
    assert raw(back) == literal


@pytest.mark.parametrize(
    ("flags", "kw"),
    [("J", "join"), ("R", "repair"), ("G", "gratuitous"), ("D", "destination_only"), ("U", "unknown_seq_no")],
)
def test_each_rreq_flag_bit(flags: str, kw: str) -> None:
    m = Rreq(rreq_id=1, dest_ip=A5, dest_seq_no=0, orig_ip=A1, orig_seq_no=1, **{kw: True})
    assert m.encode() == raw(
        AODVRreq(flags=flags, rreq_id=1, dest_ip="10.0.0.5", orig_ip="10.0.0.1", orig_seq_no=1)
    )
    assert decode(m.encode()) == m


def test_rerr_count_filled_at_build_time() -> None:
    layer = AODVRerr(unreachable=[AODVUnreachable(dest_ip="10.0.0.5", dest_seq_no=1)] * 3)
    assert layer.dest_count is None
    assert raw(layer)[3] == 3


def test_ip_udp_framing_matches_scapy() -> None:
    payload = RREQ_BYTES
    ours = build(A1, 0xFFFFFFFF, 7, payload, ident=42)
    ref = raw(
        IP(src="10.0.0.1", dst="255.255.255.255", ttl=7, id=42) / UDP(sport=654, dport=654) / Raw(payload)
    )
    assert ours == ref
    p = IP(ours)
    assert isinstance(p[UDP].payload, AODVRreq) and p[AODVRreq].rreq_id == 0x01020304


def test_extensions_after_message_are_ignored() -> None:
    ext = bytes.fromhex("01 04 000003e8")  # section 7.1 Hello Interval extension
    assert decode(RREP_BYTES + ext) == decode(RREP_BYTES)
    assert isinstance(AODV(RREP_BYTES + ext).payload, Raw)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"\x00", "unknown_type"),
        (b"\x05\x00", "unknown_type"),
        (b"\xff" * 30, "unknown_type"),
        (RREQ_BYTES[:23], "truncated"),
        (RREP_BYTES[:19], "truncated"),
        (RERR_BYTES[:11], "truncated"),
        (RERR_BYTES[:3], "truncated"),
        (bytes.fromhex("03 00 00 00"), "zero_dest_count"),
        (b"\x04", "truncated"),
    ],
)
def test_unknown_and_truncated(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedMessage) as exc:
        decode(data)
    assert exc.value.reason == reason
    if data:
        assert isinstance(AODV(data), AODVUnknown) or reason == "zero_dest_count"


@pytest.mark.parametrize(
    ("payload", "drop", "counter"),
    [
        (b"\x07\x00\x00\x00", "aodv_unknown_type", "aodv_unknown_type"),
        (RREQ_BYTES[:10], "aodv_malformed", "aodv_truncated"),
        (RERR_BYTES[:8], "aodv_malformed", "aodv_truncated"),
        (b"", "aodv_malformed", "aodv_empty"),
    ],
)
def test_router_counts_and_drops_bad_messages(payload: bytes, drop: str, counter: str) -> None:
    c = make_core(3)
    pkt = build(A1, 0xFFFFFFFF, 1, payload)
    acts = c.on_event(FromAir(pkt, 1, 0xFFFFFFFF), 0)
    assert acts == [Drop(pkt, drop)]
    assert c.ctx.counters.malformed[counter] == 1
    assert c.ctx.counters.routing_sent == {}


def test_codec_roundtrip_random_values() -> None:
    rng = random.Random(3)
    for _ in range(200):
        u = lambda: rng.getrandbits(32)  # noqa: E731
        m = Rreq(u(), u(), u(), u(), u(), rng.getrandbits(8), *(rng.random() < 0.5 for _ in range(5)))
        assert decode(m.encode()) == m
        assert raw(AODV(m.encode())) == m.encode()
        r = Rrep(
            u(), u(), u(), u(), rng.getrandbits(8), rng.random() < 0.5, rng.random() < 0.5, rng.getrandbits(5)
        )
        assert decode(r.encode()) == r
        assert raw(AODV(r.encode())) == r.encode()
        e = Rerr(tuple((u(), u()) for _ in range(rng.randint(1, 20))), rng.random() < 0.5)
        assert decode(e.encode()) == e
        assert raw(AODV(e.encode())) == e.encode()
