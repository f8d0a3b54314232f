"""ATCP, the thin layer between TCP and IP at the sender (Liu & Singh, IEEE JSAC 19(7) 2001,
section III, Fig. 2, and section IV's implementation: ``atcp_input``, ``atcp_output``,
``atcp_slowtimo``, ``atcp_notify``).

States (Fig. 2) and what moves between them:

- *normal* -> *loss*: "When it sees that three duplicate ACKs have been received, it does not
  forward the third duplicate ACK but puts TCP in persist mode. Similarly, when ATCP sees that
  TCP's RTO is about to expire, it again puts TCP in persist mode ... After ATCP puts TCP in
  persist mode, ATCP enters the loss state."
- *loss*: "ATCP transmits the unacknowledged segments from TCP's send buffer. It maintains its
  own separate timers to retransmit these segments in the event that ACK's are not forthcoming.
  Eventually, when a new ACK arrives ... ATCP forward that ACK to TCP which also removes TCP from
  persist mode. ATCP then returns to its normal state." ``atcp_output()`` "discards TCP's persist
  probe packets" in loss.
- *normal* -> *congested* on ECN: "ATCP ... does nothing. It ignores any duplicate ACKs ... and
  imminent RTO expiration events ... After TCP transmits a new segment, ATCP returns to its
  normal state." *loss* -> *congested* on ECN, and "ATCP removes TCP from its persist state".
- any -> *disconnected* on ICMP Destination Unreachable: "puts the TCP sender into persist mode",
  "sets TCP's CWND to one segment"; back to *normal* when the receiver answers a probe and TCP
  sends a non-probe segment.

Realisation with the endpoint agent (docs/fidelity.md "ATCP" rows): dupACKs counted by the agent
(``tcp_dupack``; ``withhold_dupacks(conn, {3})`` drops the third), persist = ``hold`` (zero
window; ``quiet`` in loss: the kernel's segments are discarded, ``persist`` when disconnected:
its probes pass), retransmission from the agent's copies (``retransmit_unacked``), cwnd = 1 via
the controllable Reno (``atcp_disconnect``), ECN-Echo read from the ACKs the agent keeps.
"Imminent RTO": Linux exposes no pending-timer time, so the extension predicts it like
``atcp_slowtimo``: a timer at ``last progress + srtt + rto_floor - imminent_margin`` (srtt from the
kernel's BPF state; ``rto_floor`` is Linux's minimum RTO term), re-armed by every new ACK.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from nodes.core.clock import NS_PER_S
from nodes.core.events import Action, CancelTimer, SetTimer
from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions._tcp import endpoint_of
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import (
    ENDPOINT,
    ConnId,
    EndpointAgent,
    TcpAck,
    TcpDupack,
    TcpSegmentSent,
    TcpTimer,
    TcpUnreachable,
)
from nodes.tcpctl.api import TcpControl


class AtcpState(IntEnum):
    NORMAL = 1
    CONGESTED = 2
    LOSS = 3
    DISCONNECTED = 4


TRANSITIONS: dict[AtcpState, frozenset[AtcpState]] = {
    # Fig. 2 of Liu & Singh 2001
    AtcpState.NORMAL: frozenset({AtcpState.LOSS, AtcpState.CONGESTED, AtcpState.DISCONNECTED}),
    AtcpState.LOSS: frozenset({AtcpState.NORMAL, AtcpState.CONGESTED, AtcpState.DISCONNECTED}),
    AtcpState.CONGESTED: frozenset({AtcpState.NORMAL, AtcpState.DISCONNECTED}),
    AtcpState.DISCONNECTED: frozenset({AtcpState.NORMAL}),
}


class IllegalTransition(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class AtcpParams:
    tcp_rexmtthresh: int = 3
    """"puts TCP into persist mode if it has received tcp_rexmtthresh number of duplicate ACKs
    (the default value of tcp_rexmtthresh is 3)"; the tcp_rexmtthresh-th dupACK is withheld."""
    imminent_margin: float = 0.05
    """s; how long before the predicted RTO expiration ATCP acts ("about to expire")."""
    rto_floor: float = 0.2
    """s; Linux's minimum RTO term (TCP_RTO_MIN): predicted RTO = srtt + rto_floor, at least."""
    srtt_default: float = 0.5
    """s; srtt assumed before the kernel reports one."""
    loss_rexmt_interval: float = 1.0
    """s; ATCP's "own separate timers to retransmit these segments" while in loss."""
    loss_rexmt_limit: int = 64
    """Segments retransmitted per round in loss (the agent's copies of the send buffer)."""
    imminent_rto: bool = True
    """Enter loss on a predicted RTO expiration (the paper's second trigger)."""

    def __post_init__(self) -> None:
        if self.tcp_rexmtthresh < 1 or self.loss_rexmt_limit < 1:
            raise ValueError("tcp_rexmtthresh and loss_rexmt_limit must be >= 1")
        if min(self.imminent_margin, self.rto_floor, self.srtt_default) < 0 or self.loss_rexmt_interval <= 0:
            raise ValueError("times must be >= 0 (loss_rexmt_interval > 0)")

    @property
    def imminent_margin_ns(self) -> int:
        return round(self.imminent_margin * NS_PER_S)

    @property
    def rto_floor_ns(self) -> int:
        return round(self.rto_floor * NS_PER_S)

    @property
    def loss_rexmt_interval_ns(self) -> int:
        return round(self.loss_rexmt_interval * NS_PER_S)


@dataclass(slots=True)
class ConnAtcp:
    state: AtcpState = AtcpState.NORMAL
    rto_due: int | None = None
    """When the imminent-RTO timer fires (None: not armed)."""
    history: list[tuple[int, str, str, str]] = field(default_factory=list)
    """(t_ns, old, new, cause)."""


class Atcp:
    """ATCP for every connection the station sends on."""

    name = "atcp"

    def __init__(self, api: TcpControl, params: AtcpParams, log: logging.Logger) -> None:
        self.api = api
        self.p = params
        self.log = log
        self.conns: dict[ConnId, ConnAtcp] = {}
        self.counters = {
            "loss_dupack": 0,
            "loss_rto": 0,
            "congested": 0,
            "disconnected": 0,
            "rexmt_rounds": 0,
        }
        api.on_segment_sent(self.on_segment_sent)
        api.on_ack(self.on_ack)
        api.on_dupack(self.on_dupack)
        api.on_unreachable(self.on_unreachable)
        api.on_timer(self.on_timer)

    # ------------------------------------------------------------------ state
    def state_of(self, conn: ConnId) -> AtcpState:
        c = self.conns.get(conn)
        return AtcpState.NORMAL if c is None else c.state

    def _set(self, conn: ConnId, new: AtcpState, now_ns: int, cause: str) -> None:
        c = self.conns.setdefault(conn, ConnAtcp())
        if new not in TRANSITIONS[c.state]:
            raise IllegalTransition(f"atcp {conn}: {c.state.name} -> {new.name} ({cause})")
        self.log.info("atcp %s: %s -> %s (%s)", conn, c.state.name, new.name, cause)
        c.history.append((now_ns, c.state.name, new.name, cause))
        del c.history[:-128]
        c.state = new
        # normal withholds the rexmtthresh-th dupACK; congested "ignores any duplicate ACKs"
        self.api.withhold_dupacks(conn, {self.p.tcp_rexmtthresh} if new != AtcpState.CONGESTED else set())

    def _track(self, conn: ConnId) -> ConnAtcp:
        c = self.conns.get(conn)
        if c is None:
            c = self.conns[conn] = ConnAtcp()
            self.api.withhold_dupacks(conn, {self.p.tcp_rexmtthresh})
        return c

    def _held(self, conn: ConnId) -> bool:
        c = self.api.agent.conns.get(conn)
        return c is not None and c.hold is not None

    def _outstanding(self, conn: ConnId) -> bool:
        c = self.api.agent.conns.get(conn)
        return c is not None and c.snd_una is not None and c.snd_nxt is not None and c.snd_una != c.snd_nxt

    def _ece(self, conn: ConnId) -> bool:
        c = self.api.agent.conns.get(conn)
        if c is None or c.last_ack_pkt is None:
            return False
        t = P.parse_tcp(c.last_ack_pkt)
        return t is not None and bool(t.flags & P.ECE)

    def _rto_timer(self, conn: ConnId, now_ns: int) -> list[Action]:
        """(Re)arm the imminent-RTO timer: the kernel restarts its timer at every new ACK."""
        c = self.conns[conn]
        key: Hashable = (ENDPOINT, "atcp", conn, "rto")
        if not self.p.imminent_rto or not self._outstanding(conn):
            c.rto_due = None
            return [CancelTimer(key)]
        st = self.api.kernel_state(conn) or {}
        srtt_ns = int(st.get("srtt_us", 0)) * 1000 or round(self.p.srtt_default * NS_PER_S)
        c.rto_due = now_ns + max(0, srtt_ns + self.p.rto_floor_ns - self.p.imminent_margin_ns)
        return [SetTimer(key, c.rto_due)]

    def _cancel_rto(self, conn: ConnId) -> list[Action]:
        self.conns[conn].rto_due = None
        return [CancelTimer((ENDPOINT, "atcp", conn, "rto"))]

    def _enter_loss(self, conn: ConnId, now_ns: int, cause: str) -> list[Action]:
        self._set(conn, AtcpState.LOSS, now_ns, cause)
        acts = self.api.hold(conn, now_ns, "quiet", "new_ack")
        acts += self._retransmit(conn, now_ns)
        return acts

    def _retransmit(self, conn: ConnId, now_ns: int) -> list[Action]:
        self.counters["rexmt_rounds"] += 1
        acts = self.api.retransmit_unacked(conn, now_ns, self.p.loss_rexmt_limit)
        acts.append(SetTimer((ENDPOINT, "atcp", conn, "loss"), now_ns + self.p.loss_rexmt_interval_ns))
        return acts

    def _answers_probe(self, conn: ConnId) -> bool:
        """This ACK (hook called before the agent acts on it) answers a persist probe, so the
        agent releases the hold with it: "This removes TCP from persist mode and moves ATCP
        back into normal state"."""
        c = self.api.agent.conns.get(conn)
        h = None if c is None else c.hold
        return h is not None and h.release_on == "any_ack" and EndpointAgent.answers_probe(h)

    def _leave_hold_states(self, conn: ConnId, now_ns: int, cause: str) -> list[Action]:
        """The agent released the hold by itself (new ACK in loss, answered probe when
        disconnected): ATCP is back in normal."""
        c = self.conns.get(conn)
        if c is None or c.state not in (AtcpState.LOSS, AtcpState.DISCONNECTED) or self._held(conn):
            return []
        self._set(conn, AtcpState.NORMAL, now_ns, cause)
        return [CancelTimer((ENDPOINT, "atcp", conn, "loss"))]

    # ------------------------------------------------------------------ hooks
    def on_segment_sent(self, ev: TcpSegmentSent) -> list[Action]:
        conn, now_ns = ev.conn, ev.now_ns
        c = self._track(conn)
        out = self._leave_hold_states(conn, now_ns, "TCP sends again")
        if c.state == AtcpState.CONGESTED and not ev.retransmission:
            self._set(conn, AtcpState.NORMAL, now_ns, "TCP transmits a new segment")
        if c.state == AtcpState.NORMAL and c.rto_due is None:
            out += self._rto_timer(conn, now_ns)
        return out

    def on_ack(self, ev: TcpAck) -> list[Action]:
        """A new ACK (called before the agent forwards it; in loss the agent then releases)."""
        conn, now_ns = ev.conn, ev.now_ns
        c = self._track(conn)
        out: list[Action] = []
        if self._ece(conn) and c.state in (AtcpState.NORMAL, AtcpState.LOSS):
            if c.state == AtcpState.LOSS:
                out += self.api.release(conn, now_ns)  # "ATCP removes TCP from its persist state"
                out.append(CancelTimer((ENDPOINT, "atcp", conn, "loss")))
            self._set(conn, AtcpState.CONGESTED, now_ns, "ECN")
            self.counters["congested"] += 1
            return out
        if c.state == AtcpState.LOSS:
            # "when a new ACK arrives ... ATCP forward that ACK to TCP which also removes TCP from
            # persist mode. ATCP then returns to its normal state" (the agent forwards it)
            self._set(conn, AtcpState.NORMAL, now_ns, "new ACK")
            out.append(CancelTimer((ENDPOINT, "atcp", conn, "loss")))
        elif c.state == AtcpState.DISCONNECTED:
            if not self._answers_probe(conn):
                return out
            self._set(conn, AtcpState.NORMAL, now_ns, "probe answered")
        if c.state == AtcpState.NORMAL:
            out += self._rto_timer(conn, now_ns)
        return out

    def on_dupack(self, ev: TcpDupack) -> list[Action]:
        conn, count, now_ns = ev.conn, ev.count, ev.now_ns
        c = self._track(conn)
        if self._ece(conn) and c.state == AtcpState.NORMAL:
            self._set(conn, AtcpState.CONGESTED, now_ns, "ECN")
            self.counters["congested"] += 1
            return []
        if c.state == AtcpState.NORMAL and count == self.p.tcp_rexmtthresh:
            self.counters["loss_dupack"] += 1
            return self._cancel_rto(conn) + self._enter_loss(conn, now_ns, f"{count} dupACKs")
        if c.state == AtcpState.DISCONNECTED and self._answers_probe(conn):
            self._set(conn, AtcpState.NORMAL, now_ns, "probe answered")
            return self._rto_timer(conn, now_ns)
        return []

    def on_unreachable(self, ev: TcpUnreachable) -> list[Action]:
        """``atcp_notify()``: Destination Unreachable -> disconnected (persist, cwnd 1 segment).
        Returning actions makes the agent consume the ICMP."""
        conn, now_ns = ev.conn, ev.now_ns
        a = self.api.agent.conns.get(conn)
        if a is None or a.snd_nxt is None:
            # "The ATCP layer is only active at the TCP sender": a router's ICMP about a pure
            # ACK of a receiver (the network answers every packet it cannot deliver) goes to the
            # receiver's kernel untouched
            return []
        c = self._track(conn)
        if c.state == AtcpState.DISCONNECTED:
            return self.api.hold(conn, now_ns, "persist", "any_ack")  # still held; ICMP consumed
        self._set(conn, AtcpState.DISCONNECTED, now_ns, "ICMP Destination Unreachable")
        self.counters["disconnected"] += 1
        return [
            *self._cancel_rto(conn),
            CancelTimer((ENDPOINT, "atcp", conn, "loss")),
            *self.api.atcp_disconnect(conn, now_ns),
        ]

    def on_timer(self, ev: TcpTimer) -> list[Action]:
        key, now_ns = ev.key, ev.now_ns
        if not (isinstance(key, tuple) and len(key) == 4 and key[1] == "atcp"):
            return []
        conn, kind = key[2], key[3]
        c = self.conns.get(conn)
        if c is None:
            return []
        if kind == "rto":
            c.rto_due = None
            if c.state == AtcpState.NORMAL and self._outstanding(conn) and not self._held(conn):
                self.counters["loss_rto"] += 1
                return self._enter_loss(conn, now_ns, "RTO about to expire")
            return []
        if kind == "loss" and c.state == AtcpState.LOSS:
            if not self._held(conn):
                return self._leave_hold_states(conn, now_ns, "released")
            return self._retransmit(conn, now_ns)
        return []

    def state(self) -> dict[str, Any]:
        return {
            "counters": dict(self.counters),
            "conns": {str(k): {"state": v.state.name, "history": v.history} for k, v in self.conns.items()},
        }


PARAMS = AtcpParams
NEEDS = Needs(endpoint=True)
"""Any routing protocol: it acts on kernel TCP only."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: AtcpParams) -> Atcp:
    return Atcp(endpoint_of(ctx, "atcp"), params, ctx.log.getChild("atcp"))
