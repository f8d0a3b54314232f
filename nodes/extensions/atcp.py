"""ATCP, the thin layer between TCP and IP at the sender (Liu & Singh, IEEE JSAC 19(7) 2001,
section III, Fig. 2, and section IV's implementation: ``atcp_input``, ``atcp_output``,
``atcp_slowtimo``, ``atcp_timers``, ``atcp_notify``).

States (Fig. 2) and what moves between them:

- *normal* -> *loss*: "When it sees that three duplicate ACKs have been received, it does not
  forward the third duplicate ACK but puts TCP in persist mode. Similarly, when ATCP sees that
  TCP's RTO is about to expire, it again puts TCP in persist mode ... After ATCP puts TCP in
  persist mode, ATCP enters the loss state."
- *loss*: "ATCP transmits the unacknowledged segments from TCP's send buffer. It maintains its
  own separate timers to retransmit these segments in the event that ACK's are not forthcoming.
  Eventually, when a new ACK arrives ... ATCP forward that ACK to TCP which also removes TCP from
  persist mode. ATCP then returns to its normal state." ``atcp_output()`` "discards TCP's persist
  probe packets" in loss; "If, after taking TCP out of persist mode, ATCP's congestion window
  size is greater than TCP's congestion window size, TCP's congestion window size is set to
  ATCP's congestion window size" (section IV).
- *normal* -> *congested* on ECN: "ATCP ... does nothing. It ignores any duplicate ACKs ... and
  imminent RTO expiration events ... After TCP transmits a new segment, ATCP returns to its
  normal state." *loss* -> *congested* on ECN, and "ATCP removes TCP from its persist state".
- any -> *disconnected* on ICMP Destination Unreachable: "puts the TCP sender into persist mode",
  "sets TCP's CWND to one segment"; back to *normal* when the receiver answers a probe and TCP
  sends a non-probe segment.

Realisation with the endpoint agent (docs/fidelity.md "ATCP" rows): dupACKs counted by the agent
as Linux's ``tcp_ack()`` counts them (``TcpDupack``; ``nodes.tcpctl.agent.AckView``: an old,
reordered ACK is ignored, a window update is none); in normal and loss every dupACK from the
third on is withheld, and any the kernel would count as its third (so TCP never enters fast
recovery on a bit-error loss, section III: "TCP does not invoke congestion control"), persist = ``hold``
(zero window; ``quiet`` in loss: the kernel's segments are discarded, ``persist`` when
disconnected: its probes pass), cwnd = 1 via the controllable Reno (``atcp_disconnect``),
ECN-Echo read from the ACKs the agent keeps.

What ATCP sends in loss: the first unacknowledged segment (from the agent's copy), once when it
enters loss and again each time its own retransmission timer expires without a new ACK; the
timer is TCP's RTO (the kernel's srtt + rttvar) doubled at each expiry. The paper's three
descriptions of what is resent all name one segment ("the offending segment", "retransmits the
unacknowledged packet", "retransmits the packet whose retransmit timer was about to expire",
sections III-A, IV, V-A), and its ~425 s for 1 MB against a 361 s bound (section V-A) leaves no
room for resending a window per loss (docs/fidelity.md). The kernel's cwnd and ssthresh are
saved when ATCP enters loss and set back when it leaves (``asnd_cwnd``), so a kernel RTO that
expires in persist (Linux cannot stop its retransmission timer; it then runs
``tcp_enter_loss()``) leaves no trace.

"Imminent RTO": ``atcp_slowtimo()`` runs every 500 ms and acts when TCP's retransmission timer
would expire before its next call. The extension acts ``imminent_lead`` (250 ms, the mean lead of
that check) before the kernel's timer, predicted as ``last progress + RTO`` (last progress: the
last new ACK, or a segment sent with nothing outstanding; RTO: see ``Atcp.rto_ns``, TCP's RTO
without the RTT samples of segments only ATCP resent, which the paper's ATCP keeps from TCP).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal, get_args

from nodes.core.clock import NS_PER_S, NS_PER_US
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

#: The readings of what ATCP resends in loss (``AtcpParams.loss_resend``).
LossResend = Literal["first", "window"]
LOSS_RESEND: tuple[str, ...] = get_args(LossResend)


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
    imminent_lead: float = 0.25
    """s; how long before TCP's predicted RTO expiry ATCP acts. "ATCP checks TCP/ATCP timers ...
    by calling atcp_slowtimo() every 500 ms" (section IV) and acts when the timer expires before
    its next call: a lead between 0 and 500 ms, 250 ms on average. A fixed lead, because Linux's
    timer is not on the same 500 ms tick (a polled check would race it and sometimes lose)."""
    rto_min: float = 0.2
    """s; the floor of the variance term of TCP's RTO (Linux TCP_RTO_MIN) in ATCP's estimator."""
    rto_default: float = 1.0
    """s; TCP's RTO before the kernel has an RTT sample (RFC 6298 (2.1), Linux TCP_TIMEOUT_INIT)."""
    loss_rexmt_max: float = 64.0
    """s; ATCP's retransmission timer in loss doubles at each expiry up to this (the paper's TCP:
    "the retransmission timer at the sender is doubled with each unsuccessful retransmission
    attempt (until it reaches 64 s)", section I-A)."""
    imminent_rto: bool = True
    """Enter loss on a predicted RTO expiration (the paper's second trigger)."""
    restore_cwnd: bool = True
    """Set the kernel's cwnd/ssthresh back to their values at the entry into loss when ATCP
    leaves it (section IV, ``asnd_cwnd``)."""
    restore_rto: bool = False
    """With ``restore_cwnd``, also keep TCP's RTO at its value at the entry into loss (a cap until
    the kernel's estimator is back under it: the ``old`` restore, as ELFN's thaw): the ACK that
    ends the loss state covers segments the kernel sent once, before ATCP resent them, and Linux
    takes an RTT sample from it that spans the whole recovery (RTO up to its 64 s ceiling on the
    Liu testbed), where the paper's ATCP "stop[s] the RTT timer" (``atcp_timers()``)."""
    loss_resend: LossResend = "first"
    """What ATCP sends in loss, at its entry and at each expiry of its own timer (docs/fidelity.md
    "ATCP loss retransmission" argues the default): ``first``, the first unacknowledged segment
    (the paper names one segment each time it says which: "the offending segment", "retransmits
    the unacknowledged packet", "the packet whose retransmit timer was about to expire");
    ``window``, every unacknowledged segment the agent holds a copy of, from snd_una (section
    III-C: "ATCP transmits the unacknowledged segments from TCP's send buffer", as FreeBSD's
    tcp_output() resends from snd_una what the window allows)."""

    def __post_init__(self) -> None:
        if self.tcp_rexmtthresh < 1:
            raise ValueError("tcp_rexmtthresh must be >= 1")
        if self.loss_resend not in LOSS_RESEND:
            raise ValueError(f"loss_resend must be one of {', '.join(LOSS_RESEND)}, not {self.loss_resend!r}")
        if min(self.rto_default, self.loss_rexmt_max) <= 0 or min(self.imminent_lead, self.rto_min) < 0:
            raise ValueError("rto_default, loss_rexmt_max must be > 0 and imminent_lead, rto_min >= 0 (s)")

    @property
    def imminent_lead_ns(self) -> int:
        return round(self.imminent_lead * NS_PER_S)

    @property
    def rto_min_ns(self) -> int:
        return round(self.rto_min * NS_PER_S)

    @property
    def rto_default_ns(self) -> int:
        return round(self.rto_default * NS_PER_S)

    @property
    def loss_rexmt_max_ns(self) -> int:
        return round(self.loss_rexmt_max * NS_PER_S)


@dataclass(slots=True)
class ConnAtcp:
    state: AtcpState = AtcpState.NORMAL
    rto_base: int | None = None
    """When the kernel (re)started its retransmission timer: the last new ACK, or the first
    segment sent with nothing outstanding (None: nothing outstanding)."""
    rto_due: int | None = None
    """When the imminent-RTO timer fires (None: not armed)."""
    sent: dict[int, tuple[int, bool]] = field(default_factory=dict)
    """end sequence -> (first sent, retransmitted) of each unacknowledged segment: ATCP's RTT
    samples (Karn's algorithm: none from a retransmitted segment)."""
    srtt: int = 0
    """ns; ATCP's estimate of TCP's smoothed RTT (RFC 6298 section 2; 0: no sample yet)."""
    rttvar: int = 0
    loss_rto: int = 0
    """ns; the current interval of ATCP's own retransmission timer in loss."""
    history: list[tuple[int, str, str, str]] = field(default_factory=list)
    """(t_ns, old, new, cause)."""


class Atcp:
    """ATCP for every connection the station sends on."""

    name = "atcp"

    def __init__(
        self,
        api: TcpControl,
        params: AtcpParams,
        log: logging.Logger,
        extra: Counter[str] | None = None,
    ) -> None:
        self.api = api
        self.p = params
        self.log = log
        self.extra = extra
        """The router's ``counters.extra``: the counters below appear there as ``atcp_<name>``."""
        self.conns: dict[ConnId, ConnAtcp] = {}
        self.counters = {
            "loss_dupack": 0,
            "loss_rto": 0,
            "congested": 0,
            "disconnected": 0,
            "rexmt": 0,
            "rexmt_timer": 0,
            "loss_exits": 0,
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

    def _count(self, name: str) -> None:
        self.counters[name] += 1
        if self.extra is not None:
            self.extra[f"atcp_{name}"] += 1

    def _withhold(self, conn: ConnId, state: AtcpState) -> None:
        """normal and loss withhold every dupACK from the rexmtthresh-th on, and any the kernel
        would count as its rexmtthresh-th (the agent counts as Linux does, ``AckView``): TCP
        never counts rexmtthresh of them and "does not invoke congestion control" (section
        III); disconnected the rexmtthresh-th (its probes' answers pass); congested "ignores any
        duplicate ACKs" (they all reach TCP)."""
        k = self.p.tcp_rexmtthresh
        if state == AtcpState.CONGESTED:
            self.api.withhold_dupacks(conn, set())
        elif state == AtcpState.DISCONNECTED:
            self.api.withhold_dupacks(conn, {k})
        else:
            self.api.withhold_dupacks(conn, set(), from_count=k)

    def _set(self, conn: ConnId, new: AtcpState, now_ns: int, cause: str) -> None:
        c = self.conns.setdefault(conn, ConnAtcp())
        if new not in TRANSITIONS[c.state]:
            raise IllegalTransition(f"atcp {conn}: {c.state.name} -> {new.name} ({cause})")
        self.log.info("atcp %s: %s -> %s (%s)", conn, c.state.name, new.name, cause)
        c.history.append((now_ns, c.state.name, new.name, cause))
        del c.history[:-128]
        c.state = new
        self._withhold(conn, new)

    def _track(self, conn: ConnId) -> ConnAtcp:
        c = self.conns.get(conn)
        if c is None:
            c = self.conns[conn] = ConnAtcp()
            self._withhold(conn, c.state)
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

    def rto_ns(self, conn: ConnId) -> int:
        """TCP's RTO as the paper's TCP has it: the smaller of ATCP's own estimate (RFC 6298
        over the RTT samples of segments sent once, Karn's algorithm) and the kernel's (srtt +
        rttvar of its last RTT sample, Linux's ``__tcp_set_rto``, from the BPF state);
        ``rto_default`` before either has a sample. The kernel also samples the ACK of a segment
        only ATCP resent (it sent it once; the sample spans the whole loss recovery and inflates
        its RTO), which the paper's ATCP prevents: ``atcp_timers()`` "stop[s] the RTT timer"."""
        c = self.conns.get(conn)
        own = c.srtt + max(self.p.rto_min_ns, 4 * c.rttvar) if c is not None and c.srtt else 0
        st = self.api.kernel_state(conn) or {}
        kern = int(st.get("rto_est_us", 0)) * NS_PER_US
        if own and kern:
            return min(own, kern)
        return own or kern or self.p.rto_default_ns

    def _rtt_sample(self, c: ConnAtcp, ack: int, now_ns: int) -> None:
        """Forget the segments ``ack`` covers; one RTT sample from the oldest of them (Linux's
        ``seq_rtt_us``) unless any was retransmitted (RFC 6298 section 3, Karn)."""
        acked = [e for e in c.sent if P.seq_le(e, ack)]
        if not acked:
            return
        first = min(c.sent[e][0] for e in acked)
        karn = any(c.sent[e][1] for e in acked)
        for e in acked:
            del c.sent[e]
        if karn:
            return
        r = now_ns - first
        if not c.srtt:  # RFC 6298 (2.2)
            c.srtt, c.rttvar = r, r // 2
        else:  # (2.3): beta 1/4, alpha 1/8
            c.rttvar += (abs(c.srtt - r) - c.rttvar) // 4
            c.srtt += (r - c.srtt) // 8

    def _rto_key(self, conn: ConnId) -> Hashable:
        return (ENDPOINT, "atcp", conn, "rto")

    def _loss_key(self, conn: ConnId) -> Hashable:
        return (ENDPOINT, "atcp", conn, "loss")

    def _arm_rto(self, conn: ConnId, now_ns: int) -> list[Action]:
        """The imminent-RTO timer: ``imminent_lead`` before TCP's timer, which the kernel runs
        from ``rto_base`` (the last new ACK, or a send with nothing outstanding)."""
        c = self.conns[conn]
        if not self.p.imminent_rto or c.rto_base is None or c.state != AtcpState.NORMAL:
            if c.rto_due is None:
                return []
            c.rto_due = None
            return [CancelTimer(self._rto_key(conn))]
        c.rto_due = max(now_ns, c.rto_base + self._rto_minus_lead(conn))
        return [SetTimer(self._rto_key(conn), c.rto_due)]

    def _rto_minus_lead(self, conn: ConnId) -> int:
        """The RTO less the lead, which is at most half the RTO (Linux's RTO can be 200 ms + srtt;
        the paper's BSD TCP had a 1 s minimum, so its 500 ms check never acted sooner than half
        an RTO after progress)."""
        rto = self.rto_ns(conn)
        return rto - min(self.p.imminent_lead_ns, rto // 2)

    def _enter_loss(self, conn: ConnId, now_ns: int, cause: str) -> list[Action]:
        """Persist (window 0, the kernel's segments discarded), save cwnd/ssthresh (executed at
        the zero-window ACK ``hold`` hands the kernel), resend the first unacknowledged segment
        and start ATCP's own retransmission timer at TCP's RTO."""
        self._set(conn, AtcpState.LOSS, now_ns, cause)
        if self.p.restore_cwnd:
            self.api.snapshot(conn)
        acts = self._arm_rto(conn, now_ns) + self.api.hold(conn, now_ns, "quiet", "new_ack")
        self.conns[conn].loss_rto = self.rto_ns(conn)
        return acts + self._retransmit(conn, now_ns)

    def _retransmit(self, conn: ConnId, now_ns: int) -> list[Action]:
        """Resend in loss (``loss_resend``: the first unacknowledged segment, or all of them),
        with a fresh TSval as TCP's own retransmission would carry (else PAWS may refuse it),
        and re-arm ATCP's own timer. No RTT sample from a segment ATCP resent (Karn)."""
        a = self.api.agent.conns.get(conn)
        acts: list[Action] = []
        c = self.conns[conn]
        if a is not None and a.snd_una is not None:
            if self.p.loss_resend == "window":
                acts = self.api.retransmit_unacked(conn, now_ns)
            else:
                acts = self.api.retransmit(conn, a.snd_una, now_ns, fresh_ts=True)
            for _ in acts:
                self._count("rexmt")
            for e, (t, _) in c.sent.items() if acts else ():
                if P.seq_lt(a.snd_una, e):
                    c.sent[e] = (t, True)
                    if self.p.loss_resend == "first":
                        break  # only the segment at snd_una went out again
        acts.append(SetTimer(self._loss_key(conn), now_ns + c.loss_rto))
        return acts

    def _leave_loss(self, conn: ConnId, now_ns: int, cause: str) -> list[Action]:
        """Back to normal from loss (the agent forwards the new ACK and releases the hold): TCP
        gets its congestion state of the entry back ("TCP's congestion window size is set to
        ATCP's congestion window size")."""
        self._set(conn, AtcpState.NORMAL, now_ns, cause)
        self._count("loss_exits")
        if self.p.restore_cwnd:
            self.api.restore(conn, keep_rto=self.p.restore_rto)
        return [CancelTimer(self._loss_key(conn))]

    def _answers_probe(self, conn: ConnId) -> bool:
        """This ACK (hook called before the agent acts on it) answers a persist probe, so the
        agent releases the hold with it: "This removes TCP from persist mode and moves ATCP
        back into normal state"."""
        c = self.api.agent.conns.get(conn)
        h = None if c is None else c.hold
        return h is not None and h.release_on == "any_ack" and EndpointAgent.answers_probe(h)

    # ------------------------------------------------------------------ hooks
    def on_segment_sent(self, ev: TcpSegmentSent) -> list[Action]:
        conn, now_ns = ev.conn, ev.now_ns
        c = self._track(conn)
        end = (ev.seq + ev.length) & 0xFFFFFFFF
        if end not in c.sent:
            c.sent[end] = (now_ns, ev.retransmission)
        elif ev.retransmission:
            c.sent[end] = (c.sent[end][0], True)
        if c.state == AtcpState.DISCONNECTED and not self._held(conn):
            # the agent released the hold by itself (an answered probe): "atcp_output() will
            # put ATCP back into normal state upon receiving such a packet from TCP"
            self._set(conn, AtcpState.NORMAL, now_ns, "TCP sends again")
        if c.state == AtcpState.CONGESTED and not ev.retransmission:
            self._set(conn, AtcpState.NORMAL, now_ns, "TCP transmits a new segment")
        if c.rto_base is None:
            c.rto_base = now_ns  # the kernel arms its timer when it sends with nothing outstanding
        if c.rto_due is None:
            return self._arm_rto(conn, now_ns)
        return []

    def on_ack(self, ev: TcpAck) -> list[Action]:
        """A new ACK (called before the agent forwards it; in loss the agent then releases)."""
        conn, now_ns = ev.conn, ev.now_ns
        c = self._track(conn)
        self._rtt_sample(c, ev.ack, now_ns)
        c.rto_base = now_ns if self._outstanding(conn) else None  # the kernel re-arms its timer
        out: list[Action] = []
        if self._ece(conn) and c.state in (AtcpState.NORMAL, AtcpState.LOSS):
            if c.state == AtcpState.LOSS:
                out += self.api.release(conn, now_ns)  # "ATCP removes TCP from its persist state"
                out.append(CancelTimer(self._loss_key(conn)))
            self._set(conn, AtcpState.CONGESTED, now_ns, "ECN")
            self._count("congested")
        elif c.state == AtcpState.LOSS:
            # "when a new ACK arrives ... ATCP forward that ACK to TCP which also removes TCP from
            # persist mode. ATCP then returns to its normal state" (the agent forwards it)
            out += self._leave_loss(conn, now_ns, "new ACK")
        elif c.state == AtcpState.DISCONNECTED and self._answers_probe(conn):
            self._set(conn, AtcpState.NORMAL, now_ns, "probe answered")
        return out + self._arm_rto(conn, now_ns)

    def on_dupack(self, ev: TcpDupack) -> list[Action]:
        conn, count, now_ns = ev.conn, ev.count, ev.now_ns
        c = self._track(conn)
        if self._ece(conn) and c.state == AtcpState.NORMAL:
            self._set(conn, AtcpState.CONGESTED, now_ns, "ECN")
            self._count("congested")
            return self._arm_rto(conn, now_ns)
        if c.state == AtcpState.NORMAL and count == self.p.tcp_rexmtthresh:
            self._count("loss_dupack")
            return self._enter_loss(conn, now_ns, f"{count} dupACKs")
        if c.state == AtcpState.DISCONNECTED and self._answers_probe(conn):
            self._set(conn, AtcpState.NORMAL, now_ns, "probe answered")
            return self._arm_rto(conn, now_ns)
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
        self._count("disconnected")
        return [
            *self._arm_rto(conn, now_ns),
            CancelTimer(self._loss_key(conn)),
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
            return self._imminent(conn, c, now_ns)
        if kind == "loss" and c.state == AtcpState.LOSS:
            if not self._held(conn):  # released meanwhile (cannot happen without a new ACK)
                return self._leave_loss(conn, now_ns, "released") + self._arm_rto(conn, now_ns)
            # "its own separate timers to retransmit these segments in the event that ACK's are
            # not forthcoming"; doubled like TCP's
            self._count("rexmt_timer")
            c.loss_rto = min(2 * c.loss_rto, self.p.loss_rexmt_max_ns)
            return self._retransmit(conn, now_ns)
        return []

    def _imminent(self, conn: ConnId, c: ConnAtcp, now_ns: int) -> list[Action]:
        """In normal, "if atcp_slowtimo() finds out that a timeout is about to happen, it will
        call function atcp_timers()", which puts TCP in persist, resends the timed-out packet
        and enters loss. The RTO is read again first: a sample since the timer was armed may
        have moved the expiry later."""
        c.rto_due = None
        if (
            c.state != AtcpState.NORMAL
            or c.rto_base is None
            or not self._outstanding(conn)
            or self._held(conn)
        ):
            return []
        if c.rto_base + self._rto_minus_lead(conn) > now_ns:
            return self._arm_rto(conn, now_ns)
        self._count("loss_rto")
        return self._enter_loss(conn, now_ns, "RTO about to expire")

    def _agent_stats(self, conn: ConnId) -> dict[str, int]:
        """The agent's dupACK counts: ``kernel_dupthresh`` (dupACKs the kernel counted as its
        third, each a Reno fast recovery: 0 while ATCP works), ``old_acks`` (reordered ACKs)."""
        a = self.api.agent.conns.get(conn)
        keys = ("dupacks", "dupacks_withheld", "old_acks", "kernel_dupthresh")
        return {} if a is None else {k: a.stats[k] for k in keys}

    def state(self) -> dict[str, Any]:
        return {
            "counters": dict(self.counters),
            "conns": {
                str(k): {"state": v.state.name, "history": v.history, "agent": self._agent_stats(k)}
                for k, v in self.conns.items()
            },
        }


PARAMS = AtcpParams
NEEDS = Needs(endpoint=True)
"""Any routing protocol: it acts on kernel TCP only."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: AtcpParams) -> Atcp:
    return Atcp(endpoint_of(ctx, "atcp"), params, ctx.log.getChild("atcp"), ctx.counters.extra)
