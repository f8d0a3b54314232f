"""DSR options header codec on raw bytes (RFC 4728 section 6), for the protocol core.

The scapy layers in ``nodes.formats.dsr`` are the specification of the format (tshark, pcaps,
tests); this module is the ``struct`` codec the router uses, tested byte for byte against them
(``tests/packets/test_dsr_formats.py``). It never raises anything but :class:`MalformedDsr` on bad
input, so a router cannot die on a frame it does not understand (``tests/fuzz/test_dsr_fuzz.py``).

RFC 4728 section 6.1, the fixed part of the DSR Options header::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |  Next Header  |F|   Reserved  |        Payload Length         |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    .                            Options                            .

Addresses inside options are IPv4 addresses of stations (docs/interfaces.md section 1); the codec
maps them to station ids and treats any other address as malformed.

Extension options (Yu 2004's ``conn_list`` for EPLN/BEAD, DSR-Update's cache notifications) are
added with :func:`register_option`: an option class with a ``TYPE``, ``encode()`` and a decoder.
Unknown types decode to :class:`RawOption` and are carried unchanged (section 8.1.6).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from nodes.core.addr import ip_to_station, station_ip_bytes
from nodes.core.ipv4 import checksum

IPPROTO_DSR = 48
NO_NEXT_HEADER = 59
"""RFC 4728 section 6.1: the Next Header value when no payload follows (IPv6's 59)."""

OPT_PADN = 0
OPT_RREQ = 1
OPT_RREP = 2
OPT_RERR = 3
OPT_ACK = 32
OPT_SRCRT = 96
OPT_ACKREQ = 160
OPT_PAD1 = 224

OPT_CONN_LIST = 17
"""Reserved for Yu 2004's ``conn_list`` (EPLN/BEAD notification in a ROUTE ERROR).

Unassigned by RFC 4728 section 10. ``17 & 0x80 == 0`` (a node that does not know it sends no
OPTION_NOT_SUPPORTED error) and ``17 & 0x60 == 0`` (it skips the option and continues, section
8.1.6), so a conn_list crosses routers without the extension unharmed. The extension module
registers its codec with :func:`register_option` under this number."""

OPT_EXPERIMENTAL_FIRST = 18
"""Further extension options (e.g. DSR-Update notifications) take numbers from 18 to 31 (same
two rules as :data:`OPT_CONN_LIST`)."""

ERR_NODE_UNREACHABLE = 1
ERR_FLOW_STATE_NOT_SUPPORTED = 2
ERR_OPTION_NOT_SUPPORTED = 3

DSR_HEADER_LEN = 4
MAX_OPT_ADDRESSES = (255 - 6) // 4
"""Addresses that fit in one Route Request (Opt Data Len is one byte): 62."""


class MalformedDsr(ValueError):
    """The bytes are not a well-formed DSR packet (counted and dropped, never raised further)."""


def _addr(data: bytes | memoryview, off: int) -> int:
    s = ip_to_station(bytes(data[off : off + 4]))
    if s is None:
        raise MalformedDsr("address outside the stations' network")
    return s


def _addrs(data: bytes | memoryview, off: int, n: int) -> tuple[int, ...]:
    return tuple(_addr(data, off + 4 * i) for i in range(n))


def _pack_addrs(addrs: Sequence[int]) -> bytes:
    return b"".join(station_ip_bytes(a) for a in addrs)


class DsrOption(Protocol):
    """What every option (built-in or registered by an extension) provides."""

    TYPE: ClassVar[int]

    def encode(self) -> bytes: ...


# ---------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """Section 6.2: Option Type 1, Opt Data Len 6 + 4n, Identification, Target Address, route
    record Address[1..n] (the nodes the request passed through, initiator excluded)."""

    TYPE: ClassVar[int] = OPT_RREQ
    rreq_id: int
    target: int
    addresses: tuple[int, ...] = ()

    def encode(self) -> bytes:
        return (
            struct.pack("!BBH", OPT_RREQ, 6 + 4 * len(self.addresses), self.rreq_id)
            + station_ip_bytes(self.target)
            + _pack_addrs(self.addresses)
        )


@dataclass(frozen=True, slots=True)
class RouteReply:
    """Section 6.3: Option Type 2, Opt Data Len 1 + 4n, L bit, Address[1..n]: the route from the
    initiator (the IP destination of the reply) to the target, which is Address[n]."""

    TYPE: ClassVar[int] = OPT_RREP
    addresses: tuple[int, ...]
    last_hop_external: bool = False

    def encode(self) -> bytes:
        return struct.pack(
            "!BBB", OPT_RREP, 1 + 4 * len(self.addresses), 0x80 if self.last_hop_external else 0
        ) + _pack_addrs(self.addresses)


@dataclass(frozen=True, slots=True)
class RouteError:
    """Section 6.4: Option Type 3, Opt Data Len 10 + type-specific, Error Type, Salvage (4 bits),
    Error Source/Destination Address; NODE_UNREACHABLE carries the Unreachable Node Address and
    OPTION_NOT_SUPPORTED the Unsupported Opt byte (``tsi`` holds other types' bytes)."""

    TYPE: ClassVar[int] = OPT_RERR
    err_src: int
    err_dst: int
    unreachable: int | None = None
    err_type: int = ERR_NODE_UNREACHABLE
    salvage: int = 0
    unsupported_opt: int | None = None
    tsi: bytes = b""

    @property
    def link(self) -> tuple[int, int] | None:
        """The broken link (Error Source -> Unreachable Node) of a NODE_UNREACHABLE error."""
        if self.err_type == ERR_NODE_UNREACHABLE and self.unreachable is not None:
            return (self.err_src, self.unreachable)
        return None

    def encode(self) -> bytes:
        if self.err_type == ERR_NODE_UNREACHABLE:
            tsi = station_ip_bytes(self.unreachable if self.unreachable is not None else self.err_src)
        elif self.err_type == ERR_OPTION_NOT_SUPPORTED:
            tsi = bytes((self.unsupported_opt or 0,))
        else:
            tsi = self.tsi
        return (
            struct.pack("!BBBB", OPT_RERR, 10 + len(tsi), self.err_type, self.salvage & 0x0F)
            + station_ip_bytes(self.err_src)
            + station_ip_bytes(self.err_dst)
            + tsi
        )


@dataclass(frozen=True, slots=True)
class AckRequest:
    """Section 6.5: Option Type 160, Opt Data Len 2, Identification."""

    TYPE: ClassVar[int] = OPT_ACKREQ
    ack_id: int

    def encode(self) -> bytes:
        return struct.pack("!BBH", OPT_ACKREQ, 2, self.ack_id)


@dataclass(frozen=True, slots=True)
class Ack:
    """Section 6.6: Option Type 32, Opt Data Len 10, Identification, ACK Source/Destination."""

    TYPE: ClassVar[int] = OPT_ACK
    ack_id: int
    ack_src: int
    ack_dst: int

    def encode(self) -> bytes:
        return (
            struct.pack("!BBH", OPT_ACK, 10, self.ack_id)
            + station_ip_bytes(self.ack_src)
            + station_ip_bytes(self.ack_dst)
        )


@dataclass(frozen=True, slots=True)
class SourceRoute:
    """Section 6.7: Option Type 96, Opt Data Len 2 + 4n, F, L, Salvage (4 bits), Segments Left
    (6 bits), Address[1..n] (the hops between the IP source, or the salvaging node, and the IP
    destination)."""

    TYPE: ClassVar[int] = OPT_SRCRT
    addresses: tuple[int, ...]
    segs_left: int
    salvage: int = 0
    first_hop_external: bool = False
    last_hop_external: bool = False

    def encode(self) -> bytes:
        flags = (
            (0x8000 if self.first_hop_external else 0)
            | (0x4000 if self.last_hop_external else 0)
            | ((self.salvage & 0x0F) << 6)
            | (self.segs_left & 0x3F)
        )
        return struct.pack("!BBH", OPT_SRCRT, 2 + 4 * len(self.addresses), flags) + _pack_addrs(
            self.addresses
        )


@dataclass(frozen=True, slots=True)
class Pad1:
    """Section 6.8: a single zero-length byte, Option Type 224."""

    TYPE: ClassVar[int] = OPT_PAD1

    def encode(self) -> bytes:
        return bytes((OPT_PAD1,))


@dataclass(frozen=True, slots=True)
class PadN:
    """Section 6.9: Option Type 0, Opt Data Len N, N zero bytes."""

    TYPE: ClassVar[int] = OPT_PADN
    n: int = 0

    def encode(self) -> bytes:
        return bytes((OPT_PADN, self.n)) + bytes(self.n)


@dataclass(frozen=True, slots=True)
class RawOption:
    """An option of a type nobody registered, kept byte for byte (section 8.1.6)."""

    TYPE: ClassVar[int] = -1
    opt_type: int
    data: bytes

    @property
    def action(self) -> int:
        """Section 8.1.6: ``Option Type & 0x60`` (0 skip, 0x20 remove, 0x40 mark, 0x60 drop)."""
        return self.opt_type & 0x60

    def encode(self) -> bytes:
        return bytes((self.opt_type, len(self.data))) + self.data


# ---------------------------------------------------------------- registry

Decoder = Callable[[bytes], DsrOption]
"""Decodes an option's data (the Opt Data Len bytes after type and length)."""


def _dec_rreq(d: bytes) -> DsrOption:
    if len(d) < 6 or (len(d) - 6) % 4:
        raise MalformedDsr("route request length")
    (rreq_id,) = struct.unpack_from("!H", d)
    return RouteRequest(rreq_id, _addr(d, 2), _addrs(d, 6, (len(d) - 6) // 4))


def _dec_rrep(d: bytes) -> DsrOption:
    if len(d) < 1 or (len(d) - 1) % 4:
        raise MalformedDsr("route reply length")
    return RouteReply(_addrs(d, 1, (len(d) - 1) // 4), bool(d[0] & 0x80))


def _dec_rerr(d: bytes) -> DsrOption:
    if len(d) < 10:
        raise MalformedDsr("route error length")
    err_type, salv = d[0], d[1] & 0x0F
    src, dst, tsi = _addr(d, 2), _addr(d, 6), bytes(d[10:])
    if err_type == ERR_NODE_UNREACHABLE:
        if len(tsi) != 4:
            raise MalformedDsr("NODE_UNREACHABLE length")
        return RouteError(src, dst, _addr(tsi, 0), err_type, salv)
    if err_type == ERR_OPTION_NOT_SUPPORTED:
        if len(tsi) != 1:
            raise MalformedDsr("OPTION_NOT_SUPPORTED length")
        return RouteError(src, dst, None, err_type, salv, unsupported_opt=tsi[0])
    return RouteError(src, dst, None, err_type, salv, tsi=tsi)


def _dec_ackreq(d: bytes) -> DsrOption:
    if len(d) != 2:
        raise MalformedDsr("acknowledgement request length")
    return AckRequest(struct.unpack("!H", d)[0])


def _dec_ack(d: bytes) -> DsrOption:
    if len(d) != 10:
        raise MalformedDsr("acknowledgement length")
    return Ack(struct.unpack_from("!H", d)[0], _addr(d, 2), _addr(d, 6))


def _dec_srcrt(d: bytes) -> DsrOption:
    if len(d) < 2 or (len(d) - 2) % 4:
        raise MalformedDsr("source route length")
    (flags,) = struct.unpack_from("!H", d)
    n = (len(d) - 2) // 4
    segs_left = flags & 0x3F
    if segs_left > n:
        # Section 8.1.5: "If the value of the Segments Left field is greater than n, then send an
        # ICMP Parameter Problem ... and discard the packet."
        raise MalformedDsr("segments left > n")
    return SourceRoute(
        _addrs(d, 2, n), segs_left, (flags >> 6) & 0x0F, bool(flags & 0x8000), bool(flags & 0x4000)
    )


def _dec_padn(d: bytes) -> DsrOption:
    return PadN(len(d))


OPTION_DECODERS: dict[int, Decoder] = {
    OPT_PADN: _dec_padn,
    OPT_RREQ: _dec_rreq,
    OPT_RREP: _dec_rrep,
    OPT_RERR: _dec_rerr,
    OPT_ACK: _dec_ack,
    OPT_SRCRT: _dec_srcrt,
    OPT_ACKREQ: _dec_ackreq,
}
"""Option Type -> decoder of its data. Pad1 (224) has no length byte and is handled inline."""


def register_option(opt_type: int, decoder: Decoder, *, replace: bool = False) -> None:
    """Let an extension module add an option type (e.g. :data:`OPT_CONN_LIST`)."""
    if not 0 <= opt_type <= 255 or opt_type == OPT_PAD1:
        raise ValueError(f"option type {opt_type} cannot be registered")
    if opt_type in OPTION_DECODERS and not replace:
        raise ValueError(f"option type {opt_type} is already registered")
    OPTION_DECODERS[opt_type] = decoder


def decode_options(data: bytes | memoryview) -> list[DsrOption]:
    """Decode the Options area of a DSR header (exactly ``len(data)`` bytes)."""
    out: list[DsrOption] = []
    i, end = 0, len(data)
    while i < end:
        t = data[i]
        if t == OPT_PAD1:
            out.append(Pad1())
            i += 1
            continue
        if i + 2 > end:
            raise MalformedDsr("truncated option header")
        ln = data[i + 1]
        if i + 2 + ln > end:
            raise MalformedDsr("option runs past the DSR header")
        body = bytes(data[i + 2 : i + 2 + ln])
        dec = OPTION_DECODERS.get(t)
        if dec is None:
            out.append(RawOption(t, body))
        else:
            try:
                out.append(dec(body))
            except MalformedDsr:
                raise
            except (ValueError, struct.error, IndexError) as exc:  # a registered decoder's error
                raise MalformedDsr(f"option {t}: {exc}") from exc
        i += 2 + ln
    return out


def encode_options(options: Sequence[DsrOption]) -> bytes:
    return b"".join(o.encode() for o in options)


# ---------------------------------------------------------------- whole packets


@dataclass(slots=True)
class DsrPacket:
    """A parsed IPv4 packet carrying a DSR Options header."""

    ihl: int
    src: int
    dst: int | None
    """IP destination as a station id; None for the limited broadcast 255.255.255.255."""
    ttl: int
    next_header: int
    flow_state: bool
    options: list[DsrOption]
    payload_off: int
    total_len: int

    def find(self, cls: type[DsrOption]) -> DsrOption | None:
        for o in self.options:
            if isinstance(o, cls):
                return o
        return None


BROADCAST_IP = b"\xff\xff\xff\xff"


def parse(packet: bytes) -> DsrPacket:
    """Parse an IPv4 packet with protocol 48; raise :class:`MalformedDsr` on anything wrong."""
    n = len(packet)
    if n < 20 or packet[0] >> 4 != 4:
        raise MalformedDsr("not an IPv4 packet")
    ihl = (packet[0] & 0x0F) * 4
    total = (packet[2] << 8) | packet[3]
    if ihl < 20 or total < ihl or total > n:
        raise MalformedDsr("bad IPv4 lengths")
    if packet[9] != IPPROTO_DSR:
        raise MalformedDsr("not a DSR packet")
    if total < ihl + DSR_HEADER_LEN:
        raise MalformedDsr("truncated DSR header")
    src = ip_to_station(packet[12:16])
    if src is None:
        raise MalformedDsr("source outside the stations' network")
    raw_dst = packet[16:20]
    dst = None if raw_dst == BROADCAST_IP else ip_to_station(raw_dst)
    if dst is None and raw_dst != BROADCAST_IP:
        raise MalformedDsr("destination outside the stations' network")
    nh, fl, plen = packet[ihl], packet[ihl + 1], (packet[ihl + 2] << 8) | packet[ihl + 3]
    opt_end = ihl + DSR_HEADER_LEN + plen
    if opt_end > total:
        raise MalformedDsr("DSR payload length past the packet")
    opts = decode_options(memoryview(packet)[ihl + DSR_HEADER_LEN : opt_end])
    return DsrPacket(ihl, src, dst, packet[8], nh, bool(fl & 0x80), opts, opt_end, total)


def ip_header(
    src: int, dst: int | None, proto: int, payload_len: int, ttl: int = 64, ident: int = 0
) -> bytes:
    """A 20-byte IPv4 header (no options) with its checksum; ``dst=None`` is 255.255.255.255."""
    d = BROADCAST_IP if dst is None else station_ip_bytes(dst)
    h = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, ident, 0, ttl, proto, 0, station_ip_bytes(src), d
        )
    )
    h[10:12] = checksum(h).to_bytes(2, "big")
    return bytes(h)


def build(
    src: int,
    dst: int | None,
    options: Sequence[DsrOption],
    *,
    next_header: int = NO_NEXT_HEADER,
    payload: bytes = b"",
    ttl: int = 64,
    ident: int = 0,
) -> bytes:
    """An IPv4 packet with a DSR Options header holding ``options`` (then ``payload``)."""
    opts = encode_options(options)
    if len(opts) > 0xFFFF:
        raise ValueError("DSR options too long")
    dsr = struct.pack("!BBH", next_header, 0, len(opts)) + opts
    return ip_header(src, dst, IPPROTO_DSR, len(dsr) + len(payload), ttl, ident) + dsr + payload
