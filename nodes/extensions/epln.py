"""EPLN, Early Packet Loss Notification (Yu 2004, MobiCom, sections 4.2, 4.3 and Algorithm 2),
over DSR; also the shared loss-notification machinery BEAD (``nodes.extensions.bead``) uses.

Yu 2004 s4.2: "We define a data structure called *drop_list* to record dropped packets. Before a
node drops a data packet or an ACK, it records in its *drop_list* the following information about
the packet: source address, source port, destination address, destination port, packet type
(data or ACK), TCP sequence number, and the source route used in routing the packet." ... "We
extend the format of a ROUTE ERROR to include an optional field called *conn_list*, which contains
one or more *conn_info* structures."

What runs where (every station runs the same extension; DSR's events, docs/dsr.md):

- The node detecting a broken link (s4.3.1; ``LinkFailure``, ``PacketDropped``,
  ``DsrRouteErrorSent``, in the shared :class:`LossNotifier`): every TCP data packet (and, with BEAD, ACK) that DSR drops for the
  failure -- the one that met the break and the interface-queue packets with the same next hop
  -- is recorded in :attr:`LossNotifier.drop_list`; the ROUTE ERROR DSR sends to each source
  (the TCP sender, or ``Address[1]`` when the packet was salvaged before) carries a
  :class:`ConnListOption` (DSR option type 17) with one :class:`ConnInfo` per connection and
  packet type. Salvaged data packets are listed too with ``pkt_lost`` false ("If the packet
  encountering a link failure is a data packet and is salvaged, the node also adds the TCP
  connection information to the ROUTE ERROR, since we choose to freeze TCP upon route failures").
- The salvaging node (s4.3.3 step 3(2); ``DsrRouteErrorReceived`` with ``for_me``): it is not
  the TCP sender; "it checks whether it has a route to reach the TCP sender. If it has a route,
  it sends a notification to the TCP sender" -- a ROUTE ERROR with the entry, over a *cached*
  route (no discovery), and only when the notification is not a nested ROUTE ERROR
  (``num_route_error = 1``). A notification that itself meets a broken link comes back as DSR's
  nested ROUTE ERROR and the core re-sends it over a cached route (s4.3.2, item 5 of s4.1).
- The TCP sender's station (s4.3.3 step 1, s4.3.5 Algorithm 2): one "ICMP to TCP" per sequence
  number = ``ctx.endpoint.epln_notice(conn, seq, pkt_lost)``: the endpoint agent runs Algorithm
  2 (freeze, ``thaw_seqno``, retransmit the lost packet now or record it in ``lost_pkt`` and
  retransmit on the thawing ACK). :attr:`Epln.decisions` records each call and its outcome.
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from nodes.core import ipv4
from nodes.core.addr import ip_to_station
from nodes.core.events import Action, ToNetwork
from nodes.core.hooks import LinkFailure, Needs, PacketDropped
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions import core_api
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.events import DsrRouteErrorReceived, DsrRouteErrorSent
from nodes.protocols.dsr.options import (
    DSR_HEADER_LEN,
    OPT_CONN_LIST,
    OPT_PAD1,
    OPTION_DECODERS,
    DsrOption,
    MalformedDsr,
    RawOption,
    RouteError,
    register_option,
)
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId

PType = Literal["data", "ack"]

CONN_INFO = struct.Struct("!4s4sHHBB")
"""conn_info header: source address, destination address, source port, destination port,
flags (0x80 packet type ACK, 0x40 ack_sent), number of sequence numbers."""
SEQ_ITEM = struct.Struct("!IB")
"""One sequence number (ACK number for ACKs) and its pkt_lost byte (1 lost, 0 salvaged)."""
F_ACK = 0x80
F_ACK_SENT = 0x40


@dataclass(frozen=True, slots=True)
class ConnInfo:
    """Yu 2004 s4.2 ``conn_info``: "source address, source port, destination address, destination
    port, packet type (data or ACK), and the TCP sequence numbers of lost packets"; plus s4.3.2's
    ``ack_sent`` and, per number, ``pkt_lost`` (s4.3.5: "an ICMP message also contains the
    information indicating whether a packet is lost"). ``src``/``dst`` are the IP source and
    destination of the lost packets (for ACKs: the TCP receiver and the TCP sender)."""

    src: bytes
    dst: bytes
    sport: int
    dport: int
    ptype: PType
    seqnos: tuple[tuple[int, bool], ...]
    """(sequence number, pkt_lost) in the order the node met them."""
    ack_sent: bool = False

    @property
    def conn(self) -> ConnId:
        """The connection as the endpoint agent at ``src`` names it."""
        return ConnId(self.src, self.sport, self.dst, self.dport)

    @property
    def lost(self) -> tuple[int, ...]:
        return tuple(s for s, lost in self.seqnos if lost)

    def encode(self) -> bytes:
        flags = (F_ACK if self.ptype == "ack" else 0) | (F_ACK_SENT if self.ack_sent else 0)
        head = CONN_INFO.pack(self.src, self.dst, self.sport, self.dport, flags, len(self.seqnos))
        return head + b"".join(SEQ_ITEM.pack(s & 0xFFFFFFFF, int(lost)) for s, lost in self.seqnos)

    @property
    def size(self) -> int:
        return CONN_INFO.size + SEQ_ITEM.size * len(self.seqnos)


@dataclass(frozen=True, slots=True)
class ConnListOption:
    """The ``conn_list`` in a ROUTE ERROR (DSR option type 17, :data:`OPT_CONN_LIST`)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    | Option Type=17| Opt Data Len  |   then one or more conn_info:
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                        Source Address                         |
    |                      Destination Address                      |
    |          Source Port          |        Destination Port       |
    |A|S| reserved  |   Num Seqnos  |  Num x (Seqno (32), pkt_lost (8))
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ ...
    A: packet type ACK (0: data); S: ack_sent.
    """

    TYPE: ClassVar[int] = OPT_CONN_LIST
    conn_list: tuple[ConnInfo, ...]

    def encode(self) -> bytes:
        body = b"".join(e.encode() for e in self.conn_list)
        if not self.conn_list or len(body) > 255:
            raise ValueError("a conn_list carries 1.. conn_info entries in at most 255 bytes")
        return bytes((OPT_CONN_LIST, len(body))) + body


def decode_conn_list(data: bytes) -> DsrOption:
    """A conn_list, or -- when the bytes are not one -- a :class:`RawOption` carried unchanged
    (section 8.1.6 treatment: a notification we cannot read never drops the packet it rides on)."""
    try:
        return _decode_conn_list(data)
    except MalformedDsr:
        return RawOption(OPT_CONN_LIST, data)


def _decode_conn_list(data: bytes) -> ConnListOption:
    out: list[ConnInfo] = []
    i = 0
    while i < len(data):
        if i + CONN_INFO.size > len(data):
            raise MalformedDsr("conn_list truncated")
        src, dst, sport, dport, flags, n = CONN_INFO.unpack_from(data, i)
        i += CONN_INFO.size
        if i + n * SEQ_ITEM.size > len(data) or n == 0:
            raise MalformedDsr("conn_list seqnos")
        seqs = tuple((s, bool(lost)) for s, lost in (SEQ_ITEM.unpack_from(data, i + k * 5) for k in range(n)))
        i += n * SEQ_ITEM.size
        ptype: PType = "ack" if flags & F_ACK else "data"
        out.append(ConnInfo(src, dst, sport, dport, ptype, seqs, bool(flags & F_ACK_SENT)))
    if not out:
        raise MalformedDsr("empty conn_list")
    return ConnListOption(tuple(out))


if OPTION_DECODERS.get(OPT_CONN_LIST) is not decode_conn_list:
    register_option(OPT_CONN_LIST, decode_conn_list)


def conn_list_offsets(buf: bytes | bytearray) -> Iterator[int]:
    """Offsets of the conn_list options in a DSR packet (for in-place ``ack_sent`` marking)."""
    ihl = (buf[0] & 0x0F) * 4
    plen = (buf[ihl + 2] << 8) | buf[ihl + 3]
    i, end = ihl + DSR_HEADER_LEN, min(len(buf), ihl + DSR_HEADER_LEN + plen)
    while i + 1 < end:
        if buf[i] == OPT_PAD1:
            i += 1
            continue
        if buf[i] == OPT_CONN_LIST:
            yield i
        i += 2 + buf[i + 1]


def first_entries(following: Sequence[DsrOption]) -> tuple[list[ConnInfo], bool]:
    """The conn_info entries of the conn_lists right after a ROUTE ERROR, and whether a nested
    ROUTE ERROR follows (Algorithm 1's ``num_route_error`` > 1)."""
    out: list[ConnInfo] = []
    for o in following:
        if isinstance(o, RouteError):
            return out, True
        if isinstance(o, ConnListOption):
            out.extend(o.conn_list)
    return out, False


def tcp_of(dsr_packet: bytes) -> tuple[ConnId, PType, int] | None:
    """(connection as its IP source names it, data/ack, seq or ack number) of a routed TCP
    segment with the DSR header on; None for anything else (routing packets, SYN/FIN-only)."""
    try:
        inner = srcroute.strip(dsr_packet)
    except (MalformedDsr, ValueError, IndexError):
        return None
    return tcp_of_inner(inner)


def tcp_of_inner(inner: bytes) -> tuple[ConnId, PType, int] | None:
    t = P.parse_tcp(inner)
    if t is None:
        return None
    conn = ConnId(t.src, t.sport, t.dst, t.dport)
    if t.payload_len > 0:
        return conn, "data", t.seq
    if t.flags & P.ACK and not t.flags & (P.SYN | P.FIN | P.RST):
        return conn, "ack", t.ack
    return None


@dataclass(frozen=True, slots=True)
class DropEntry:
    """One drop_list record (s4.2)."""

    t_ns: int
    src: bytes
    sport: int
    dst: bytes
    dport: int
    ptype: PType
    seqno: int
    source_route: tuple[int, ...] | None
    reason: str


@dataclass(frozen=True, slots=True)
class EplnParams:
    drop_list_size: int = 256
    """Records kept in drop_list (oldest forgotten first); the paper gives no bound."""
    drop_reasons: tuple[str, ...] = ("link_failure", "salvage_limit")
    """DSR drop reasons that are mobility losses at a link failure (s4.3.1)."""
    notify_salvaged: bool = True
    """List salvaged data packets with pkt_lost false (s4.3.1, "since we choose to freeze TCP
    upon route failures")."""
    relay_at_salvager: bool = True
    """s4.3.3 3(2): the salvaging node forwards the notification to the TCP sender (cached route)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "drop_reasons", tuple(self.drop_reasons))
        if self.drop_list_size < 1:
            raise ValueError("drop_list_size must be >= 1")


class LossNotifier:
    """The per-station drop_list and the conn_list builder, shared by EPLN (data) and BEAD (ACKs).

    s4.3.1: "If it cannot salvage the packet, it creates an entry in the drop_list ... The node
    then checks the network interface queue for the packets that have the same next hop ... For
    the data packets or ACKs to be dropped, the node records the information ... in the
    drop_list." DSR's core does the queue scan (``LinkFailure.queued``) and reports each packet it
    drops (``PacketDropped``) before ``DsrRouteErrorSent``.

    A shared service of the station (``nodes.core.hooks.Service``): :meth:`of` creates it for the
    first of EPLN and BEAD attached; each says which packet type it wants recorded
    (:meth:`track`), and EPLN's parameters configure it (:meth:`configure`).
    """

    NEEDS: ClassVar[Needs] = Needs(events=frozenset({LinkFailure, PacketDropped, DsrRouteErrorSent}))

    @classmethod
    def of(cls, ctx: NodeContext) -> LossNotifier:
        """The station's one notifier (``ctx.services``), created and subscribed on first use."""
        return ctx.services.get_or_create(cls, lambda: cls(ctx, ctx.log.getChild("loss_notifier")))

    def __init__(self, ctx: NodeContext, log: logging.Logger) -> None:
        self.ctx = ctx
        self.log = log
        self.kinds: set[PType] = set()
        self.notify_salvaged = False
        self.drop_reasons: tuple[str, ...] = ("link_failure", "salvage_limit")
        self.drop_list: deque[DropEntry] = deque(maxlen=256)
        self._failing: set[bytes] = set()
        """Packets dropped during the link failure being handled (cleared at the next one)."""
        self.counters = {"drop_list_records": 0, "conn_list_sent": 0, "conn_info_sent": 0}
        ctx.hooks.subscribe(LinkFailure, self.on_link_failure)
        ctx.hooks.subscribe(PacketDropped, self.on_packet_dropped)
        ctx.hooks.subscribe(DsrRouteErrorSent, self.on_route_error_sent)

    def track(self, kind: PType) -> None:
        """Record dropped packets of this type (EPLN: data, BEAD: ACKs)."""
        self.kinds.add(kind)

    def configure(self, params: EplnParams) -> None:
        """EPLN's parameters of the drop_list (BEAD alone runs with EPLN's defaults)."""
        self.notify_salvaged = params.notify_salvaged
        self.drop_reasons = params.drop_reasons
        self.drop_list = deque(self.drop_list, maxlen=params.drop_list_size)

    def on_link_failure(self, ev: LinkFailure) -> list[Action]:
        self._failing.clear()
        return []

    def on_packet_dropped(self, ev: PacketDropped) -> list[Action]:
        packet, now_ns = ev.packet, ev.now_ns
        if ev.reason not in self.drop_reasons:
            return []
        t = tcp_of(packet)
        if t is None or t[1] not in self.kinds:
            return []
        conn, ptype, seq = t
        self.drop_list.append(
            DropEntry(
                now_ns,
                conn.local_ip,
                conn.local_port,
                conn.remote_ip,
                conn.remote_port,
                ptype,
                seq,
                ev.route,
                ev.reason,
            )
        )
        self._failing.add(packet)
        self.counters["drop_list_records"] += 1
        self.ctx.counters.extra["epln_drop_list_records"] += 1
        return []

    def on_route_error_sent(self, ev: DsrRouteErrorSent) -> list[Action]:
        """s4.3.1: "The node piggybacks on the ROUTE ERROR the information about the lost packets
        that have the same source node ... It creates one entry in the conn_list ... for the lost
        packets originating from the same connection." """
        groups: dict[tuple[ConnId, PType], list[tuple[int, bool]]] = {}
        for pkt in ev.packets:
            t = tcp_of(pkt)
            if t is None or t[1] not in self.kinds:
                continue
            lost = pkt in self._failing
            if not lost and not (t[1] == "data" and self.notify_salvaged):
                continue
            items = groups.setdefault((t[0], t[1]), [])
            if all(s != t[2] for s, _l in items):
                items.append((t[2], lost))
        if not groups:
            return []
        entries: list[ConnInfo] = []
        size = 0
        for (conn, ptype), items in groups.items():
            e = ConnInfo(
                conn.local_ip, conn.remote_ip, conn.local_port, conn.remote_port, ptype, tuple(items[:40])
            )
            if size + e.size > 255:
                break
            entries.append(e)
            size += e.size
        ev.extra_options.append(ConnListOption(tuple(entries)))
        self.counters["conn_list_sent"] += 1
        self.counters["conn_info_sent"] += len(entries)
        self.ctx.counters.extra["epln_conn_list_sent"] += 1
        self.log.debug("conn_list to %d: %s", ev.dst, entries)
        return []


def station_of(ip: bytes) -> int | None:
    return ip_to_station(ip)


def src_station(packet: bytes) -> int | None:
    return ip_to_station(ipv4.src(packet))


@dataclass(slots=True)
class Decision:
    """One Algorithm 2 step at the sender: the notice and what the agent did."""

    t_ns: int
    conn: ConnId
    seqno: int
    pkt_lost: bool
    retransmitted: bool
    thaw_seqno: int | None
    lost_pkt: tuple[int, ...]


class Epln:
    """EPLN at one station (all roles: detecting node, salvaging node, TCP sender)."""

    name = "epln"

    def __init__(
        self, ctx: NodeContext, protocol: DsrRouting, params: EplnParams, log: logging.Logger
    ) -> None:
        self.ctx = ctx
        self.protocol = protocol
        self.p = params
        self.log = log
        self.notifier = LossNotifier.of(ctx)
        self.notifier.track("data")
        self.notifier.configure(params)
        self.decisions: list[Decision] = []
        self.counters = dict.fromkeys(
            (
                "conn_list_received",
                "icmp_to_tcp",
                "early_retransmissions",
                "relayed_to_sender",
                "relay_no_route",
            ),
            0,
        )
        ctx.hooks.subscribe(DsrRouteErrorReceived, self.on_route_error_received)

    @property
    def drop_list(self) -> deque[DropEntry]:
        return self.notifier.drop_list

    def on_route_error_received(self, ev: DsrRouteErrorReceived) -> list[Action]:
        """s4.3.3: "For each entry in the conn_list of the notification" (data entries only)."""
        if not ev.for_me:
            return []
        rerr, now_ns = ev.rerr, ev.now_ns
        entries, nested = first_entries(ev.following)
        entries = [e for e in entries if e.ptype == "data"]
        if not entries:
            return []
        self.counters["conn_list_received"] += 1
        out: list[Action] = []
        for e in entries:
            if e.src == self.ctx.ip:
                out += self._at_sender(e, now_ns)
            elif not nested and self.p.relay_at_salvager:
                out += self._relay(rerr, e)
        return out

    def _at_sender(self, e: ConnInfo, now_ns: int) -> list[Action]:
        """Step 1: "If the node is a TCP sender, it sends an ICMP message to TCP for each sequence
        number"; Algorithm 2 runs in the endpoint agent (``epln_notice``)."""
        api = self.ctx.endpoint
        if api is None:
            return []
        out: list[Action] = []
        for seq, lost in e.seqnos:
            acts = api.epln_notice(e.conn, seq, lost, now_ns)
            c = api.agent.conns.get(e.conn)
            h = None if c is None else c.hold
            rexmt = any(isinstance(a, ToNetwork) for a in acts)
            self.decisions.append(
                Decision(
                    now_ns,
                    e.conn,
                    seq,
                    lost,
                    rexmt,
                    None if h is None else h.thaw_seqno,
                    () if h is None else tuple(h.lost_pkt),
                )
            )
            del self.decisions[:-256]
            self.counters["icmp_to_tcp"] += 1
            if rexmt:
                self.counters["early_retransmissions"] += 1
                self.ctx.counters.extra["epln_early_retransmissions"] += 1
            out += acts
        self.ctx.counters.extra["epln_icmp_to_tcp"] += len(e.seqnos)
        return out

    def _relay(self, rerr: RouteError, e: ConnInfo) -> list[Action]:
        """Step 3(2): "If lost packets are data packets, the node checks whether it has a route
        to reach the TCP sender. If it has a route, it sends a notification to the TCP sender."""
        sender = station_of(e.src)
        if sender is None:
            return []
        note = RouteError(rerr.err_src, sender, unreachable=rerr.unreachable)
        acts = self.protocol.send_options(sender, [note, ConnListOption((e,))])
        if acts is None:
            self.counters["relay_no_route"] += 1
            return []
        self.counters["relayed_to_sender"] += 1
        self.ctx.counters.extra["epln_relayed"] += 1
        return list(acts)

    def state(self) -> dict[str, Any]:
        return {
            "counters": {**self.counters, **self.notifier.counters},
            "drop_list": len(self.drop_list),
        }


PARAMS = EplnParams
NEEDS = Needs(
    events=frozenset({DsrRouteErrorReceived}), endpoint=True, core=DsrRouting, services=(LossNotifier,)
)
"""DSR's ROUTE ERROR carries the conn_list (s4.2; the shared notifier fills it); the salvaging node
relays it with ``DsrRouting.send_options``; the sender's endpoint agent runs Algorithm 2."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: EplnParams) -> Epln:
    return Epln(ctx, core_api(protocol, DsrRouting), params, ctx.log.getChild("epln"))
