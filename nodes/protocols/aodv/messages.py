"""AODV messages (RFC 3561 section 5) as values, with a ``struct`` codec for the router.

The format is specified by the scapy layers in ``nodes.formats.aodv`` (what tshark, pcaps and
the packet tests use); this module is the router's fast codec, tested byte for byte against those
layers in ``tests/packets/test_aodv_formats.py`` (like ``nodes.core.ipv4`` against scapy's IP).
Addresses are 32-bit integers (network order when packed). Decoding never raises anything but
``MalformedMessage``, whose ``reason`` names a counter.

Section 5.1 (RREQ, 24 octets)::

    |     Type      |J|R|G|D|U|   Reserved          |   Hop Count   |
    |                            RREQ ID                            |
    |                    Destination IP Address                     |
    |                  Destination Sequence Number                  |
    |                    Originator IP Address                      |
    |                  Originator Sequence Number                   |

Section 5.2 (RREP, 20 octets)::

    |     Type      |R|A|    Reserved     |Prefix Sz|   Hop Count   |
    |                     Destination IP address                    |
    |                  Destination Sequence Number                  |
    |                    Originator IP address                      |
    |                           Lifetime                            |

Section 5.3 (RERR, 4 + 8 * DestCount octets)::

    |     Type      |N|          Reserved           |   DestCount   |
    |            Unreachable Destination IP Address (1)             |
    |         Unreachable Destination Sequence Number (1)           |
    |  Additional Unreachable Destination IP Addresses (if needed)  |
    |Additional Unreachable Destination Sequence Numbers (if needed)|

Section 5.4 (RREP-ACK, 2 octets): Type 4, Reserved.

Octets after a complete message are AODV extensions (section 7); they are ignored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

AODV_PORT: int = 654
"""Section 5: "AODV ... uses UDP port 654"."""


class MsgType(IntEnum):
    RREQ = 1
    RREP = 2
    RERR = 3
    RREP_ACK = 4


class MalformedMessage(ValueError):
    """Not a decodable AODV message; ``reason`` is the counter name (``aodv_<reason>``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# RREQ flag bits (second octet)
F_JOIN, F_REPAIR, F_GRATUITOUS, F_DEST_ONLY, F_UNKNOWN_SEQ = 0x80, 0x40, 0x20, 0x10, 0x08
# RREP flag bits (second octet)
F_RREP_REPAIR, F_ACK = 0x80, 0x40
# RERR flag bit (second octet)
F_NO_DELETE = 0x80
F_GOING_DOWN = 0x40
"""RERR 'G' (a reserved bit in RFC 3561): Klemm 2004's GDWN message (docs/extensions-aodv.md)."""

_RREQ = struct.Struct("!BBBBIIIII")
_RREP = struct.Struct("!BBBBIIII")
_RERR_HEAD = struct.Struct("!BBBB")
_PAIR = struct.Struct("!II")
_U32 = 0xFFFF_FFFF


@dataclass(frozen=True, slots=True)
class Rreq:
    rreq_id: int
    dest_ip: int
    dest_seq_no: int
    orig_ip: int
    orig_seq_no: int
    hop_count: int = 0
    join: bool = False
    repair: bool = False
    gratuitous: bool = False
    destination_only: bool = False
    unknown_seq_no: bool = False

    def encode(self) -> bytes:
        flags = (
            (F_JOIN if self.join else 0)
            | (F_REPAIR if self.repair else 0)
            | (F_GRATUITOUS if self.gratuitous else 0)
            | (F_DEST_ONLY if self.destination_only else 0)
            | (F_UNKNOWN_SEQ if self.unknown_seq_no else 0)
        )
        return _RREQ.pack(
            MsgType.RREQ,
            flags,
            0,
            self.hop_count & 0xFF,
            self.rreq_id & _U32,
            self.dest_ip,
            self.dest_seq_no & _U32,
            self.orig_ip,
            self.orig_seq_no & _U32,
        )


@dataclass(frozen=True, slots=True)
class Rrep:
    dest_ip: int
    dest_seq_no: int
    orig_ip: int
    lifetime_ms: int
    hop_count: int = 0
    repair: bool = False
    ack_required: bool = False
    prefix_sz: int = 0

    def encode(self) -> bytes:
        flags = (F_RREP_REPAIR if self.repair else 0) | (F_ACK if self.ack_required else 0)
        return _RREP.pack(
            MsgType.RREP,
            flags,
            self.prefix_sz & 0x1F,
            self.hop_count & 0xFF,
            self.dest_ip,
            self.dest_seq_no & _U32,
            self.orig_ip,
            self.lifetime_ms & _U32,
        )


@dataclass(frozen=True, slots=True)
class Rerr:
    unreachable: tuple[tuple[int, int], ...]
    """(Unreachable Destination IP Address, Unreachable Destination Sequence Number) pairs."""
    no_delete: bool = False
    going_down: bool = False
    """'G': the routes are going down (Klemm 2004 GDWN), not broken."""

    def encode(self) -> bytes:
        if not 1 <= len(self.unreachable) <= 255:
            raise ValueError("a RERR carries 1..255 unreachable destinations")
        fl = (F_NO_DELETE if self.no_delete else 0) | (F_GOING_DOWN if self.going_down else 0)
        head = _RERR_HEAD.pack(MsgType.RERR, fl, 0, len(self.unreachable))
        return head + b"".join(_PAIR.pack(ip, seq & _U32) for ip, seq in self.unreachable)


@dataclass(frozen=True, slots=True)
class RrepAck:
    def encode(self) -> bytes:
        return bytes((MsgType.RREP_ACK, 0))


Message = Rreq | Rrep | Rerr | RrepAck


def decode(data: bytes) -> Message:
    """One AODV message from a UDP payload; raise ``MalformedMessage`` otherwise."""
    if not data:
        raise MalformedMessage("empty")
    t = data[0]
    if t == MsgType.RREQ:
        if len(data) < _RREQ.size:
            raise MalformedMessage("truncated")
        _, fl, _, hc, rid, dip, dseq, oip, oseq = _RREQ.unpack_from(data)
        return Rreq(
            rid,
            dip,
            dseq,
            oip,
            oseq,
            hc,
            bool(fl & F_JOIN),
            bool(fl & F_REPAIR),
            bool(fl & F_GRATUITOUS),
            bool(fl & F_DEST_ONLY),
            bool(fl & F_UNKNOWN_SEQ),
        )
    if t == MsgType.RREP:
        if len(data) < _RREP.size:
            raise MalformedMessage("truncated")
        _, fl, psz, hc, dip, dseq, oip, life = _RREP.unpack_from(data)
        return Rrep(dip, dseq, oip, life, hc, bool(fl & F_RREP_REPAIR), bool(fl & F_ACK), psz & 0x1F)
    if t == MsgType.RERR:
        if len(data) < _RERR_HEAD.size:
            raise MalformedMessage("truncated")
        _, fl, _, count = _RERR_HEAD.unpack_from(data)
        if count == 0:
            # Section 5.3: "DestCount ... MUST be at least 1."
            raise MalformedMessage("zero_dest_count")
        if len(data) < _RERR_HEAD.size + count * _PAIR.size:
            raise MalformedMessage("truncated")
        pairs = tuple(_PAIR.unpack_from(data, _RERR_HEAD.size + i * _PAIR.size) for i in range(count))
        return Rerr(pairs, bool(fl & F_NO_DELETE), bool(fl & F_GOING_DOWN))
    if t == MsgType.RREP_ACK:
        if len(data) < 2:
            raise MalformedMessage("truncated")
        return RrepAck()
    raise MalformedMessage("unknown_type")


def type_name(msg: Message) -> str:
    """Counter key of a message: rreq, rrep, rerr, rrep_ack."""
    if isinstance(msg, Rreq):
        return "rreq"
    if isinstance(msg, Rrep):
        return "rrep"
    if isinstance(msg, Rerr):
        return "rerr"
    return "rrep_ack"
