"""AODV messages (RFC 3561 section 5) as scapy layers on UDP port 654.

This is the specification of the format: what the packet tests compare with the RFC's figures,
what pcaps are written with, and what the router's ``struct`` codec
(``nodes.protocols.aodv.messages``) is tested against byte for byte. The router itself never
imports scapy.

Like scapy's ``IPOption``: a base class ``AODV`` whose ``dispatch_hook`` picks the message class
from the type byte in ``AODV_CLASSES``, with ``AODVUnknown`` as the fallback so that a dissector
never dies on a type it does not know. ``dest_count`` of a RERR defaults to ``None`` and is
filled at build time. Octets after a message (AODV extensions, section 7) dissect as ``Raw``; a truncated message
dissects as ``AODVUnknown`` too.
Flag bits follow the RFC figures (scapy lists flag names from the least significant bit):
RREQ ``J R G D U``, RREP ``R A``, RERR ``N`` and our ``G`` (going down, Klemm 2004: the bit after
``N``, reserved in RFC 3561; docs/extensions-aodv.md).
"""

from __future__ import annotations

from typing import Any

from scapy.fields import (
    BitField,
    ByteEnumField,
    ByteField,
    FieldLenField,
    FlagsField,
    IntField,
    IPField,
    PacketListField,
    StrField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

AODV_PORT = 654
AODV_TYPES = {1: "RREQ", 2: "RREP", 3: "RERR", 4: "RREP-ACK"}


class AODV(Packet):
    """Dispatcher: ``AODV(raw_bytes)`` returns the layer for the type byte."""

    name = "AODV"
    fields_desc = [ByteEnumField("type", 0, AODV_TYPES), StrField("data", b"")]

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        """The class for the type byte; ``AODVUnknown`` for unknown types and truncated messages."""
        if not _pkt:
            return cls
        t = _pkt[0]
        need = AODV_MIN_LEN.get(t)
        if need is None:
            return AODVUnknown
        if t == 3 and len(_pkt) >= 4:
            need += 8 * _pkt[3]
        return AODV_CLASSES[t] if len(_pkt) >= need else AODVUnknown


class AODVUnknown(AODV):
    name = "AODV unknown message"
    fields_desc = [ByteField("type", 0), StrField("data", b"")]


class AODVRreq(AODV):
    """Section 5.1, Route Request."""

    name = "AODV RREQ"
    fields_desc = [
        ByteEnumField("type", 1, AODV_TYPES),
        FlagsField("flags", 0, 5, "UDGRJ"),
        BitField("reserved", 0, 11),
        ByteField("hop_count", 0),
        IntField("rreq_id", 0),
        IPField("dest_ip", "0.0.0.0"),
        IntField("dest_seq_no", 0),
        IPField("orig_ip", "0.0.0.0"),
        IntField("orig_seq_no", 0),
    ]


class AODVRrep(AODV):
    """Section 5.2, Route Reply (also the HELLO message of section 6.9)."""

    name = "AODV RREP"
    fields_desc = [
        ByteEnumField("type", 2, AODV_TYPES),
        FlagsField("flags", 0, 2, "AR"),
        BitField("reserved", 0, 9),
        BitField("prefix_sz", 0, 5),
        ByteField("hop_count", 0),
        IPField("dest_ip", "0.0.0.0"),
        IntField("dest_seq_no", 0),
        IPField("orig_ip", "0.0.0.0"),
        IntField("lifetime", 0),
    ]


class AODVUnreachable(Packet):
    """One (Unreachable Destination IP Address, Sequence Number) pair of a RERR."""

    name = "AODV unreachable destination"
    fields_desc = [IPField("dest_ip", "0.0.0.0"), IntField("dest_seq_no", 0)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class AODVRerr(AODV):
    """Section 5.3, Route Error."""

    name = "AODV RERR"
    fields_desc = [
        ByteEnumField("type", 3, AODV_TYPES),
        FlagsField("flags", 0, 2, "GN"),
        BitField("reserved", 0, 14),
        FieldLenField("dest_count", None, fmt="B", count_of="unreachable"),
        PacketListField("unreachable", [], AODVUnreachable, count_from=lambda p: p.dest_count),
    ]


class AODVRrepAck(AODV):
    """Section 5.4, Route Reply Acknowledgment."""

    name = "AODV RREP-ACK"
    fields_desc = [ByteEnumField("type", 4, AODV_TYPES), ByteField("reserved", 0)]


AODV_CLASSES: dict[int, type[Packet]] = {1: AODVRreq, 2: AODVRrep, 3: AODVRerr, 4: AODVRrepAck}
AODV_MIN_LEN: dict[int, int] = {1: 24, 2: 20, 3: 4, 4: 2}
"""Octets of each message type without extensions (a RERR adds 8 per unreachable destination)."""

bind_layers(UDP, AODV, dport=AODV_PORT)
bind_layers(UDP, AODV, sport=AODV_PORT)
for _cls in (AODVRreq, AODVRrep, AODVRerr, AODVRrepAck, AODVUnknown):
    bind_layers(UDP, _cls, sport=AODV_PORT, dport=AODV_PORT)
