"""The DSR data path on raw bytes: add, follow, rewrite and strip the DSR Source Route option.

scapy would cap a router near 2,000 packets/s; these functions slice and ``struct``-pack in a few
microseconds. ``tests/packets/test_dsr_formats.py`` checks them byte for byte against the scapy
layers of ``nodes.formats.dsr``.

Segments Left. RFC 4728 section 8.1.5 says: "decrement the value of the Segments Left field by 1.
Let i equal n minus Segments Left. This is the index of the next address to be visited in the
Address vector." Read with 1-based ``Address[i]`` this names the forwarding node itself (the
off-by-one noted by several implementations), so we use the reading that agrees with section
8.3.6 (a salvaging node is ``Address[1]`` with Segments Left = n) and with DSR-UU: a packet is
sent with Segments Left = s towards ``Address[n - s + 1]`` (1-based), or towards the IP destination
when s = 0. The receiver of a packet with s > 0 is ``Address[n - s + 1]``; it decrements s and
sends the packet on to ``Address[n - s + 1]`` (new s) or to the IP destination.
"""

from __future__ import annotations

import struct

from nodes.core.addr import ip_to_station, station_ip_bytes
from nodes.core.ipv4 import checksum
from nodes.protocols.dsr.options import (
    DSR_HEADER_LEN,
    IPPROTO_DSR,
    OPT_PAD1,
    OPT_SRCRT,
    MalformedDsr,
)


def _fix_ip(buf: bytearray, delta: int, proto: int | None = None) -> None:
    total = ((buf[2] << 8) | buf[3]) + delta
    buf[2] = total >> 8
    buf[3] = total & 0xFF
    if proto is not None:
        buf[9] = proto
    ihl = (buf[0] & 0x0F) * 4
    buf[10] = buf[11] = 0
    buf[10:12] = checksum(buf[:ihl]).to_bytes(2, "big")


def source_route_bytes(addresses: tuple[int, ...] | list[int], segs_left: int, salvage: int = 0) -> bytes:
    """The DSR Source Route option (F = L = 0)."""
    flags = ((salvage & 0x0F) << 6) | (segs_left & 0x3F)
    return struct.pack("!BBH", OPT_SRCRT, 2 + 4 * len(addresses), flags) + b"".join(
        station_ip_bytes(a) for a in addresses
    )


def add_source_route(ip_packet: bytes, addresses: tuple[int, ...] | list[int], salvage: int = 0) -> bytes:
    """Section 8.1.2/8.1.3: insert a DSR Options header holding one Source Route option.

    The IP Protocol becomes 48 and moves to the header's Next Header; Segments Left = n.
    """
    ihl = (ip_packet[0] & 0x0F) * 4
    sr = source_route_bytes(addresses, len(addresses), salvage)
    hdr = struct.pack("!BBH", ip_packet[9], 0, len(sr))
    buf = bytearray(ip_packet[:ihl])
    _fix_ip(buf, DSR_HEADER_LEN + len(sr), IPPROTO_DSR)
    return bytes(buf) + hdr + sr + ip_packet[ihl:]


def find_source_route(packet: bytes | bytearray, ihl: int) -> int:
    """Offset of the Source Route option in the DSR header, or -1 (no range checks beyond bounds)."""
    plen = (packet[ihl + 2] << 8) | packet[ihl + 3]
    i = ihl + DSR_HEADER_LEN
    end = i + plen
    while i < end:
        t = packet[i]
        if t == OPT_PAD1:
            i += 1
            continue
        if t == OPT_SRCRT:
            return i
        if i + 1 >= end:
            return -1
        i += 2 + packet[i + 1]
    return -1


def route_of(packet: bytes | bytearray, sr_off: int) -> tuple[tuple[int, ...], int, int]:
    """``(addresses, segs_left, salvage)`` of the Source Route option at ``sr_off``."""
    ln = packet[sr_off + 1]
    if ln < 2 or (ln - 2) % 4 or sr_off + 2 + ln > len(packet):
        raise MalformedDsr("source route length")
    n = (ln - 2) // 4
    flags = (packet[sr_off + 2] << 8) | packet[sr_off + 3]
    addrs = []
    for k in range(n):
        o = sr_off + 4 + 4 * k
        s = ip_to_station(bytes(packet[o : o + 4]))
        if s is None:
            raise MalformedDsr("address outside the stations' network")
        addrs.append(s)
    sl = flags & 0x3F
    if sl > n:
        raise MalformedDsr("segments left > n")
    return tuple(addrs), sl, (flags >> 6) & 0x0F


def advance(buf: bytearray, sr_off: int) -> None:
    """Decrement Segments Left in place (the caller checked it is > 0)."""
    buf[sr_off + 3] = (buf[sr_off + 3] & 0xC0) | ((buf[sr_off + 3] & 0x3F) - 1)


def next_index(n: int, segs_left: int) -> int:
    """0-based index in Address[] of the node a packet with ``segs_left`` goes to (n: dst)."""
    return n - segs_left if segs_left else n


def replace_source_route(packet: bytes, sr_off: int, new_sr: bytes) -> bytes:
    """Swap the Source Route option at ``sr_off`` for ``new_sr`` (salvaging, section 8.3.6)."""
    ihl = (packet[0] & 0x0F) * 4
    old_len = 2 + packet[sr_off + 1]
    delta = len(new_sr) - old_len
    buf = bytearray(packet[:sr_off]) + new_sr + packet[sr_off + old_len :]
    plen = ((buf[ihl + 2] << 8) | buf[ihl + 3]) + delta
    buf[ihl + 2] = plen >> 8
    buf[ihl + 3] = plen & 0xFF
    _fix_ip(buf, delta)
    return bytes(buf)


def strip(packet: bytes) -> bytes:
    """Section 8.1.4: at the destination remove the DSR Options header; the IP Protocol is the
    header's Next Header again."""
    ihl = (packet[0] & 0x0F) * 4
    plen = (packet[ihl + 2] << 8) | packet[ihl + 3]
    cut = DSR_HEADER_LEN + plen
    buf = bytearray(packet[:ihl])
    _fix_ip(buf, -cut, packet[ihl])
    return bytes(buf) + packet[ihl + cut :]


def insert_option(packet: bytes, opt: bytes) -> bytes:
    """Put ``opt`` first in the DSR header (e.g. an Acknowledgement Request)."""
    ihl = (packet[0] & 0x0F) * 4
    at = ihl + DSR_HEADER_LEN
    buf = bytearray(packet[:at]) + opt + packet[at:]
    plen = ((buf[ihl + 2] << 8) | buf[ihl + 3]) + len(opt)
    buf[ihl + 2] = plen >> 8
    buf[ihl + 3] = plen & 0xFF
    _fix_ip(buf, len(opt))
    return bytes(buf)


def remove_option_type(packet: bytes, opt_type: int) -> bytes:
    """Drop every option of ``opt_type`` from the DSR header (a stale Acknowledgement Request)."""
    ihl = (packet[0] & 0x0F) * 4
    plen = (packet[ihl + 2] << 8) | packet[ihl + 3]
    i = ihl + DSR_HEADER_LEN
    end = i + plen
    keep = bytearray()
    while i < end:
        t = packet[i]
        ln = 1 if t == OPT_PAD1 else 2 + packet[i + 1]
        if t != opt_type:
            keep += packet[i : i + ln]
        i += ln
    delta = len(keep) - plen
    if not delta:
        return packet
    buf = bytearray(packet[: ihl + DSR_HEADER_LEN]) + keep + packet[end:]
    buf[ihl + 2] = len(keep) >> 8
    buf[ihl + 3] = len(keep) & 0xFF
    _fix_ip(buf, delta)
    return bytes(buf)
