"""IP in IP between a station and the gateway (nodes/core/ipip.py, RFC 2003): built bytes compared
with scapy's, unwrapped back, and which packets are tunnelled where."""

from __future__ import annotations

import ipaddress

import pytest
from scapy.layers.inet import IP, TCP
from scapy.packet import raw

from nodes.core.ipip import HEADER_BYTES, IPPROTO_IPIP, WiredRoute, decapsulate, encapsulate

INNER = raw(IP(src="10.1.0.1", dst="10.0.0.4", ttl=63, flags="DF", id=7) / TCP(sport=5201, dport=40000))


def test_outer_header_is_rfc2003() -> None:
    out = encapsulate(INNER, 1, 4, ident=0x1234)
    want = raw(IP(src="10.0.0.1", dst="10.0.0.4", ttl=64, proto=4, flags="DF", id=0x1234) / INNER)
    assert out == want  # scapy fills the checksum and length
    assert out[9] == IPPROTO_IPIP and len(out) == len(INNER) + HEADER_BYTES


def test_df_copied_only_when_set() -> None:
    no_df = raw(IP(src="10.0.0.3", dst="10.1.0.1", id=1) / TCP())
    assert encapsulate(no_df, 3, 1, 9)[6] & 0x40 == 0


def test_decapsulate_round_trip_and_rejects() -> None:
    assert decapsulate(encapsulate(INNER, 2, 3, 1)) == INNER
    assert decapsulate(INNER) is None  # not protocol 4
    assert decapsulate(encapsulate(INNER, 2, 3, 1)[:30]) is None  # truncated inner header


ROUTE = WiredRoute(ipaddress.IPv4Network("10.1.0.0/24"), gateway=2)


@pytest.mark.parametrize(
    "src,dst,want",
    [
        ("10.0.0.3", "10.0.0.5", None),  # station to station: no tunnel
        ("10.0.0.3", "10.1.0.7", 2),  # to the wired subnet: to the gateway
        ("10.1.0.7", "10.0.0.3", 3),  # from a wired host (at the gateway): to the destination
        ("10.0.0.3", "192.0.2.1", None),  # elsewhere: left to the routing core (dropped there)
    ],
)
def test_tunnel_end(src: str, dst: str, want: int | None) -> None:
    assert ROUTE.tunnel_end(raw(IP(src=src, dst=dst) / TCP())) == want
