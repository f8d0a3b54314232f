"""IPv4/UDP framing of AODV control messages on raw bytes (no scapy on the router's path).

RFC 3561 section 5: AODV messages are UDP datagrams to port 654; the source port is 654 too
(AODV-UU, ns-3). Section 6.3: a RREQ goes to the limited broadcast address 255.255.255.255 with
the IP TTL of the expanding ring; section 6.11: a RERR to several precursors goes to
255.255.255.255 with TTL 1. Checksums are RFC 1071 (IP header) and RFC 768 (UDP, with the
pseudo-header; a computed 0 is sent as 0xFFFF). Checked against scapy in the packet tests.
"""

from __future__ import annotations

import struct

from nodes.core import ipv4

from .messages import AODV_PORT

LIMITED_BROADCAST: int = 0xFFFF_FFFF
"""255.255.255.255."""

_IP = struct.Struct("!BBHHHBBHII")
_UDP = struct.Struct("!HHHH")


def build(src_ip: int, dst_ip: int, ttl: int, payload: bytes, ident: int = 0) -> bytes:
    """An IPv4 + UDP (654 -> 654) packet carrying ``payload``."""
    udp_len = 8 + len(payload)
    total = 20 + udp_len
    pseudo = struct.pack("!IIBBH", src_ip, dst_ip, 0, ipv4.IPPROTO_UDP, udp_len)
    udp_head = _UDP.pack(AODV_PORT, AODV_PORT, udp_len, 0)
    csum = ipv4.checksum(pseudo + udp_head + payload) or 0xFFFF
    ip_head = bytearray(_IP.pack(0x45, 0, total, ident & 0xFFFF, 0, ttl, ipv4.IPPROTO_UDP, 0, src_ip, dst_ip))
    ipv4.set_header_checksum(ip_head)
    return bytes(ip_head) + _UDP.pack(AODV_PORT, AODV_PORT, udp_len, csum) + payload


def is_aodv(packet: bytes, ihl: int) -> bool:
    """An IPv4 packet (already ``ipv4.check``-ed) is UDP to port 654."""
    return (
        packet[9] == ipv4.IPPROTO_UDP
        and len(packet) >= ihl + 8
        and ((packet[ihl + 2] << 8) | packet[ihl + 3]) == AODV_PORT
    )


def udp_payload(packet: bytes, ihl: int) -> bytes | None:
    """The UDP payload of a ``is_aodv`` packet, or None when the UDP length is inconsistent."""
    total = (packet[2] << 8) | packet[3]
    udp_len = (packet[ihl + 4] << 8) | packet[ihl + 5]
    if udp_len < 8 or ihl + udp_len > total:
        return None
    return packet[ihl + 8 : ihl + udp_len]
