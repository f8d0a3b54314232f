"""BEAD, Best-Effort ACK Delivery (Yu 2004, MobiCom, sections 4.1, 4.3.2, 4.3.3 and Algorithm 1),
over DSR.

s4.1 items 3 and 4: "If ACKs are dropped after being salvaged by an intermediate node, then the
current node notifies the intermediate node about lost ACKs. That node first attempts to
retransmit an ACK with the highest sequence number among lost ACKs using a cached route; if it
cannot, it sends a notification about lost ACKs to the TCP receiver." "When forwarding a
notification about lost ACKs, a node attempts to retransmit an ACK with the highest sequence
number among lost ACKs to the TCP sender using a cached route. If it can do so, it marks the
notification to indicate that an ACK has been retransmitted. If none of the intermediate nodes is
able to retransmit an ACK, the routing protocol at the TCP receiver retransmits an ACK if it has a
cached route."

What runs where (every station runs the same extension; DSR hooks only):

- The node detecting the break: lost ACKs go into the shared drop_list and into the ROUTE
  ERROR's conn_list (``nodes.extensions.epln.LossNotifier``, packet type ACK).
- Every node forwarding a TCP ACK keeps a copy (``DataForwarded``; :attr:`Bead.ack_copies`,
  the last ``ack_copies_per_conn`` per connection): ns-2 builds the retransmitted ACK from the
  notification packet (``new_p.tcph.seqno <- max(seq_no in e)``); on real TCP we need a real
  segment, and the nodes on the notification path are the nodes that forwarded the lost ACK.
- A node forwarding a notification (s4.3.2; ``DsrControlForwarded``): for each ACK entry with
  ``ack_sent`` false, if it has a cached route to the TCP sender and a copy of an ACK at least as
  high as the highest lost one, it sends that ACK and sets ``ack_sent`` in the packet it forwards
  (in place: "marks a field called ack_sent as true in the corresponding entry of the conn_list").
- The notification's destination (Algorithm 1; ``DsrRouteErrorReceived`` with ``for_me``):
  the TCP receiver (``e.src`` is this node) resends its latest ACK through the endpoint agent
  (``ctx.endpoint.resend_ack``) if ``ack_sent`` is false and it has a cached route to the
  sender; an intermediate (salvaging) node sends its copy to the sender, else (and only when the
  notification is not a nested ROUTE ERROR, ``num_route_error = 1``) a notification to the TCP
  receiver, over cached routes.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from nodes.core.events import Action
from nodes.core.hooks import DataForwarded, Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions import core_api
from nodes.extensions.epln import (
    CONN_INFO,
    F_ACK,
    F_ACK_SENT,
    SEQ_ITEM,
    ConnInfo,
    ConnListOption,
    LossNotifier,
    conn_list_offsets,
    first_entries,
    station_of,
    tcp_of,
)
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.events import DsrControlForwarded, DsrRouteErrorReceived
from nodes.protocols.dsr.options import RouteError
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId


@dataclass(frozen=True, slots=True)
class BeadParams:
    ack_copies_per_conn: int = 8
    """ACK copies kept per connection at each forwarding node (ours: the paper synthesises one)."""
    max_conns: int = 64
    """Connections whose ACKs are kept (least recently seen forgotten first)."""
    receiver_resend: bool = True
    """Algorithm 1: the TCP receiver's router retransmits the ACK when nobody on the path did."""

    def __post_init__(self) -> None:
        if self.ack_copies_per_conn < 1 or self.max_conns < 1:
            raise ValueError("ack_copies_per_conn and max_conns must be >= 1")


def highest(e: ConnInfo) -> int:
    """ "an ACK with the highest sequence number among lost ACKs" (wrap-around compare)."""
    best = e.lost[0] if e.lost else e.seqnos[0][0]
    for s in e.lost:
        if P.seq_lt(best, s):
            best = s
    return best


class Bead:
    """BEAD at one station (all roles)."""

    name = "bead"

    def __init__(
        self, ctx: NodeContext, protocol: DsrRouting, params: BeadParams, log: logging.Logger
    ) -> None:
        self.ctx = ctx
        self.protocol = protocol
        self.p = params
        self.log = log
        LossNotifier.of(ctx).track("ack")
        self.ack_copies: OrderedDict[ConnId, deque[tuple[int, bytes]]] = OrderedDict()
        """connection (as the TCP receiver names it) -> (ack number, IP packet) copies."""
        self.retransmitted: list[tuple[int, ConnId, int, str]] = []
        """(t_ns, connection, ack number, role) of every ACK this node retransmitted."""
        self.counters = dict.fromkeys(
            ("ack_copies", "acks_retransmitted", "ack_sent_marked", "notified_receiver", "no_route"), 0
        )
        hooks = ctx.hooks
        hooks.subscribe(DataForwarded, self.on_data_forward)
        hooks.subscribe(DsrControlForwarded, self.on_control_forward)
        hooks.subscribe(DsrRouteErrorReceived, self.on_route_error_received)

    # ------------------------------------------------------------------ ACK copies
    def on_data_forward(self, ev: DataForwarded) -> list[Action]:
        packet = ev.packet
        t = tcp_of(packet)
        if t is None or t[1] != "ack":
            return []
        conn, _k, ack = t
        q = self.ack_copies.get(conn)
        if q is None:
            q = self.ack_copies[conn] = deque(maxlen=self.p.ack_copies_per_conn)
            while len(self.ack_copies) > self.p.max_conns:
                self.ack_copies.popitem(last=False)
        else:
            self.ack_copies.move_to_end(conn)
        q.append((ack, srcroute.strip(packet)))
        self.counters["ack_copies"] += 1
        return []

    def copy_for(self, conn: ConnId, ack: int) -> bytes | None:
        """The copy of ACK ``ack``, else the lowest kept ACK above it (cumulative), else None."""
        best: tuple[int, bytes] | None = None
        for a, pkt in self.ack_copies.get(conn, ()):
            if a == ack:
                return pkt
            if P.seq_lt(ack, a) and (best is None or P.seq_lt(a, best[0])):
                best = (a, pkt)
        return None if best is None else best[1]

    def _retransmit(self, e: ConnInfo, role: str, now_ns: int) -> list[Action] | None:
        """Send the highest lost ACK of ``e`` to the TCP sender over a cached route (or None)."""
        sender = station_of(e.dst)
        pkt = self.copy_for(e.conn, highest(e))
        if sender is None or pkt is None:
            return None
        acts = self.protocol.send_inner_cached(pkt, sender)
        if acts is None:
            return None
        self._record(e, role, now_ns)
        return list(acts)

    def _record(self, e: ConnInfo, role: str, now_ns: int) -> None:
        self.retransmitted.append((now_ns, e.conn, highest(e), role))
        del self.retransmitted[:-256]
        self.counters["acks_retransmitted"] += 1
        self.ctx.counters.extra["bead_acks_retransmitted"] += 1

    # ------------------------------------------------------------------ forwarding a notification
    def on_control_forward(self, ev: DsrControlForwarded) -> list[Action]:
        """s4.3.2: retransmit for entries with ``ack_sent`` false and mark them in the packet."""
        packet, now_ns = ev.packet, ev.now_ns
        out: list[Action] = []
        for off in list(conn_list_offsets(packet)):
            i, end = off + 2, off + 2 + packet[off + 1]
            while i + CONN_INFO.size <= end:
                flags, n = packet[i + 12], packet[i + 13]
                if flags & F_ACK and not flags & F_ACK_SENT:
                    e = _entry_at(packet, i)
                    if e is not None:
                        acts = self._retransmit(e, "forwarder", now_ns)
                        if acts is not None:
                            packet[i + 12] = flags | F_ACK_SENT
                            self.counters["ack_sent_marked"] += 1
                            out += acts
                i += CONN_INFO.size + n * SEQ_ITEM.size
        return out

    # ------------------------------------------------------------------ receiving a notification
    def on_route_error_received(self, ev: DsrRouteErrorReceived) -> list[Action]:
        """Algorithm 1, ACK entries (``e.ptype = ACK``)."""
        if not ev.for_me:
            return []
        rerr, now_ns = ev.rerr, ev.now_ns
        entries, nested = first_entries(ev.following)
        out: list[Action] = []
        for e in entries:
            if e.ptype != "ack" or e.ack_sent:
                continue
            if e.src == self.ctx.ip:
                out += self._at_receiver(e, now_ns)
                continue
            acts = self._retransmit(e, "intermediate", now_ns)
            if acts is not None:
                out += acts
                continue
            receiver = station_of(e.src)
            if nested or receiver is None:
                continue
            note = RouteError(rerr.err_src, receiver, unreachable=rerr.unreachable)
            acts = self.protocol.send_options(receiver, [note, ConnListOption((e,))])
            if acts is None:
                self.counters["no_route"] += 1
                continue
            self.counters["notified_receiver"] += 1
            out += acts
        return out

    def _at_receiver(self, e: ConnInfo, now_ns: int) -> list[Action]:
        """Algorithm 1, ``e.src = net_id`` and ``e.ptype = ACK and e.ack_sent = FALSE``: "if
        findRoute(new_p.dest, new_p.route) then sendOutPacketWithRoute(new_p)"."""
        api = self.ctx.endpoint
        sender = station_of(e.dst)
        if not self.p.receiver_resend or sender is None:
            return []
        if self.protocol.cache.find(sender, now_ns) is None:
            self.counters["no_route"] += 1
            return []
        acts: list[Action] = list(api.resend_ack(e.conn)) if api is not None else []
        if not acts:
            pkt = self.copy_for(e.conn, highest(e))
            sent = None if pkt is None else self.protocol.send_inner_cached(pkt, sender)
            acts = list(sent or [])
        if acts:
            self._record(e, "receiver", now_ns)
        return acts

    def state(self) -> dict[str, Any]:
        return {"counters": dict(self.counters), "conns_with_copies": len(self.ack_copies)}


def _entry_at(buf: bytearray, i: int) -> ConnInfo | None:
    src, dst, sport, dport, flags, n = CONN_INFO.unpack_from(buf, i)
    j = i + CONN_INFO.size
    if n == 0 or j + n * SEQ_ITEM.size > len(buf):
        return None
    seqs = tuple(
        (s, bool(lost)) for s, lost in (SEQ_ITEM.unpack_from(buf, j + k * SEQ_ITEM.size) for k in range(n))
    )
    return ConnInfo(bytes(src), bytes(dst), sport, dport, "ack", seqs, bool(flags & F_ACK_SENT))


PARAMS = BeadParams
NEEDS = Needs(
    events=frozenset({DataForwarded, DsrControlForwarded, DsrRouteErrorReceived}),
    endpoint=True,
    core=DsrRouting,
    services=(LossNotifier,),
)
"""DSR's ROUTE ERROR carries the ACK entries (EPLN's shared notifier records them); copies and
retransmissions go over cached routes (``DsrRouting.send_inner_cached``)."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: BeadParams) -> Bead:
    return Bead(ctx, core_api(protocol, DsrRouting), params, ctx.log.getChild("bead"))
