"""Raw-bytes TCP/IPv4 manipulation for the endpoint agent (struct and slicing, no scapy).

Checked byte for byte against scapy in ``tests/unit/test_tcpctl_packets.py``.

- TCP header: RFC 9293 section 3.1; checksum over the pseudo-header, RFC 9293 section 3.1;
  incremental checksum update: RFC 1624 equation 3 (``HC' = ~(~HC + ~m + m')``).
- ECN: RFC 3168 (IP ECN field = the two low bits of the TOS byte; TCP ECE = 0x40, CWR = 0x80).
- ICMP Destination Unreachable: RFC 792 (type 3; code 0 net, 1 host, 3 port); the data carries the
  original IP header and the first 64 bits of its payload (RFC 792), enough for TCP's ports and
  sequence number (Linux's tcp_v4_err reads them).
- Route-control marks (Cohen & Levin, Fig. 1): the network-layer route-number and NEW flag travel
  in the IPv4 Identification field of atomic datagrams (DF=1, MF=0, offset 0), which RFC 6864
  section 4.1 leaves free ("the IPv4 ID field MUST NOT be used for purposes other than
  fragmentation and reassembly" applies to non-atomic datagrams only): bit 15 = NEW, bits 0-14 =
  route-number mod 2^15. The transport-layer echo (RR-number, NR) is a TCP experimental option
  (RFC 6994: kind 253, ExID 0x4D54 "MT", then 16 bits NR<<15 | RR-number), added to segments
  whose header has room. See docs/fidelity.md.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from nodes.core import icmp
from nodes.core.ipv4 import IPPROTO_ICMP, IPPROTO_TCP, checksum

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
ICMP_DEST_UNREACH = icmp.ICMP_DEST_UNREACH
ICMP_NET_UNREACH, ICMP_HOST_UNREACH, ICMP_PORT_UNREACH = (
    icmp.ICMP_NET_UNREACH,
    icmp.ICMP_HOST_UNREACH,
    icmp.ICMP_PORT_UNREACH,
)
TCPOPT_EOL, TCPOPT_NOP, TCPOPT_TIMESTAMP, TCPOPT_EXP = 0, 1, 8, 253
RC_EXID = 0x4D54
"""RFC 6994 experiment identifier of our Route-control echo option ("MT")."""
RC_OPTION_LEN = 6
RC_ROUTE_MASK = 0x7FFF
IP_DF = 0x4000


def _fold(total: int) -> int:
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def csum_replace16(hc: int, old: int, new: int) -> int:
    """RFC 1624 eq. 3: new checksum after one 16-bit word changed from ``old`` to ``new``."""
    return ~_fold((~hc & 0xFFFF) + (~old & 0xFFFF) + new) & 0xFFFF


@dataclass(frozen=True, slots=True)
class TcpView:
    """Offsets and fields of one IPv4/TCP packet (read-only view)."""

    ihl: int
    src: bytes
    dst: bytes
    sport: int
    dport: int
    seq: int
    ack: int
    doff: int  # TCP header length in bytes
    flags: int
    window: int
    payload_len: int
    ts_val: int | None
    ts_ecr: int | None

    @property
    def seg_len(self) -> int:
        """Sequence space consumed: payload plus SYN and FIN."""
        return self.payload_len + (1 if self.flags & SYN else 0) + (1 if self.flags & FIN else 0)

    @property
    def end_seq(self) -> int:
        return (self.seq + self.seg_len) & 0xFFFFFFFF


def parse_tcp(p: bytes | bytearray) -> TcpView | None:
    """The TCP view of an IPv4 packet, or None if it is not a complete, unfragmented TCP packet."""
    if len(p) < 40 or p[0] >> 4 != 4 or p[9] != IPPROTO_TCP:
        return None
    ihl = (p[0] & 0x0F) * 4
    total = (p[2] << 8) | p[3]
    frag = ((p[6] << 8) | p[7]) & 0x3FFF
    if ihl < 20 or total > len(p) or frag or total < ihl + 20:
        return None
    sport, dport, seq, ack, off_flags, window = struct.unpack_from("!HHIIHH", p, ihl)
    doff = (off_flags >> 12) * 4
    if doff < 20 or ihl + doff > total:
        return None
    ts_val = ts_ecr = None
    opts = p[ihl + 20 : ihl + doff]
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == TCPOPT_EOL:
            break
        if kind == TCPOPT_NOP:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        ln = opts[i + 1]
        if kind == TCPOPT_TIMESTAMP and ln == 10 and i + 10 <= len(opts):
            ts_val, ts_ecr = struct.unpack_from("!II", opts, i + 2)
        i += ln
    return TcpView(
        ihl,
        bytes(p[12:16]),
        bytes(p[16:20]),
        sport,
        dport,
        seq,
        ack,
        doff,
        off_flags & 0xFF,
        window,
        total - ihl - doff,
        ts_val,
        ts_ecr,
    )


def tcp_checksum(p: bytes | bytearray, ihl: int | None = None) -> int:
    """Full TCP checksum of the IPv4 packet ``p`` (checksum field taken as zero)."""
    ihl = (p[0] & 0x0F) * 4 if ihl is None else ihl
    total = (p[2] << 8) | p[3]
    seg = bytearray(p[ihl:total])
    seg[16:18] = b"\0\0"
    pseudo = bytes(p[12:20]) + struct.pack("!BBH", 0, IPPROTO_TCP, len(seg))
    return checksum(pseudo + bytes(seg))


def tcp_checksum_ok(p: bytes | bytearray) -> bool:
    ihl = (p[0] & 0x0F) * 4
    return tcp_checksum(p, ihl) == ((p[ihl + 16] << 8) | p[ihl + 17])


def _tcp_word(p: bytearray, ihl: int, off: int, new: int) -> None:
    """Replace the 16-bit word at TCP offset ``off`` and update the TCP checksum (RFC 1624)."""
    o = ihl + off
    old = (p[o] << 8) | p[o + 1]
    if old == new:
        return
    p[o] = new >> 8
    p[o + 1] = new & 0xFF
    c = ihl + 16
    hc = (p[c] << 8) | p[c + 1]
    hc = csum_replace16(hc, old, new)
    p[c] = hc >> 8
    p[c + 1] = hc & 0xFF


def _ip_word(p: bytearray, off: int, new: int) -> None:
    old = (p[off] << 8) | p[off + 1]
    if old == new:
        return
    p[off] = new >> 8
    p[off + 1] = new & 0xFF
    hc = csum_replace16((p[10] << 8) | p[11], old, new)
    p[10] = hc >> 8
    p[11] = hc & 0xFF


def set_window(p: bytearray, window: int) -> None:
    """Rewrite the advertised window (the raw 16-bit field) in place."""
    _tcp_word(p, (p[0] & 0x0F) * 4, 14, window & 0xFFFF)


def set_ts_ecr(p: bytearray, ts_ecr: int) -> bool:
    """Rewrite TSecr of the timestamp option (RFC 7323) in place; False if there is none."""
    return _set_ts_field(p, 6, ts_ecr)


def set_ts_val(p: bytearray, ts_val: int) -> bool:
    """Rewrite TSval of the timestamp option (RFC 7323) in place; False if there is none."""
    return _set_ts_field(p, 2, ts_val)


def _set_ts_field(p: bytearray, at: int, value: int) -> bool:
    """Rewrite the 32-bit field ``at`` bytes into the timestamp option, checksum updated."""
    ihl = (p[0] & 0x0F) * 4
    doff = (p[ihl + 12] >> 4) * 4
    i = 20
    while i < doff:
        kind = p[ihl + i]
        if kind == TCPOPT_EOL:
            return False
        if kind == TCPOPT_NOP:
            i += 1
            continue
        if i + 1 >= doff or p[ihl + i + 1] < 2:
            return False
        if kind == TCPOPT_TIMESTAMP and p[ihl + i + 1] == 10 and i + 10 <= doff:
            value &= 0xFFFFFFFF
            if (i + at) % 2:  # the field is not 16-bit aligned in the header: recompute
                struct.pack_into("!I", p, ihl + i + at, value)
                struct.pack_into("!H", p, ihl + 16, 0)
                struct.pack_into("!H", p, ihl + 16, tcp_checksum(p, ihl))
            else:
                _tcp_word(p, ihl, i + at, value >> 16)
                _tcp_word(p, ihl, i + at + 2, value & 0xFFFF)
            return True
        i += p[ihl + i + 1]
    return False


def set_tcp_flags(p: bytearray, set_bits: int = 0, clear_bits: int = 0) -> None:
    """Set/clear TCP flag bits (e.g. ECE, CWR) in place; the word is data offset + flags."""
    ihl = (p[0] & 0x0F) * 4
    word = (p[ihl + 12] << 8) | p[ihl + 13]
    _tcp_word(p, ihl, 12, (word | set_bits) & ~clear_bits & 0xFFFF)


def set_ip_ecn(p: bytearray, codepoint: int) -> None:
    """Set the IP ECN field (RFC 3168 section 5) in place."""
    word = (p[0] << 8) | p[1]
    _ip_word(p, 0, (word & ~0x3) | (codepoint & 0x3))


def ip_ecn(p: bytes | bytearray) -> int:
    return p[1] & 0x3


# ---------------------------------------------------------------- Route-control marks


def is_atomic(p: bytes | bytearray) -> bool:
    """DF=1, MF=0, fragment offset 0 (RFC 6864 section 4: an atomic datagram)."""
    return ((p[6] << 8) | p[7]) == IP_DF


def read_rc_mark(p: bytes | bytearray) -> tuple[int, bool] | None:
    """(route_number, new_flag) from the IPv4 ID of an atomic datagram, else None."""
    if not is_atomic(p):
        return None
    ident = (p[4] << 8) | p[5]
    return ident & RC_ROUTE_MASK, bool(ident >> 15)


def write_rc_mark(p: bytearray, route_number: int, new_flag: bool) -> bool:
    """Write (route_number, new_flag) into the IPv4 ID; False (unchanged) if not atomic."""
    if not is_atomic(p):
        return False
    _ip_word(p, 4, (0x8000 if new_flag else 0) | (route_number & RC_ROUTE_MASK))
    return True


def read_rc_echo(p: bytes | bytearray) -> tuple[int, bool] | None:
    """(rr_number, nr) from our RFC 6994 option, if present."""
    t = parse_tcp(p)
    if t is None:
        return None
    o = t.ihl + 20
    end = t.ihl + t.doff
    while o < end:
        kind = p[o]
        if kind == TCPOPT_EOL:
            break
        if kind == TCPOPT_NOP:
            o += 1
            continue
        if o + 1 >= end or p[o + 1] < 2:
            break
        ln = p[o + 1]
        if kind == TCPOPT_EXP and ln == RC_OPTION_LEN and ((p[o + 2] << 8) | p[o + 3]) == RC_EXID:
            v = (p[o + 4] << 8) | p[o + 5]
            return v & RC_ROUTE_MASK, bool(v >> 15)
        o += ln
    return None


def add_rc_echo(p: bytes | bytearray, rr_number: int, nr: bool, mtu: int = 1500) -> bytes | None:
    """Copy of ``p`` with the echo option appended to the TCP options (two NOPs + 6 bytes), or
    None when the TCP header (60 bytes at most) or the MTU has no room."""
    t = parse_tcp(p)
    if t is None or t.doff + 8 > 60 or len(p) + 8 > mtu:
        return None
    v = (0x8000 if nr else 0) | (rr_number & RC_ROUTE_MASK)
    opt = bytes([TCPOPT_NOP, TCPOPT_NOP, TCPOPT_EXP, RC_OPTION_LEN]) + struct.pack("!HH", RC_EXID, v)
    total = (p[2] << 8) | p[3]
    hdr_end = t.ihl + t.doff
    q = bytearray(p[:hdr_end]) + opt + bytearray(p[hdr_end:total])
    q[2:4] = (total + 8).to_bytes(2, "big")
    q[t.ihl + 12] = (((t.doff + 8) // 4) << 4) | (q[t.ihl + 12] & 0x0F)
    q[10:12] = b"\0\0"
    q[10:12] = checksum(q[: t.ihl]).to_bytes(2, "big")
    c = tcp_checksum(q, t.ihl)
    q[t.ihl + 16 : t.ihl + 18] = c.to_bytes(2, "big")
    return bytes(q)


# ---------------------------------------------------------------- building packets


def build_tcp(
    src: bytes,
    dst: bytes,
    sport: int,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    window: int,
    options: bytes = b"",
    payload: bytes = b"",
    *,
    ttl: int = 64,
    ip_id: int = 0,
    tos: int = 0,
    df: bool = True,
) -> bytes:
    """A complete IPv4/TCP packet with correct checksums (options must be 32-bit padded)."""
    if len(options) % 4:
        raise ValueError("TCP options must be padded to a multiple of 4 bytes")
    doff = 20 + len(options)
    total = 20 + doff + len(payload)
    ip = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s", 0x45, tos, total, ip_id, IP_DF if df else 0, ttl, IPPROTO_TCP, 0, src, dst
        )
    )
    ip[10:12] = checksum(ip).to_bytes(2, "big")
    tcp = (
        bytearray(
            struct.pack(
                "!HHIIHHHH",
                sport,
                dport,
                seq & 0xFFFFFFFF,
                ack & 0xFFFFFFFF,
                ((doff // 4) << 12) | flags,
                window,
                0,
                0,
            )
        )
        + options
        + payload
    )
    pkt = ip + tcp
    pkt[36:38] = tcp_checksum(pkt, 20).to_bytes(2, "big")
    return bytes(pkt)


def timestamp_option(ts_val: int, ts_ecr: int) -> bytes:
    """NOP, NOP, TS (RFC 7323 section 3), the layout Linux uses."""
    return struct.pack("!BBBBII", TCPOPT_NOP, TCPOPT_NOP, TCPOPT_TIMESTAMP, 10, ts_val, ts_ecr)


icmp_dest_unreachable = icmp.dest_unreachable
"""ICMP Destination Unreachable (RFC 792) about ``original``, sent to its source (nodes.core.icmp,
where the routers build theirs)."""


def parse_icmp_unreach(p: bytes | bytearray) -> tuple[int, TcpQuote] | None:
    """(code, quoted TCP endpoints and seq) if ``p`` is an ICMP Destination Unreachable quoting TCP."""
    if len(p) < 20 or p[9] != IPPROTO_ICMP:
        return None
    ihl = (p[0] & 0x0F) * 4
    if len(p) < ihl + 8 + 28 or p[ihl] != ICMP_DEST_UNREACH:
        return None
    q = ihl + 8
    qihl = (p[q] & 0x0F) * 4
    if p[q + 9] != IPPROTO_TCP or len(p) < q + qihl + 8:
        return None
    sport, dport, seq = struct.unpack_from("!HHI", p, q + qihl)
    return p[ihl + 1], TcpQuote(bytes(p[q + 12 : q + 16]), bytes(p[q + 16 : q + 20]), sport, dport, seq)


@dataclass(frozen=True, slots=True)
class TcpQuote:
    src: bytes
    dst: bytes
    sport: int
    dport: int
    seq: int


def seq_lt(a: int, b: int) -> bool:
    """RFC 1982 serial comparison of 32-bit sequence numbers."""
    return ((a - b) & 0xFFFFFFFF) > 0x7FFFFFFF


def seq_le(a: int, b: int) -> bool:
    return a == b or seq_lt(a, b)
