"""nodes.tcpctl.packets against scapy, byte for byte."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, TCP

from nodes.tcpctl import packets as P

A, B, R = "10.0.0.1", "10.0.0.3", "10.0.0.2"
AB, BB, RB = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 3]), bytes([10, 0, 0, 2])


def sc_ack(
    window: int = 502, flags: str = "A", payload: bytes = b"", tos: int = 0, ident: int = 0x1234
) -> bytes:
    return bytes(
        IP(src=B, dst=A, id=ident, flags="DF", ttl=64, tos=tos)
        / TCP(
            sport=5201,
            dport=40000,
            seq=1000,
            ack=2000,
            flags=flags,
            window=window,
            options=[("NOP", None), ("NOP", None), ("Timestamp", (111, 222))],
        )
        / payload
    )


def test_build_tcp_matches_scapy() -> None:
    ours = P.build_tcp(
        BB, AB, 5201, 40000, 1000, 2000, P.ACK, 502, P.timestamp_option(111, 222), ip_id=0x1234
    )
    assert ours == sc_ack()


def test_build_tcp_with_payload_matches_scapy() -> None:
    ours = P.build_tcp(
        BB,
        AB,
        5201,
        40000,
        1000,
        2000,
        P.ACK | P.PSH,
        502,
        P.timestamp_option(111, 222),
        b"hello world",
        ip_id=0x1234,
    )
    assert ours == sc_ack(flags="PA", payload=b"hello world")


@pytest.mark.parametrize("window", [0, 1, 65535, 17])
def test_set_window_incremental_checksum(window: int) -> None:
    buf = bytearray(sc_ack(payload=b"xyz"))
    P.set_window(buf, window)
    assert bytes(buf) == sc_ack(window=window, payload=b"xyz")
    assert P.tcp_checksum_ok(buf)


def test_set_ip_ecn_and_tcp_flags() -> None:
    buf = bytearray(sc_ack())
    P.set_ip_ecn(buf, P.ECN_CE)
    P.set_tcp_flags(buf, set_bits=P.ECE)
    assert bytes(buf) == sc_ack(tos=3, flags="AE")
    P.set_tcp_flags(buf, clear_bits=P.ECE)
    P.set_ip_ecn(buf, P.ECN_NOT_ECT)
    assert bytes(buf) == sc_ack()


def test_parse_tcp_fields() -> None:
    v = P.parse_tcp(sc_ack(payload=b"abcd"))
    assert v is not None
    assert (v.sport, v.dport, v.seq, v.ack, v.window, v.payload_len) == (5201, 40000, 1000, 2000, 502, 4)
    assert (v.ts_val, v.ts_ecr, v.end_seq) == (111, 222, 1004)


@pytest.mark.parametrize("cut", [0, 10, 20, 39])
def test_truncated_is_not_tcp(cut: int) -> None:
    assert P.parse_tcp(sc_ack()[:cut]) is None


def test_icmp_dest_unreachable_matches_scapy() -> None:
    data = bytes(
        IP(src=A, dst=B, id=7, flags="DF")
        / TCP(sport=40000, dport=5201, seq=5555, ack=1, flags="PA")
        / (b"p" * 100)
    )
    ours = P.icmp_dest_unreachable(data, RB, P.ICMP_HOST_UNREACH, ip_id=9)
    ref = bytes(IP(src=R, dst=A, id=9, ttl=64, tos=0xC0) / ICMP(type=3, code=1) / data[:28])
    assert ours == ref
    code, q = P.parse_icmp_unreach(ours)  # type: ignore[misc]
    assert code == 1
    assert (q.src, q.dst, q.sport, q.dport, q.seq) == (AB, BB, 40000, 5201, 5555)


def test_route_control_mark_in_ip_id() -> None:
    buf = bytearray(sc_ack())
    assert P.write_rc_mark(buf, 0x1ABC, True)
    assert bytes(buf) == sc_ack(ident=0x8000 | 0x1ABC)
    assert P.read_rc_mark(buf) == (0x1ABC, True)
    frag = bytearray(bytes(IP(src=A, dst=B, flags=0) / TCP()))
    assert not P.write_rc_mark(frag, 1, False)
    assert P.read_rc_mark(frag) is None


def test_route_control_echo_option_matches_scapy() -> None:
    ours = P.add_rc_echo(sc_ack(payload=b"q"), 5, True)
    ref = bytes(
        IP(src=B, dst=A, id=0x1234, flags="DF", ttl=64)
        / TCP(
            sport=5201,
            dport=40000,
            seq=1000,
            ack=2000,
            flags="A",
            window=502,
            options=[
                ("NOP", None),
                ("NOP", None),
                ("Timestamp", (111, 222)),
                ("NOP", None),
                ("NOP", None),
                (253, bytes([0x4D, 0x54, 0x80, 0x05])),
            ],
        )
        / b"q"
    )
    assert ours == ref
    assert P.read_rc_echo(ours) == (5, True)
    assert P.read_rc_echo(sc_ack()) is None


def test_echo_needs_room() -> None:
    big = bytes(IP(src=B, dst=A, flags="DF") / TCP(options=[("NOP", None)] * 40))
    assert P.add_rc_echo(big, 1, False) is None
    assert P.add_rc_echo(sc_ack(payload=b"x" * 1448), 1, False, mtu=1500) is None


@pytest.mark.parametrize(
    "a,b,lt", [(1, 2, True), (2, 1, False), (0xFFFFFFF0, 5, True), (5, 0xFFFFFFF0, False)]
)
def test_seq_compare_wraps(a: int, b: int, lt: bool) -> None:
    assert P.seq_lt(a, b) is lt
