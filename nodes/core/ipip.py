"""IP in IP encapsulation between a MANET station and the gateway to a wired segment (RFC 2003).

The routing cores (static, DSR, AODV) address stations only (``10.0.0.0/16``, nodes.core.addr).
A packet to or from a wired host (``wired.subnet``, docs/scenarios.md) therefore crosses the
MANET inside an outer IPv4 header between two stations, like RFC 2003's tunnel between an
encapsulator and a decapsulator:

- a station's kernel routes the wired subnet into ``tun0``; its router wraps the packet with
  outer source = the station, outer destination = the gateway station;
- the gateway's kernel forwards a wired host's packet for station N into ``tun0``; its router
  wraps it with outer destination N;
- the station the outer header names unwraps it and writes the inner packet to its kernel, which
  delivers it (a MANET station) or forwards it to the wired interface (the gateway).

The cores see an ordinary station-to-station packet (protocol 4). RFC 2003 section 3.1: the
outer TTL is a fresh value, the outer DF bit is copied from the inner header, the inner header is
unchanged except that the encapsulator decrements its TTL (the kernel did so when forwarding).
Sans-I/O: bytes in, bytes out.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from nodes.core.addr import ip_to_station, station_ip_bytes

IPPROTO_IPIP = 4
"""RFC 2003 section 3.1: "Protocol 4"."""
OUTER_TTL = 64
"""RFC 2003 section 3.1: the outer TTL is set "to a value sufficient for the datagram to reach
the tunnel exit point"; 64 is the Linux default for locally generated packets."""
HEADER_BYTES = 20
"""The outer header (no options): what a wired path's MTU gives up (docs/scenarios.md, wired)."""
_DF = 0x4000
_HDR = struct.Struct("!BBHHHBBH4s4s")


def _checksum(header: bytes) -> int:
    total: int = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def encapsulate(inner: bytes, src_station: int, dst_station: int, ident: int) -> bytes:
    """``inner`` wrapped in an outer IPv4 header from ``src_station`` to ``dst_station``."""
    flags = ((inner[6] << 8) | inner[7]) & _DF
    total = HEADER_BYTES + len(inner)
    hdr = _HDR.pack(
        0x45, inner[1], total, ident & 0xFFFF, flags, OUTER_TTL, IPPROTO_IPIP, 0,
        station_ip_bytes(src_station), station_ip_bytes(dst_station),
    )  # fmt: skip
    csum = _checksum(hdr)
    return hdr[:10] + csum.to_bytes(2, "big") + hdr[12:] + inner


def decapsulate(packet: bytes) -> bytes | None:
    """The inner packet of an IP-in-IP packet, or None when ``packet`` is not one."""
    if len(packet) < 2 * HEADER_BYTES or packet[9] != IPPROTO_IPIP or packet[0] >> 4 != 4:
        return None
    ihl = (packet[0] & 0x0F) * 4
    total = (packet[2] << 8) | packet[3]
    inner = packet[ihl:total]
    if len(inner) < HEADER_BYTES or inner[0] >> 4 != 4:
        return None
    return bytes(inner)


@dataclass(frozen=True, slots=True)
class WiredRoute:
    """A station's view of the wired segment: its subnet and the gateway station."""

    subnet: ipaddress.IPv4Network
    gateway: int

    def tunnel_end(self, packet: bytes) -> int | None:
        """The station a packet from the local kernel must be tunnelled to, or None: no tunnel.

        A packet between two stations is not tunnelled. One for the wired subnet goes to the
        gateway; one from a wired host (forwarded by the gateway's kernel) goes to its
        destination station.
        """
        src, dst = packet[12:16], packet[16:20]
        dst_sid = ip_to_station(dst)
        if dst_sid is not None:
            return None if ip_to_station(src) is not None else dst_sid
        if ipaddress.IPv4Address(dst) in self.subnet:
            return self.gateway
        return None
