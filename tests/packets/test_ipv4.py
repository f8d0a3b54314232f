"""nodes.core.ipv4 (raw-bytes IPv4 helpers of the data path) against scapy, byte for byte."""

from __future__ import annotations

import random

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.packet import Raw, raw

from nodes.core import ipv4


def random_packets(n: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        opts = (
            []
            if rng.random() < 0.7
            else [IPOption_NOP(), IPOption_RR(routers=[f"10.0.0.{rng.randint(1, 9)}"])]
        )
        l4 = rng.choice(
            [
                TCP(sport=rng.randint(1, 65535), dport=5201, seq=rng.getrandbits(32)),
                UDP(sport=rng.randint(1, 65535), dport=654),
                ICMP(id=rng.randint(0, 65535)),
            ]
        )
        p = (
            IP(
                src=f"10.0.{rng.randint(0, 1)}.{rng.randint(1, 254)}",
                dst=f"10.0.0.{rng.randint(1, 254)}",
                ttl=rng.randint(2, 255),
                id=rng.getrandbits(16),
                tos=rng.getrandbits(8),
                flags=rng.choice(["", "DF"]),
                options=opts,
            )
            / l4
            / Raw(rng.randbytes(rng.randint(0, 1400)))
        )
        out.append(raw(p))
    return out


PACKETS = random_packets(300)


@pytest.mark.parametrize("i", range(0, 300, 1))
def test_decrement_ttl_matches_scapy_rebuild(i: int) -> None:
    p = PACKETS[i]
    buf = bytearray(p)
    assert ipv4.decrement_ttl(buf)
    ref = IP(p)
    ref.ttl -= 1
    del ref.chksum
    assert bytes(buf) == raw(ref)
    assert ipv4.header_checksum_ok(buf)


def test_accessors_match_scapy() -> None:
    for p in PACKETS[:50]:
        s = IP(p)
        assert ipv4.check(p) == s.ihl * 4
        assert ipv4.header_len(p) == s.ihl * 4
        assert ipv4.proto(p) == s.proto
        assert ipv4.ttl(p) == s.ttl
        assert ipv4.src(p) == bytes(map(int, s.src.split(".")))
        assert ipv4.dst(p) == bytes(map(int, s.dst.split(".")))
        assert ipv4.header_checksum_ok(p)


def test_checksum_matches_scapy() -> None:
    for p in PACKETS[:50]:
        buf = bytearray(p)
        buf[10:12] = b"\xff\xff"
        ipv4.set_header_checksum(buf)
        assert bytes(buf) == p
    assert ipv4.checksum(b"\x01") == ipv4.checksum(b"\x01\x00")


@pytest.mark.parametrize("ttl", [0, 1])
def test_ttl_zero_or_one_is_not_forwarded(ttl: int) -> None:
    p = bytearray(raw(IP(dst="10.0.0.3", ttl=ttl) / UDP()))
    before = bytes(p)
    assert not ipv4.decrement_ttl(p)
    assert bytes(p) == before


def test_checksum_carry_edge_cases() -> None:
    # TTL/proto words and checksums at the 0x0000/0xFFFF boundary (RFC 1624 section 3)
    for ttl in (2, 0x80, 0xFF):
        for ident in range(0, 65536, 4099):
            p = raw(IP(dst="10.0.0.3", ttl=ttl, id=ident) / UDP())
            buf = bytearray(p)
            assert ipv4.decrement_ttl(buf)
            assert ipv4.header_checksum_ok(buf)
            ref = IP(p)
            ref.ttl -= 1
            del ref.chksum
            assert bytes(buf) == raw(ref)


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"\x45" * 19,
        b"\x65" + bytes(19),
        b"\x44" + bytes(19),
        b"\x46\x00\x00\x14" + bytes(16),  # IHL 24 > length
        b"\x45\x00\x00\x10" + bytes(16),  # total length < IHL
        b"\x45\x00\x00\x30" + bytes(16),
    ],  # total length > buffer
)
def test_malformed_is_rejected(bad: bytes) -> None:
    with pytest.raises(ipv4.MalformedPacket):
        ipv4.check(bad)
