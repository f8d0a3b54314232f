"""Station addressing (docs/interfaces.md section 1).

Station ``N`` (1-based) has IPv4 ``10.0.<N >> 8>.<N & 255>`` in ``10.0.0.0/16`` and the MAC
``02:00:00:00:<N >> 8>:<N & 255>`` in the 802.11 mirror; ``BROADCAST`` is the all-stations id.
"""

from __future__ import annotations

import ipaddress

BROADCAST: int = 0xFFFF_FFFF
"""Station id meaning every station in range (link-layer broadcast)."""

NET_PREFIX_LEN: int = 16
"""Prefix length of the stations' network 10.0.0.0/16."""

_NET_BASE: int = 0x0A00_0000  # 10.0.0.0
MAX_STATIONS: int = 0xFFFE
"""Largest station id that maps into 10.0.0.0/16 without touching the broadcast address."""


def station_ip_int(station: int) -> int:
    """The station's IPv4 address as a 32-bit integer."""
    if not 1 <= station <= MAX_STATIONS:
        raise ValueError(f"station id {station} out of range 1..{MAX_STATIONS}")
    return _NET_BASE | station


def station_ip(station: int) -> str:
    """The station's IPv4 address in dotted form (``staN`` -> ``10.0.0.N`` for N < 255)."""
    return str(ipaddress.IPv4Address(station_ip_int(station)))


def station_ip_bytes(station: int) -> bytes:
    """The station's IPv4 address as 4 network-order bytes."""
    return station_ip_int(station).to_bytes(4, "big")


def ip_to_station(addr: bytes | int | str) -> int | None:
    """Station id of an address in 10.0.0.0/16, or None for any other address."""
    if isinstance(addr, bytes):
        value = int.from_bytes(addr, "big")
    elif isinstance(addr, str):
        value = int(ipaddress.IPv4Address(addr))
    else:
        value = addr
    if value & 0xFFFF_0000 != _NET_BASE:
        return None
    station = value & 0xFFFF
    return station if 1 <= station <= MAX_STATIONS else None


def station_mac(station: int) -> bytes:
    """The station's 6-byte MAC address (locally administered); broadcast is ff:ff:ff:ff:ff:ff."""
    if station == BROADCAST:
        return b"\xff" * 6
    return bytes((0x02, 0, 0, 0, (station >> 8) & 0xFF, station & 0xFF))
