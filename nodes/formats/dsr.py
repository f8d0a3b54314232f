"""scapy layers for the DSR Options header (IP protocol 48, RFC 4728 section 6).

The specification of the format: tests build each option to literal bytes and dissect it back,
tshark decodes pcaps of these frames as "Dynamic Source Routing", and the router's raw-bytes codec
(``nodes.protocols.dsr.options`` / ``srcroute``) is checked byte for byte against these layers.

Like scapy's ``IPOption``: a base class :class:`DSROption` whose ``dispatch_hook`` picks the class
from the option-type byte in :data:`DSR_OPTIONS`, and :class:`DSROptUnknown` for any type nobody
registered. Lengths (``len`` of options, ``plen`` of the header) default to None and are filled at
build time. Extension options (Yu 2004's ``conn_list``, type 17, see
``nodes.protocols.dsr.options.OPT_CONN_LIST``) register with :func:`register_dsr_option`.
"""

from __future__ import annotations

from typing import Any

from scapy.fields import (
    BitField,
    ByteEnumField,
    ByteField,
    ConditionalField,
    FieldLenField,
    FieldListField,
    IntField,
    IPField,
    PacketListField,
    ShortField,
    StrLenField,
)
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.packet import Packet, bind_layers

DSR_OPTION_TYPES = {
    0: "PadN",
    1: "RREQ",
    2: "RREP",
    3: "RERR",
    17: "conn_list",
    18: "cache_update",
    32: "ACK",
    96: "SourceRoute",
    160: "ACKREQ",
    224: "Pad1",
}
DSR_ERROR_TYPES = {1: "NODE_UNREACHABLE", 2: "FLOW_STATE_NOT_SUPPORTED", 3: "OPTION_NOT_SUPPORTED"}

DSR_OPTIONS: dict[int, type[Packet]] = {}
"""Option Type -> layer class (section 6); see :func:`register_dsr_option`."""


def register_dsr_option(cls: type[Packet]) -> type[Packet]:
    """Class decorator: register an option layer under its ``type`` field's default."""
    default = cls.fields_desc[0].default
    if not isinstance(default, int):
        raise TypeError(f"{cls.__name__}: the first field must be the option type")
    DSR_OPTIONS[default] = cls
    return cls


class DSROption(Packet):
    """Base of the DSR options: dispatches on the option-type byte."""

    name = "DSR option"

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        if _pkt:
            layer = DSR_OPTIONS.get(_pkt[0], DSROptUnknown)
            fits = getattr(layer, "fits", None)
            # An extension option whose bytes do not parse is shown as unknown (the router's
            # codec keeps it as a RawOption and carries it unchanged).
            return layer if fits is None or fits(bytes(_pkt)) else DSROptUnknown
        return cls

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if getattr(self, "len", 0) is None and len(p) >= 2:
            p = p[:1] + bytes((len(p) - 2,)) + p[2:]
        return p + pay


class DSROptUnknown(DSROption):
    name = "DSR unknown option"
    fields_desc = [
        ByteEnumField("type", 255, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="data", fmt="B"),
        StrLenField("data", b"", length_from=lambda p: p.len),
    ]


@register_dsr_option
class DSROptPadN(DSROption):
    name = "DSR PadN"
    fields_desc = [
        ByteEnumField("type", 0, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="padding", fmt="B"),
        StrLenField("padding", b"", length_from=lambda p: p.len),
    ]


@register_dsr_option
class DSROptPad1(DSROption):
    name = "DSR Pad1"
    fields_desc = [ByteEnumField("type", 224, DSR_OPTION_TYPES)]


@register_dsr_option
class DSROptRouteRequest(DSROption):
    """Section 6.2."""

    name = "DSR Route Request"
    fields_desc = [
        ByteEnumField("type", 1, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="addresses", fmt="B", adjust=lambda p, x: x + 6),
        ShortField("id", 0),
        IPField("target", "0.0.0.0"),
        FieldListField("addresses", [], IPField("", "0.0.0.0"), length_from=lambda p: p.len - 6),
    ]


@register_dsr_option
class DSROptRouteReply(DSROption):
    """Section 6.3."""

    name = "DSR Route Reply"
    fields_desc = [
        ByteEnumField("type", 2, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="addresses", fmt="B", adjust=lambda p, x: x + 1),
        BitField("L", 0, 1),
        BitField("reserved", 0, 7),
        FieldListField("addresses", [], IPField("", "0.0.0.0"), length_from=lambda p: p.len - 1),
    ]


@register_dsr_option
class DSROptRouteError(DSROption):
    """Section 6.4, with the type-specific information of NODE_UNREACHABLE (6.4.1) and
    OPTION_NOT_SUPPORTED (6.4.3); other error types keep theirs in ``tsi``."""

    name = "DSR Route Error"
    fields_desc = [
        ByteEnumField("type", 3, DSR_OPTION_TYPES),
        ByteField("len", None),
        ByteEnumField("err_type", 1, DSR_ERROR_TYPES),
        BitField("reserved", 0, 4),
        BitField("salvage", 0, 4),
        IPField("err_src", "0.0.0.0"),
        IPField("err_dst", "0.0.0.0"),
        ConditionalField(IPField("unreachable", "0.0.0.0"), lambda p: p.err_type == 1),
        ConditionalField(ByteField("unsupported_opt", 0), lambda p: p.err_type == 3),
        ConditionalField(
            StrLenField("tsi", b"", length_from=lambda p: max(0, (p.len or 10) - 10)),
            lambda p: p.err_type not in (1, 3),
        ),
    ]


@register_dsr_option
class DSROptAckRequest(DSROption):
    """Section 6.5."""

    name = "DSR Acknowledgement Request"
    fields_desc = [
        ByteEnumField("type", 160, DSR_OPTION_TYPES),
        ByteField("len", None),
        ShortField("id", 0),
    ]


@register_dsr_option
class DSROptAck(DSROption):
    """Section 6.6."""

    name = "DSR Acknowledgement"
    fields_desc = [
        ByteEnumField("type", 32, DSR_OPTION_TYPES),
        ByteField("len", None),
        ShortField("id", 0),
        IPField("ack_src", "0.0.0.0"),
        IPField("ack_dst", "0.0.0.0"),
    ]


@register_dsr_option
class DSROptSourceRoute(DSROption):
    """Section 6.7: F (First Hop External), L (Last Hop External), Salvage, Segments Left."""

    name = "DSR Source Route"
    fields_desc = [
        ByteEnumField("type", 96, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="addresses", fmt="B", adjust=lambda p, x: x + 2),
        BitField("F", 0, 1),
        BitField("L", 0, 1),
        BitField("reserved", 0, 4),
        BitField("salvage", 0, 4),
        BitField("segs_left", 0, 6),
        FieldListField("addresses", [], IPField("", "0.0.0.0"), length_from=lambda p: p.len - 2),
    ]


class DSRConnInfo(Packet):
    """Yu 2004 s4.2 ``conn_info`` (one entry of a ``conn_list``; nodes.extensions.epln)."""

    name = "DSR conn_info"
    fields_desc = [
        IPField("src", "0.0.0.0"),
        IPField("dst", "0.0.0.0"),
        ShortField("sport", 0),
        ShortField("dport", 0),
        BitField("ack", 0, 1),
        BitField("ack_sent", 0, 1),
        BitField("reserved", 0, 6),
        FieldLenField("n", None, count_of="seqnos", fmt="B"),
        PacketListField("seqnos", [], lambda s: DSRConnSeq(s), count_from=lambda p: p.n),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class DSRConnSeq(Packet):
    """One lost (or salvaged) packet of a ``conn_info``: sequence/ACK number and pkt_lost."""

    name = "DSR conn_info seqno"
    fields_desc = [IntField("seqno", 0), ByteField("pkt_lost", 1)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


@register_dsr_option
class DSROptConnList(DSROption):
    """Yu 2004 s4.2: the ``conn_list`` option (type 17) in a ROUTE ERROR."""

    name = "DSR conn_list"

    @staticmethod
    def fits(raw: bytes) -> bool:
        """True when the option's data is a whole number of well-formed conn_info entries."""
        if len(raw) < 2 or len(raw) < 2 + raw[1]:
            return False
        i, end = 2, 2 + raw[1]
        while i < end:
            if i + 14 > end or raw[i + 13] == 0:
                return False
            i += 14 + 5 * raw[i + 13]
        return i == end and end > 2

    fields_desc = [
        ByteEnumField("type", 17, DSR_OPTION_TYPES),
        FieldLenField("len", None, length_of="conn_list", fmt="B"),
        PacketListField("conn_list", [], DSRConnInfo, length_from=lambda p: p.len),
    ]


@register_dsr_option
class DSROptCacheUpdate(DSROption):
    """DSR-Update (Yu 2004 s2.2) cache update notification (type 18): the broken link."""

    name = "DSR cache update"

    @staticmethod
    def fits(raw: bytes) -> bool:
        return len(raw) >= 10 and raw[1] == 8

    fields_desc = [
        ByteEnumField("type", 18, DSR_OPTION_TYPES),
        ByteField("len", None),
        IPField("link_from", "0.0.0.0"),
        IPField("link_to", "0.0.0.0"),
    ]


class DSR(Packet):
    """Section 6.1: the DSR Options header."""

    name = "DSR"
    fields_desc = [
        ByteEnumField("nh", 59, {1: "ICMP", 6: "TCP", 17: "UDP", 59: "NoNextHeader"}),
        BitField("F", 0, 1),
        BitField("reserved", 0, 7),
        ShortField("plen", None),
        PacketListField("options", [], DSROption, length_from=lambda p: p.plen),
    ]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.plen is None:
            n = len(p) - 4
            p = p[:2] + n.to_bytes(2, "big") + p[4:]
        return p + pay


bind_layers(IP, DSR, proto=48)
bind_layers(DSR, TCP, nh=6)
bind_layers(DSR, UDP, nh=17)
bind_layers(DSR, ICMP, nh=1)
