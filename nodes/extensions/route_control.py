"""Cohen & Levin, Route-control (RC) on hop-by-hop routing (AODV): sections III-V.

Section III (Algorithm 1): the sender keeps a route-number per destination and sends NEW = 0;
"An intermediate node receiving a packet decides whether the next node for this packet is the same
as for the previous packet of the same source-destination pair. If not, the NEW flag is set to 1."
"I1 An intermediate node v maintains a table with an (s, d)-entry for every pair of nodes whose
packet has been received by v in the last time-out period of Delta seconds. This entry indicates
the next node to which the last (s, d)-packet was sent by v, the s_d value in the header of that
packet, and NEW flag value with which the packet was forwarded." "I2 ... If v has no (s, d)-entry
in its table ... the NEW is unchanged. Else, the NEW is set depending on" Table I (:func:`table_i`).
"R1 When d receives a segment i from s, it responds with an ACK/NACK, where RR-number =
route-number(s_d) and the NR = NEW field of segment i." "S3 When an ACK is received from d with
RR-number = s_d and NR = 1, route-number is incremented."

Section IV, SR-5: a single dupACK is a valid NACK for the missing segment j when (a) its RR-number
X equals the route-number of i's last transmission, (b) i was last sent after j, (c) j's last
transmission carried X too and the ACK for i returns with NEW = 0 (NR = 0), (d) i's last
transmission was its only one or a retransmission after a valid NACK (not after an RTO); "Then ...
j should be added to LOST" -> retransmitted at once (:func:`sr5_valid`).

Section V, Algorithm 3 (RTT estimation restarts with the first sample on a new route) is not
realisable on Linux: nothing resets the kernel's srtt/rttvar (``TcpControl.restart_rtt`` returns
False; docs/fidelity.md). This extension does not pretend to do it.

Realisation: the marks live in the IPv4 ID of atomic datagrams and the TCP echo option
(docs/tcpctl.md: ``write_rc_mark``/``add_rc_echo`` by the endpoint agent, whose ``route_control``
switch this extension turns on). Table I runs at every station that sends an (s, d) TCP packet to
a next hop (``AodvIpForward``; the source is v_1 of the paper's proof). The sender side (S3,
SR-5) runs where an endpoint agent is present (``ctx.endpoint``).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodes.core.addr import ip_to_station
from nodes.core.events import Action
from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.protocols.aodv.events import AodvIpForward
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, TcpAck, TcpDupack, TcpSegmentSent

if TYPE_CHECKING:
    from nodes.tcpctl.api import TcpControl

NS_PER_S = 1_000_000_000
IPPROTO_TCP = 6


@dataclass(frozen=True, slots=True)
class RouteControlParams:
    delta_s: float = 1.0
    """Delta: an (s, d)-entry expires when no (s, d)-packet was received for this long (I1; the
    paper gives no value)."""
    intermediate: bool = True
    """Run Table I at ``AodvIpForward``."""
    fast_retransmit: bool = True
    """SR-5: retransmit the missing segment at the first valid dupACK."""
    max_tracked_segments: int = 4096
    """Last transmissions remembered per connection (SR-4), oldest dropped first."""

    def __post_init__(self) -> None:
        if self.delta_s <= 0 or self.max_tracked_segments < 1:
            raise ValueError("delta_s > 0, max_tracked_segments >= 1")

    @property
    def delta_ns(self) -> int:
        return round(self.delta_s * NS_PER_S)


# ------------------------------------------------------------------------ Table I (I1, I2)
@dataclass(slots=True)
class RcEntry:
    """I1: the last (s, d)-packet: its next node, route-number and forwarded NEW, and when."""

    next_hop: int
    route_number: int
    new_flag: bool
    t_ns: int


def rn_lt(a: int, b: int) -> bool:
    """route-number a < b, 15 bits with wrap-around (docs/tcpctl.md: ``RC_ROUTE_MASK``)."""
    return 0 < ((b - a) & P.RC_ROUTE_MASK) < (P.RC_ROUTE_MASK + 1) // 2


def table_i(prev: RcEntry | None, next_hop: int, route_number: int, new_flag: bool) -> tuple[bool, str]:
    """The NEW flag to forward with, and the case of Table I that decided it ("-" if none)."""
    if prev is None:
        return new_flag, "none"  # I2: "no (s, d)-entry ... the NEW is unchanged"
    if prev.next_hop != next_hop:
        return True, "I2-c"  # next node changed: set NEW <- 1
    if prev.route_number == route_number and prev.new_flag:
        return True, "I2-a"  # same route-number, previous NEW=1: set NEW <- 1
    if prev.new_flag and rn_lt(prev.route_number, route_number):
        return new_flag, "I2-b"  # the sender moved to a new route-number: don't change NEW
    if not prev.new_flag:
        return new_flag, "I2-d"  # same next node, previous NEW=0: don't change NEW
    return new_flag, "-"


class RcTable:
    """The (s, d) table of one station, entries purged lazily after Delta (STYLE.md)."""

    def __init__(self, delta_ns: int) -> None:
        self.delta_ns = delta_ns
        self.entries: dict[tuple[int, int], RcEntry] = {}

    def get(self, s: int, d: int, now_ns: int) -> RcEntry | None:
        e = self.entries.get((s, d))
        if e is not None and now_ns - e.t_ns >= self.delta_ns:
            del self.entries[(s, d)]
            return None
        return e

    def forward(
        self, s: int, d: int, next_hop: int, route_number: int, new_flag: bool, now_ns: int
    ) -> tuple[bool, str]:
        new, case = table_i(self.get(s, d, now_ns), next_hop, route_number, new_flag)
        self.entries[(s, d)] = RcEntry(next_hop, route_number, new, now_ns)
        return new, case


# ------------------------------------------------------------------------ SR-4, SR-5
@dataclass(frozen=True, slots=True)
class Tx:
    """SR-4: a segment's last transmission."""

    route_number: int
    t_ns: int
    by_rto: bool


def sr5_valid(rr_number: int, nr: bool, tx_i: Tx | None, tx_j: Tx | None) -> bool:
    """SR-5 (a)-(d) for a dupACK acknowledging i and missing j."""
    if tx_i is None or tx_j is None:
        return False
    return (
        rr_number == tx_i.route_number  # (a)
        and tx_i.t_ns > tx_j.t_ns  # (b)
        and tx_j.route_number == rr_number  # (c) same route-number ...
        and not nr  # ... and the ACK for i returns with NEW = 0
        and not tx_i.by_rto  # (d)
    )


class RouteControl:
    def __init__(self, ctx: NodeContext, params: RouteControlParams, api: TcpControl | None) -> None:
        self.ctx = ctx
        self.p = params
        self.api = api
        self.table = RcTable(params.delta_ns)
        self.sent: dict[ConnId, OrderedDict[int, Tx]] = {}
        self.nacked: dict[ConnId, int] = {}
        """The last segment retransmitted after a valid NACK, per connection (once per hole)."""

    # ---------------------------------------------------------------- I2 (every station)
    def on_data_forward(self, ev: AodvIpForward) -> None:
        packet, next_hop, now_ns = ev.packet, ev.next_hop, ev.now_ns
        if len(packet) < 20 or packet[9] != IPPROTO_TCP:
            return
        mark = P.read_rc_mark(packet)
        s, d = ip_to_station(bytes(packet[12:16])), ip_to_station(bytes(packet[16:20]))
        if mark is None or s is None or d is None:
            return
        rn, new = mark
        out, case = self.table.forward(s, d, next_hop, rn, new, now_ns)
        self.ctx.counters.extra[f"rc_table_{case}"] += 1
        if out != new:
            P.write_rc_mark(packet, rn, out)  # also fixes the header checksum
            self.ctx.counters.extra["rc_new_set"] += 1

    # ---------------------------------------------------------------- sender (S3, SR-4, SR-5)
    def on_segment_sent(self, ev: TcpSegmentSent) -> None:
        conn, seq, retransmission, now_ns = ev.conn, ev.seq, ev.retransmission, ev.now_ns
        assert self.api is not None
        txs = self.sent.setdefault(conn, OrderedDict())
        # A kernel retransmission is an RTO's (or the kernel's own fast retransmit): (d) fails.
        txs[seq] = Tx(self.api.route_number(conn.remote_ip), now_ns, retransmission)
        txs.move_to_end(seq)
        while len(txs) > self.p.max_tracked_segments:
            txs.popitem(last=False)

    def _s3(self, conn: ConnId, rc_echo: tuple[int, bool] | None) -> None:
        assert self.api is not None
        if rc_echo is None:
            return
        rr, nr = rc_echo
        if nr and rr == self.api.route_number(conn.remote_ip):
            self.api.bump_route_number(conn.remote_ip)
            self.ctx.counters.extra["rc_route_number_bumped"] += 1

    def on_ack(self, ev: TcpAck) -> None:
        conn, ack = ev.conn, ev.ack
        self._s3(conn, ev.rc_echo)
        txs = self.sent.get(conn)
        if txs is not None:
            for s in [s for s in txs if P.seq_lt(s, ack)]:
                del txs[s]

    def on_dupack(self, ev: TcpDupack) -> list[Action]:
        conn, ack, rc_echo, now_ns = ev.conn, ev.ack, ev.rc_echo, ev.now_ns
        self._s3(conn, rc_echo)
        if not self.p.fast_retransmit or rc_echo is None or self.nacked.get(conn) == ack:
            return []
        txs = self.sent.get(conn, OrderedDict())
        tx_j = txs.get(ack)
        # i: the ACK is for the latest segment sent above j (TCP's cumulative ACK does not name it).
        tx_i = next((t for s, t in reversed(txs.items()) if P.seq_lt(ack, s)), None)
        rr, nr = rc_echo
        if not sr5_valid(rr, nr, tx_i, tx_j):
            self.ctx.counters.extra["rc_dupack_not_valid"] += 1
            return []
        assert self.api is not None and tx_j is not None
        self.nacked[conn] = ack
        self.ctx.counters.extra["rc_fast_retransmits"] += 1
        txs[ack] = Tx(tx_j.route_number, now_ns, False)  # a retransmission after a valid NACK
        txs.move_to_end(ack)
        return self.api.retransmit(conn, ack, now_ns)


NEEDS = Needs(events=frozenset({AodvIpForward}), endpoint=True, rewrites_ip_id=True)
"""Table I runs where a plain IP packet is forwarded, editable (AODV's ``AodvIpForward``); the
sender side needs the agent; the marks travel in the IPv4 Identification."""


PARAMS = RouteControlParams


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: RouteControlParams) -> RouteControl:
    p = params
    api: TcpControl | None = ctx.endpoint
    ext = RouteControl(ctx, p, api)
    if p.intermediate:
        ctx.hooks.subscribe(AodvIpForward, ext.on_data_forward)
    if api is not None:
        agent = api.agent
        if not agent.params.route_control:
            agent.params = dataclasses.replace(agent.params, route_control=True)
        api.on_segment_sent(ext.on_segment_sent)
        api.on_ack(ext.on_ack)
        api.on_dupack(ext.on_dupack)
    return ext
