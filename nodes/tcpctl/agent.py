"""The endpoint agent: a thin layer between the station's kernel TCP and the routing core.

It is the ``nodes.core.runtime.Endpoint`` of a station (every kernel packet passes
``on_outbound``, every packet for the kernel ``on_inbound``; timers keyed ``("endpoint", ...)``),
and it is sans-I/O: time comes with each call, packets are bytes, effects are actions
(``ToNetwork``, ``ToKernel``, ``Drop``, ``SetTimer``, ``CancelTimer``). The only other seam is
``KernelTcp`` (nodes.tcpctl.kernelseam), through which it asks the kernel's BPF side to snapshot,
restore or set cwnd/ssthresh; a fake stands in for it in the unit tests.

What it does (Liu & Singh 2001 section III: "a thin layer between TCP and IP ... spoofs TCP"):

- tracks every TCP connection of the station by 4-tuple, in both directions, from the packets
  it sees; keeps copies of the unacknowledged segments the local kernel sent (bounded);
- holds the local sender by rewriting the advertised window of the ACKs it delivers to zero (the
  kernel enters persist; Linux turns its retransmission timer into zero-window probes that are
  not RTO timeouts) and releases it with a window update;
- ELFN freeze/thaw (Yu 2004 section 3.1): hold, withhold the kernel's segments, probe every
  ``t_thaw`` with the copy of the segment ``thaw_seqno``, thaw on the first ACK with the old or
  default congestion state; EPLN Algorithm 2 (``epln_notice``) on top of it;
- retransmits a segment from its copy; withholds chosen duplicate ACKs or synthesizes extra ones;
  sets or clears ECN marks; builds ICMP Destination Unreachable for the local sender;
- writes/reads/echoes Route-control marks (route-number and NEW; packets.py says where).

Events (``EMITS``, typed like the routing cores' cross-layer events, ``nodes.core.hooks``;
subscribe with ``agent.hooks.subscribe(TcpAck, fn)`` or the ``TcpControl.on_*`` methods; ``fn``
gets the event and may return actions): :class:`TcpAck`, :class:`TcpDupack`,
:class:`TcpUnreachable`, :class:`TcpSegmentSent`, :class:`TcpTimeout` (from the kernel's RTO
callback, polled every ``poll_ns``), :class:`TcpTimer` (an extension's own timer:
``SetTimer(("endpoint", <extension>, ...), t)``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal

from nodes.core.clock import NS_PER_MS, NS_PER_S
from nodes.core.events import Action, CancelTimer, Drop, SetTimer, ToKernel, ToNetwork
from nodes.core.hooks import CrossLayerEvent, EventClass, Hooks
from nodes.core.runtime import ENDPOINT_TIMER, EndpointTimer
from nodes.tcpctl import packets as P
from nodes.tcpctl.kernelseam import KernelRestore, KernelTcp, NullKernel

log = logging.getLogger(__name__)

ENDPOINT = ENDPOINT_TIMER
"""First element of an extension's own endpoint timer key ``(ENDPOINT, <extension>, ...)``; the
agent's own timers are ``ThawTimer`` and ``PollTimer``."""
Restore = Literal["old", "default", "default_srtt"]
"""What an ELFN thaw restores (Yu 2004 s3.1 "either the old values or default values (RTO 6 s,
cwnd 2)"): ``old``: cwnd, ssthresh and RTO at the freeze; ``default``: cwnd 2 and an RTO of
exactly 6 s, reached by a 6 s RTT sample on the thawing ACK (Linux's srtt keeps it for 10-20
samples); ``default_srtt``: cwnd 2, the thawing ACK's sample the srtt at the freeze (the estimator
as it was, nothing injected), the RTO the kernel's own (under a 6 s cap) instead of 6 s."""


def kernel_restore(mode: Restore) -> KernelRestore:
    """The kernel command of a thaw: both default readings set cwnd 2 and the 6 s cap."""
    return "default" if mode == "default_srtt" else mode


@dataclass(frozen=True, slots=True)
class AgentParams:
    t_thaw_ns: int = 2 * NS_PER_S
    """ELFN probing interval: "starts a timer called a thaw timer with timeout 2 s" (Yu 2004 s3.1)."""
    max_segments: int = 1024
    """Copies of unacknowledged segments kept per connection (oldest evicted first)."""
    max_conns: int = 1024
    poll_ns: int = 100 * NS_PER_MS
    """How often the kernel's RTO counter is polled when ``tcp_timeout`` has subscribers."""
    mtu: int = 1500
    route_control: bool = False
    """Mark outgoing TCP with the route-number (S2) and echo RR-number/NR in ACKs (R1)."""
    default_rto_ns: int = 6 * NS_PER_S
    """ELFN thaw with default values: "RTO 6 s, cwnd 2" (Yu 2004 s3.1)."""
    kernel_dupthresh: int = 3
    """The dupACKs at which Linux Reno enters fast recovery: ``tp->reordering`` at its start,
    ``net.ipv4.tcp_reordering`` = TCP_FASTRETRANS_THRESH 3 (``tcp_newreno_mark_lost`` marks the
    head lost when ``sacked_out >= tp->reordering``); counted in ``stats["kernel_dupthresh"]``."""


@dataclass(frozen=True, slots=True, order=True)
class ConnId:
    """A TCP connection seen from this station: local end first."""

    local_ip: bytes
    local_port: int
    remote_ip: bytes
    remote_port: int

    def __str__(self) -> str:
        a = ".".join(map(str, self.local_ip))
        b = ".".join(map(str, self.remote_ip))
        return f"{a}:{self.local_port}->{b}:{self.remote_port}"


RcMark = tuple[int, bool]
"""Route-control (route number, NEW flag) or echo (rr number, NR)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpAck(CrossLayerEvent):
    """A new cumulative ACK from the remote end of ``conn`` (``acked_bytes`` newly acknowledged);
    ``rc_echo``/``rc_mark``: its Route-control echo and mark when ``route_control`` is on."""

    conn: ConnId
    ack: int
    acked_bytes: int
    rc_echo: RcMark | None = None
    rc_mark: RcMark | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpDupack(CrossLayerEvent):
    """The ``count``-th duplicate ACK in a row for ``conn``."""

    conn: ConnId
    ack: int
    count: int
    rc_echo: RcMark | None = None
    rc_mark: RcMark | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpUnreachable(CrossLayerEvent):
    """An ICMP Destination Unreachable (``code``) quoting ``conn``'s segment ``seq``. A subscriber
    that returns actions consumes the ICMP (ATCP)."""

    conn: ConnId
    code: int
    seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpSegmentSent(CrossLayerEvent):
    """The local kernel sent ``length`` bytes at ``seq`` on ``conn`` (``retransmission`` when it
    had sent them before)."""

    conn: ConnId
    seq: int
    length: int
    retransmission: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpTimeout(CrossLayerEvent):
    """The kernel's ``n_rto``-th RTO expiration of ``conn``; ``info``: its BPF state."""

    conn: ConnId
    n_rto: int
    info: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpTimer(CrossLayerEvent):
    """An extension's own endpoint timer fired (``SetTimer(("endpoint", <extension>, ...), t)``)."""

    key: Hashable


EMITS: frozenset[EventClass] = frozenset(
    {TcpAck, TcpDupack, TcpUnreachable, TcpSegmentSent, TcpTimeout, TcpTimer}
)
"""The events the endpoint agent emits."""


@dataclass(frozen=True, slots=True)
class ThawTimer(EndpointTimer):
    """ELFN's thaw timer of a frozen connection: probe when it fires (Holland & Vaidya s4.1)."""

    conn: ConnId


@dataclass(frozen=True, slots=True)
class PollTimer(EndpointTimer):
    """The poll of the kernel's RTO counters (``AgentParams.poll_ns``)."""


class HoldMode(IntEnum):
    PERSIST = 1
    """ATCP disconnected: window 0, the kernel's own persist probes pass (Liu & Singh s IV)."""
    QUIET = 2
    """ATCP loss: window 0, the kernel's segments are discarded; the agent retransmits."""
    FROZEN = 3
    """ELFN: window 0, the kernel's segments are withheld; the agent probes every t_thaw."""


ReleaseOn = Literal["never", "new_ack", "any_ack"]


@dataclass(slots=True)
class Hold:
    mode: HoldMode
    release_on: ReleaseOn
    restore: Restore | None = None  # FROZEN: what thaw restores
    thaw_seqno: int | None = None
    lost_pkt: list[int] = field(default_factory=list)  # EPLN Algorithm 2
    deferred: list[int] = field(default_factory=list)  # FROZEN: new data the kernel sent, sent at the thaw
    since_ns: int = 0
    probes: int = 0


@dataclass(slots=True)
class EcnRule:
    ip_ecn: int | None = None  # set the IP ECN codepoint
    set_flags: int = 0  # TCP flags to set (ECE, CWR)
    clear_flags: int = 0


AckKind = Literal["old", "new", "update", "dup", "other"]


@dataclass(slots=True)
class AckView:
    """What Linux's ``tcp_ack()`` makes of the ACKs of one connection (net/ipv4/tcp_input.c,
    Linux 6.x), for a sender without SACK, so that the agent counts duplicate ACKs as the local
    TCP counts them:

    - ``old``: the ACK is below snd_una; ``tcp_ack()`` ignores it (``before(ack, prior_snd_una)``
      -> ``old_ack``): no window update, no dupACK, the count stays. (RFC 5681's "the advertised
      window equals that of the last incoming ACK" would let a reordered old ACK change the
      window the next dupACK is compared with.)
    - ``new``: snd_una advances; the window is taken; the count is reset (``tcp_fastretrans_alert``
      resets Reno's ``sacked_out`` at an ACK that advances snd_una in every state but fast
      recovery, which ATCP keeps TCP out of; in Recovery ``tcp_remove_reno_sacks`` takes n - 1 off).
    - ``update``: ``tcp_may_update_window()``: a later sequence number, or the same one with a
      larger window or a zero window (``nwin > tp->snd_wnd || !nwin``): FLAG_WIN_UPDATE, not a
      dupACK. A zero window is always an update, so a held sender (window rewritten to 0) counts
      no dupACK at all.
    - ``dup``: the same ACK, no data, window not larger and not zero, data outstanding
      (``!(flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP))``): Reno's ``tcp_add_reno_sack``,
      ``sacked_out`` + 1; fast recovery when it reaches ``tp->reordering`` (3).
    - ``other``: data on it, or nothing outstanding (``!prior_packets``).

    Windows are the raw header field (all scaled by the same factor after the SYN)."""

    una: int | None = None
    wnd: int = 0
    """The window field the sender holds (Linux ``tp->snd_wnd >> snd_wscale``)."""
    wl1: int = 0
    """The sequence number of the segment that last set it (``tp->snd_wl1``)."""
    dupacks: int = 0
    """DupACKs counted since the last new ACK (Linux's Reno ``sacked_out``)."""

    def syn_ack(self, seq: int, ack: int, window: int) -> None:
        self.una, self.wnd, self.wl1, self.dupacks = ack, window, seq, 0

    def kind(self, seq: int, ack: int, window: int, data: bool, outstanding: bool) -> AckKind:
        """How ``tcp_ack()`` would classify this ACK now (no state change)."""
        if self.una is None or P.seq_lt(self.una, ack):
            return "new"
        if P.seq_lt(ack, self.una):
            return "old"
        if P.seq_lt(self.wl1, seq) or (seq == self.wl1 and (window > self.wnd or window == 0)):
            return "update"
        if data or not outstanding:
            return "other"
        return "dup"

    def see(self, seq: int, ack: int, window: int, data: bool, outstanding: bool) -> AckKind:
        """Classify and apply, as ``tcp_ack()`` does."""
        k = self.kind(seq, ack, window, data, outstanding)
        if k == "new":
            self.una, self.wnd, self.wl1, self.dupacks = ack, window, seq, 0
        elif k == "update":
            self.wnd, self.wl1 = window, seq
        elif k == "dup":
            self.dupacks += 1
        return k


@dataclass(slots=True)
class Conn:
    id: ConnId
    created_ns: int
    snd_una: int | None = None  # highest cumulative ACK from the remote end
    snd_nxt: int | None = None  # highest end sequence the local kernel sent
    rcv_nxt: int | None = None  # highest end sequence the remote end sent
    segments: OrderedDict[int, bytes] = field(default_factory=OrderedDict)
    last_ack_pkt: bytes | None = None  # last ACK from the remote end, as received (old ones not)
    last_out_pkt: bytes | None = None  # last segment (with ACK) the local kernel sent
    net: AckView = field(default_factory=AckView)
    """The ACKs as they come from the network, as TCP would see them without the agent: the
    dupACKs counted here are the ``TcpDupack`` events (ATCP's "counts the number of duplicate
    ACKs")."""
    kern: AckView = field(default_factory=AckView)
    """The ACKs the local kernel got from the agent (windows rewritten, synthesized ones): what
    the kernel's own Reno count (``sacked_out``) is."""
    hold: Hold | None = None
    withhold_dupacks: frozenset[int] = frozenset()
    withhold_dupacks_from: int = 0
    """Withhold every dupACK of the network's run from the k-th on, and every one the kernel
    would count as its k-th or later (0: none)."""
    ecn_in: EcnRule | None = None
    ecn_out: EcnRule | None = None
    rx_mark: tuple[int, bool] | None = None  # Route-control marks of the last data received
    n_rto_seen: int = 0
    ts_val: int | None = None  # the kernel's latest TSval (RFC 7323) and when the agent saw it
    ts_val_ns: int = 0
    stats: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "seg_out",
                "seg_in",
                "kernel_rexmt",
                "agent_rexmt",
                "probes",
                "dupacks",
                "dupacks_withheld",
                "old_acks",
                "kernel_dupthresh",
                "dupacks_added",
                "window_rewrites",
                "withheld_out",
                "deferred_sent",
                "copies_evicted",
            ),
            0,
        )
    )


class EndpointAgent:
    """The station's endpoint agent (implements ``nodes.core.runtime.Endpoint``)."""

    def __init__(
        self,
        station_ip: bytes,
        params: AgentParams | None = None,
        kernel: KernelTcp | None = None,
        hooks: Hooks | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.ip = station_ip
        self.params = params or AgentParams()
        self.kernel: KernelTcp = kernel or NullKernel()
        self.hooks = hooks or Hooks()
        self.hooks.declare(*EMITS)
        self.log = logger or log
        self.conns: dict[ConnId, Conn] = {}
        self.route_numbers: dict[bytes, int] = {}
        self.counters: dict[str, int] = {"non_tcp": 0, "conns_evicted": 0}
        self._polling = False

    # ================================================================ Endpoint seam
    def on_outbound(self, packet: bytes, now_ns: int) -> list[Action]:
        t = P.parse_tcp(packet)
        if t is None:
            self.counters["non_tcp"] += 1
            return [ToNetwork(packet)]
        cid = ConnId(t.src, t.sport, t.dst, t.dport)
        c = self._conn(cid, now_ns)
        out: list[Action] = []
        c.stats["seg_out"] += 1
        if t.ts_val is not None:
            c.ts_val, c.ts_val_ns = t.ts_val, now_ns
        retrans = False
        if t.seg_len:
            retrans = c.snd_nxt is not None and P.seq_lt(t.seq, c.snd_nxt)
            if retrans:
                c.stats["kernel_rexmt"] += 1
            if c.snd_nxt is None or P.seq_lt(c.snd_nxt, t.end_seq):
                c.snd_nxt = t.end_seq
            if c.snd_una is None:
                c.snd_una = t.seq
            if t.seq not in c.segments:
                c.segments[t.seq] = packet
                if len(c.segments) > self.params.max_segments:
                    c.segments.popitem(last=False)
                    c.stats["copies_evicted"] += 1
            if c.hold is not None and c.hold.mode in (HoldMode.FROZEN, HoldMode.QUIET):
                c.stats["withheld_out"] += 1
                if c.hold.mode == HoldMode.FROZEN and not retrans and t.seq not in c.hold.deferred:
                    # ELFN's frozen TCP "does not send any packet" (Yu 2004 s3.1) and sends it
                    # after melt(); the kernel, which saw the zero window only after it sent this
                    # one, believes it is out: the thaw sends the copy (``_send_deferred``).
                    c.hold.deferred.append(t.seq)
                return [Drop(packet, "tcpctl_withheld")]
        elif (
            c.hold is not None
            and c.hold.mode in (HoldMode.FROZEN, HoldMode.QUIET)
            and c.snd_una is not None
            and t.seq == (c.snd_una - 1) & 0xFFFFFFFF
        ):
            # the kernel's own zero-window probe (RFC 9293 3.8.6.1): ELFN's frozen sender is silent
            c.stats["withheld_out"] += 1
            return [Drop(packet, "tcpctl_withheld")]
        if c.hold is not None and c.hold.mode == HoldMode.PERSIST and (t.seg_len or t.seq != c.snd_nxt):
            c.hold.probes += 1  # a kernel segment while in persist: a probe (data or window probe)
        if t.flags & P.ACK and not t.flags & (P.SYN | P.RST):
            c.last_out_pkt = packet
        buf = bytearray(packet)
        if c.ecn_out is not None:
            self._apply_ecn(buf, c.ecn_out)
        if self.params.route_control:
            P.write_rc_mark(buf, self.route_numbers.get(t.dst, 0), False)
            if c.rx_mark is not None and t.flags & P.ACK:
                echoed = P.add_rc_echo(buf, c.rx_mark[0], c.rx_mark[1], self.params.mtu)
                if echoed is not None:
                    buf = bytearray(echoed)
        if t.seg_len and self.hooks.has_subscribers(TcpSegmentSent):
            out += self.hooks.emit(
                TcpSegmentSent(
                    now_ns=now_ns, conn=cid, seq=t.seq, length=t.payload_len, retransmission=retrans
                )
            )
        out.append(ToNetwork(bytes(buf)))
        return out

    def on_inbound(self, packet: bytes, now_ns: int) -> list[Action]:
        t = P.parse_tcp(packet)
        if t is None:
            du = P.parse_icmp_unreach(packet)
            if du is not None:
                code, q = du
                cid = ConnId(q.src, q.sport, q.dst, q.dport)
                if cid in self.conns and self.hooks.has_subscribers(TcpUnreachable):
                    acts = self.hooks.emit(TcpUnreachable(now_ns=now_ns, conn=cid, code=code, seq=q.seq))
                    # A subscriber that handles it (ATCP) returns at least one action; the
                    # ICMP is then consumed, as ATCP's atcp_notify() consumes it.
                    if acts:
                        return acts + [Drop(packet, "tcpctl_icmp_consumed")]
            self.counters["non_tcp"] += 1
            return [ToKernel(packet)]
        cid = ConnId(t.dst, t.dport, t.src, t.sport)
        c = self._conn(cid, now_ns)
        c.stats["seg_in"] += 1
        out: list[Action] = []
        if t.seg_len:
            if c.rcv_nxt is None or P.seq_lt(c.rcv_nxt, t.end_seq):
                c.rcv_nxt = t.end_seq
            mark = P.read_rc_mark(packet) if self.params.route_control else None
            if mark is not None:
                c.rx_mark = mark
        elif c.rcv_nxt is None:
            c.rcv_nxt = t.seq
        if t.flags & P.ACK and not t.flags & P.SYN:
            verdict = self._on_ack(c, t, packet, now_ns, out)
            if verdict is _DONE:
                return out
            if isinstance(verdict, _Done):
                return out
            if verdict is not None:
                return out + [verdict]
        elif t.flags & P.ACK:
            c.last_ack_pkt = packet
            c.snd_una = t.ack
            c.net.syn_ack(t.seq, t.ack, t.window)
            c.kern.syn_ack(t.seq, t.ack, t.window)
        buf = bytearray(packet)
        window = t.window
        if c.hold is not None and t.flags & P.ACK:
            P.set_window(buf, 0)
            window = 0
            c.stats["window_rewrites"] += 1
        if c.ecn_in is not None:
            self._apply_ecn(buf, c.ecn_in)
        if t.flags & P.ACK and not t.flags & P.SYN:
            self._kernel_sees(c, t, window)
        out.append(ToKernel(bytes(buf)))
        return out

    def on_timer(self, key: Hashable, now_ns: int) -> list[Action]:
        if isinstance(key, ThawTimer):
            c = self.conns.get(key.conn)
            if c is None or c.hold is None or c.hold.mode != HoldMode.FROZEN:
                return []
            return self._probe(c, now_ns)
        if isinstance(key, PollTimer):
            return self._poll(now_ns)
        # any other endpoint timer belongs to an extension (nodes.extensions: ATCP's timers)
        return self.hooks.emit(TcpTimer(now_ns=now_ns, key=key))

    # ================================================================ primitives (API)
    def hold(self, cid: ConnId, mode: HoldMode, now_ns: int, release_on: ReleaseOn = "never") -> list[Action]:
        """Hold the local sender: the ACKs it gets advertise window 0 (the kernel enters persist).
        A zero-window ACK is injected at once so the kernel stops sending now."""
        c = self.conns[cid]
        if c.hold is None:
            c.hold = Hold(mode, release_on, since_ns=now_ns)
        else:
            c.hold.mode, c.hold.release_on = mode, release_on
        ack = self._synth_ack(c, window=0)
        return [self._to_kernel(c, ack)] if ack else []

    def release(self, cid: ConnId, now_ns: int) -> list[Action]:
        """End a hold with a window update (a copy of the last real ACK, real window)."""
        c = self.conns[cid]
        if c.hold is None:
            return []
        deferred = c.hold.deferred if c.hold.mode == HoldMode.FROZEN else []
        c.hold = None
        acts: list[Action] = [CancelTimer(ThawTimer(cid))]
        ack = self._synth_ack(c, window=None)
        if ack:
            acts.append(self._to_kernel(c, ack))
        return acts + self._send_deferred(c, deferred, [], now_ns)

    def freeze(
        self, cid: ConnId, now_ns: int, restore: Restore = "old", thaw_seqno: int | None = None
    ) -> list[Action]:
        """ELFN freeze: snapshot the kernel's state, hold, probe every t_thaw; thaw on an ACK."""
        c = self.conns[cid]
        if c.hold is not None and c.hold.mode == HoldMode.FROZEN:
            return []
        self.kernel.snapshot(cid)
        acts = self.hold(cid, HoldMode.FROZEN, now_ns, "any_ack")
        assert c.hold is not None
        c.hold.lost_pkt.clear()  # a hold of another mode becomes this freeze: nothing of it carries over
        c.hold.deferred.clear()
        c.hold.restore = restore
        c.hold.thaw_seqno = thaw_seqno if thaw_seqno is not None else c.snd_una
        acts.append(SetTimer(ThawTimer(cid), now_ns + self.params.t_thaw_ns))
        return acts

    def thaw(self, cid: ConnId, now_ns: int, restore: Restore | None = None) -> list[Action]:
        """Thaw now (ELFN's melt): restore the kernel's state, release with a window update."""
        c = self.conns[cid]
        if c.hold is None or c.hold.mode != HoldMode.FROZEN:
            return []
        mode = restore or c.hold.restore or "old"
        lost, deferred = list(c.hold.lost_pkt), list(c.hold.deferred)
        c.hold.deferred.clear()  # sent below, after the lost packets, not by release()
        self.kernel.restore(cid, kernel_restore(mode))
        return self.release(cid, now_ns) + self._melt_sends(c, lost, deferred, now_ns)

    def retransmit(self, cid: ConnId, seq: int, now_ns: int, fresh_ts: bool = True) -> list[Action]:
        """Send the agent's copy of the segment starting at ``seq`` (or containing it).

        ``fresh_ts`` (default, as the kernel's own retransmissions): with the timestamps the kernel would put on it now (RFC 7323: TSval from
        the kernel's clock, the agent's latest TSval + the ms since; TSecr the peer's latest
        TSval). The copy's own TSval may be older than the receiver's TS.Recent by then (advanced
        by later in-order segments), and the receiver discards such a segment (PAWS, RFC 7323
        section 5) and only sends a duplicate ACK: seen on the Liu testbed, an ATCP
        retransmission refused for 270 s."""
        c = self.conns.get(cid)
        if c is None:
            return []
        pkt = c.segments.get(seq)
        if pkt is None:
            for s, p in c.segments.items():
                v = P.parse_tcp(p)
                if v is not None and P.seq_le(s, seq) and P.seq_lt(seq, v.end_seq):
                    pkt = p
                    break
        if pkt is None or (c.snd_una is not None and P.seq_le(P.parse_tcp(pkt).end_seq, c.snd_una)):  # type: ignore[union-attr]
            return []
        c.stats["agent_rexmt"] += 1
        if fresh_ts and c.ts_val is not None:
            buf = bytearray(pkt)
            if P.set_ts_val(buf, c.ts_val + (now_ns - c.ts_val_ns) // NS_PER_MS):
                peer = P.parse_tcp(c.last_ack_pkt) if c.last_ack_pkt is not None else None
                if peer is not None and peer.ts_val is not None:
                    P.set_ts_ecr(buf, peer.ts_val)
                pkt = bytes(buf)
        return [ToNetwork(self._mark(pkt))]

    def retransmit_unacked(self, cid: ConnId, now_ns: int, limit: int | None = None) -> list[Action]:
        """ATCP loss state: "transmits the unacknowledged segments from TCP's send buffer"."""
        c = self.conns[cid]
        out: list[Action] = []
        for seq in list(c.segments)[:limit]:
            out += self.retransmit(cid, seq, now_ns)
        return out

    def add_dupacks(self, cid: ConnId, n: int) -> list[Action]:
        """Deliver ``n`` extra copies of the last ACK to the local kernel (duplicate ACKs)."""
        c = self.conns[cid]
        ack = self._synth_ack(c, window=0 if c.hold else None)
        if ack is None:
            return []
        c.stats["dupacks_added"] += n
        return [self._to_kernel(c, ack) for _ in range(n)]

    def set_withhold_dupacks(
        self, cid: ConnId, counts: frozenset[int] | set[int], from_count: int = 0
    ) -> None:
        """Withhold the k-th duplicate ACK of every run, for k in ``counts``, and every one from
        the ``from_count``-th on (0: none); ATCP in loss: all from the third on."""
        c = self.conns[cid]
        c.withhold_dupacks = frozenset(counts)
        c.withhold_dupacks_from = from_count

    def set_ecn(
        self,
        cid: ConnId,
        direction: Literal["in", "out"],
        ip_ecn: int | None = None,
        ece: bool | None = None,
        cwr: bool | None = None,
    ) -> None:
        """Rewrite ECN marks of this connection's packets from now on (None: leave alone)."""
        rule = EcnRule(ip_ecn)
        for flag, want in ((P.ECE, ece), (P.CWR, cwr)):
            if want is True:
                rule.set_flags |= flag
            elif want is False:
                rule.clear_flags |= flag
        c = self.conns[cid]
        if direction == "in":
            c.ecn_in = rule
        else:
            c.ecn_out = rule

    def clear_ecn(self, cid: ConnId) -> None:
        c = self.conns[cid]
        c.ecn_in = c.ecn_out = None

    def unreachable(
        self, cid: ConnId, code: int = P.ICMP_HOST_UNREACH, from_ip: bytes | None = None
    ) -> list[Action]:
        """An ICMP Destination Unreachable to the local sender about its latest segment."""
        c = self.conns[cid]
        ref = next(reversed(c.segments.values()), None) if c.segments else None
        if ref is None:
            ref = P.build_tcp(
                cid.local_ip,
                cid.remote_ip,
                cid.local_port,
                cid.remote_port,
                c.snd_nxt or 0,
                c.rcv_nxt or 0,
                P.ACK,
                0,
            )
        return [ToKernel(P.icmp_dest_unreachable(ref, from_ip or self.ip, code))]

    def set_cwnd(self, cid: ConnId, cwnd: int, ssthresh: int = 0) -> list[Action]:
        """Set the kernel's cwnd (segments) and/or ssthresh. The congestion control executes it at
        the next ACK the kernel processes; when the sender is held, a zero-window ACK is injected
        so that happens now. The cwnd then stays a ceiling, also at the kernel's own timer
        expiries, until an ACK with an open window advances snd_una (docs/tcpctl.md)."""
        self.kernel.set_cwnd(cid, cwnd, ssthresh)
        c = self.conns[cid]
        if c.hold is not None:
            ack = self._synth_ack(c, window=0)
            return [self._to_kernel(c, ack)] if ack else []
        return []

    # ---------------------------------------------------------------- EPLN (Yu 2004 Alg. 2)
    def epln_notice(self, cid: ConnId, seq: int, pkt_lost: bool, now_ns: int) -> list[Action]:
        """Algorithm 2 at the TCP sender, for one ICMP (seq, pkt_lost) from the network."""
        c = self.conns.get(cid)
        if c is None or c.snd_una is None or c.snd_nxt is None:
            return []
        # "if not (seqno > highest_ack_ and seqno <= highest_ack_ + window()) then free(p)"
        if P.seq_lt(seq, c.snd_una) or not P.seq_lt(seq, c.snd_nxt):
            return []
        out: list[Action] = []
        fresh = c.hold is None or c.hold.mode != HoldMode.FROZEN
        if fresh:  # "if not frozen() then freeze()"; the thaw timer was idle
            out += self.freeze(cid, now_ns, restore="old", thaw_seqno=seq)
            if pkt_lost:
                out += self.retransmit(cid, seq, now_ns)
            return out
        h = c.hold
        assert h is not None and h.thaw_seqno is not None
        if P.seq_lt(seq, h.thaw_seqno):
            h.thaw_seqno = seq
            if pkt_lost:
                out += self.retransmit(cid, seq, now_ns)
        elif seq == h.thaw_seqno:
            if pkt_lost:
                out += self.retransmit(cid, seq, now_ns)
        elif pkt_lost and seq not in h.lost_pkt:
            h.lost_pkt.append(seq)
        return out

    # ---------------------------------------------------------------- Route-control
    def route_number(self, dst: bytes) -> int:
        return self.route_numbers.get(dst, 0)

    def bump_route_number(self, dst: bytes) -> int:
        """S3: "When an ACK is received from d with RR-number = s_d and NR = 1, route-number is
        incremented" (the extension decides; this only counts)."""
        self.route_numbers[dst] = (self.route_numbers.get(dst, 0) + 1) & P.RC_ROUTE_MASK
        return self.route_numbers[dst]

    # ---------------------------------------------------------------- timeouts from the kernel
    def start_polling(self, now_ns: int) -> list[Action]:
        """Poll the kernel's per-connection RTO counter (``tcp_timeout`` hook)."""
        self._polling = True
        return [SetTimer(PollTimer(), now_ns + self.params.poll_ns)]

    def _poll(self, now_ns: int) -> list[Action]:
        out: list[Action] = []
        for cid, c in list(self.conns.items()):
            st = self.kernel.state(cid)
            if st is None:
                continue
            n = int(st.get("n_rto", 0))
            if n > c.n_rto_seen:
                c.n_rto_seen = n
                out += self.hooks.emit(TcpTimeout(now_ns=now_ns, conn=cid, n_rto=n, info=st))
        if self._polling:
            out.append(SetTimer(PollTimer(), now_ns + self.params.poll_ns))
        return out

    # ================================================================ internals
    def _conn(self, cid: ConnId, now_ns: int) -> Conn:
        c = self.conns.get(cid)
        if c is None:
            if len(self.conns) >= self.params.max_conns:
                victim = min(self.conns.values(), key=lambda x: x.created_ns)
                if victim.hold is None:
                    del self.conns[victim.id]
                    self.counters["conns_evicted"] += 1
            c = self.conns[cid] = Conn(cid, now_ns)
        return c

    @staticmethod
    def answers_probe(h: Hold | None) -> bool:
        """ATCP disconnected: TCP leaves persist when the receiver "responds to these probe
        packets with a duplicate ACK (or a data packet)" (Liu & Singh s III). An ACK that
        arrives before the kernel's first probe was already in flight when the hold began and
        answers nothing (it gets window 0). One that was in flight but arrives after a probe
        cannot be told from an answer: Linux echoes an older TSval in an answer too when the
        probe is a window probe or a segment the receiver already has (out of window, RFC 7323
        s4.3), so the paper's own rule, any ACK from the receiver, applies from then on."""
        return h is not None and h.mode == HoldMode.PERSIST and h.probes > 0

    def _on_ack(
        self, c: Conn, t: P.TcpView, packet: bytes, now_ns: int, out: list[Action]
    ) -> Action | _Done | None:
        """Bookkeeping for an ACK from the remote end; returns a verdict to end processing.

        DupACKs are counted as Linux counts them (:class:`AckView`): an ACK below snd_una is
        ignored (forwarded, the kernel ignores it too), a window update is none."""
        if c.snd_una is not None and P.seq_lt(t.ack, c.snd_una):
            # a reordered old ACK (the Liu chain delays each packet independently): Linux's
            # tcp_ack() drops it before looking at its window, so must the count
            c.stats["old_acks"] += 1
            return None
        acked = 0
        new_ack = c.snd_una is None or P.seq_lt(c.snd_una, t.ack)
        outstanding = c.snd_nxt is not None and c.snd_una is not None and c.snd_nxt != c.snd_una
        data = t.payload_len > 0 or bool(t.flags & (P.FIN | P.RST))
        if new_ack:
            acked = 0 if c.snd_una is None else (t.ack - c.snd_una) & 0xFFFFFFFF
            c.snd_una = t.ack
            for s in list(c.segments):
                v = P.parse_tcp(c.segments[s])
                if v is not None and P.seq_le(v.end_seq, t.ack):
                    del c.segments[s]
        is_dup = c.net.see(t.seq, t.ack, t.window, data, outstanding) == "dup"
        c.last_ack_pkt = packet
        echo = P.read_rc_echo(packet) if self.params.route_control else None
        mark = P.read_rc_mark(packet) if self.params.route_control else None
        if new_ack and self.hooks.has_subscribers(TcpAck):
            out += self.hooks.emit(
                TcpAck(now_ns=now_ns, conn=c.id, ack=t.ack, acked_bytes=acked, rc_echo=echo, rc_mark=mark)
            )
        if is_dup:
            c.stats["dupacks"] += 1
            if self.hooks.has_subscribers(TcpDupack):
                out += self.hooks.emit(
                    TcpDupack(
                        now_ns=now_ns, conn=c.id, ack=t.ack, count=c.net.dupacks, rc_echo=echo, rc_mark=mark
                    )
                )
        h = c.hold
        if h is not None:
            if h.mode == HoldMode.FROZEN:
                # ELFN: the first ACK that arrives while frozen thaws, whatever it acknowledges:
                # Yu 2004 Algorithm 2 (a packet that is not an ICMP: "else if frozen() then
                # melt()"; s4.3.5 "When an ACK arrives, TCP restores congestion control
                # mechanisms"), and s3.1's trace: frozen with the probe at 409, "node 0 receives
                # the ACK for packet 408, and thus TCP's state is restored". Waiting for an ACK
                # above the probe instead deadlocks when the receiver misses a segment below it:
                # the answer to every probe is a duplicate ACK and the kernel's retransmission of
                # the hole is withheld (a 50-station run frozen from 89 s to the end at 900 s,
                # 27 Nov 2026). The thawing ACK is forwarded as received.
                mode = h.restore or "old"
                lost, deferred = list(h.lost_pkt), list(h.deferred)
                self.kernel.restore(c.id, kernel_restore(mode))
                c.hold = None
                out.append(CancelTimer(ThawTimer(c.id)))
                self.log.debug("%s thaw (%s) at ack %d", c.id, mode, t.ack)
                out.append(
                    self._to_kernel(c, self._thaw_rtt_sample(c, self._ecn_in(c, packet), mode, now_ns))
                )
                out += self._melt_sends(c, lost, deferred, now_ns)
                return _DONE
            answered = h.mode != HoldMode.PERSIST or self.answers_probe(h)
            if (h.release_on == "any_ack" and answered) or (h.release_on == "new_ack" and new_ack):
                c.hold = None
                out.append(self._to_kernel(c, self._ecn_in(c, packet)))
                return _DONE
        k = c.withhold_dupacks_from
        if (is_dup and (c.net.dupacks in c.withhold_dupacks or 0 < k <= c.net.dupacks)) or (
            0 < k <= c.kern.dupacks + 1 and self._kernel_dup(c, t, 0 if c.hold is not None else t.window)
        ):
            c.stats["dupacks_withheld"] += 1
            return Drop(packet, "tcpctl_dupack_withheld")
        return None

    def _kernel_dup(self, c: Conn, t: P.TcpView, window: int) -> bool:
        """Would the kernel count this ACK, delivered with ``window``, as a duplicate ACK?"""
        outstanding = c.snd_nxt is not None and c.kern.una is not None and c.snd_nxt != c.kern.una
        data = t.payload_len > 0 or bool(t.flags & (P.FIN | P.RST))
        return c.kern.kind(t.seq, t.ack, window, data, outstanding) == "dup"

    def _kernel_sees(self, c: Conn, t: P.TcpView, window: int) -> None:
        """Account an ACK delivered to the kernel with ``window`` (``Conn.kern``)."""
        outstanding = c.snd_nxt is not None and c.kern.una is not None and c.snd_nxt != c.kern.una
        data = t.payload_len > 0 or bool(t.flags & (P.FIN | P.RST))
        if (
            c.kern.see(t.seq, t.ack, window, data, outstanding) == "dup"
            and c.kern.dupacks == self.params.kernel_dupthresh
        ):
            c.stats["kernel_dupthresh"] += 1  # the kernel's fast retransmit and recovery start here

    def _to_kernel(self, c: Conn, packet: bytes) -> ToKernel:
        """Deliver an ACK of ``c`` to the local kernel (accounted in ``Conn.kern``)."""
        t = P.parse_tcp(packet)
        if t is not None and t.flags & P.ACK and not t.flags & P.SYN:
            self._kernel_sees(c, t, t.window)
        return ToKernel(packet)

    def _thaw_rtt_sample(self, c: Conn, packet: bytes, mode: Restore, now_ns: int) -> bytes:
        """Make the thawing ACK carry the RTT sample the restore asks for (TSecr rewritten).

        The probe carries the kernel's current timestamp (``retransmit``), so its echo would give
        the kernel an RTT sample of the probe's round trip (RFC 7323 RTTM on a retransmission)
        and not what the restore asks for; the TSecr is rewritten to set it. ``old`` and
        ``default_srtt``: a sample equal to the srtt at the freeze (the estimator keeps its
        values, the RTO stays about the old one). ``default``: a sample of
        ``default_rto_ns``, which puts the estimator above 6 s; the congestion control caps the
        RTO at exactly 6 s (TCP_RTO_MAX_MS) until data sent after the thaw is ACKed. Needs
        timestamps on the connection and the kernel's TSval clock in ms (Linux default).
        """
        t = P.parse_tcp(packet)
        if t is None or t.ts_ecr is None or c.ts_val is None:
            return packet
        if mode == "default":
            sample_ms = self.params.default_rto_ns // NS_PER_MS
        else:
            st = self.kernel.state(c.id) or {}
            if not st.get("frz_srtt_us"):
                return packet
            sample_ms = max(1, int(st["frz_srtt_us"]) // 1000)
        ts_now = c.ts_val + (now_ns - c.ts_val_ns) // NS_PER_MS
        buf = bytearray(packet)
        P.set_ts_ecr(buf, ts_now - sample_ms)
        return bytes(buf)

    def _ecn_in(self, c: Conn, packet: bytes) -> bytes:
        if c.ecn_in is None:
            return packet
        buf = bytearray(packet)
        self._apply_ecn(buf, c.ecn_in)
        return bytes(buf)

    def _retransmit_lost(self, c: Conn, lost: list[int], now_ns: int) -> list[Action]:
        # Algorithm 2: "for all seqno in lost_pkt do if seqno > last_ack_ then output(seqno)"
        out: list[Action] = []
        for s in lost:
            if c.snd_una is None or P.seq_le(c.snd_una, s):
                out += self.retransmit(c.id, s, now_ns)
        return out

    def _melt_sends(self, c: Conn, lost: list[int], deferred: list[int], now_ns: int) -> list[Action]:
        """What a thaw sends after the thawing ACK: EPLN's recorded lost packets (Algorithm 2),
        then the new data deferred while frozen."""
        return self._retransmit_lost(c, lost, now_ns) + self._send_deferred(c, deferred, lost, now_ns)

    def _send_deferred(self, c: Conn, deferred: list[int], resent: list[int], now_ns: int) -> list[Action]:
        """At the thaw, send the new data the kernel sent while frozen (withheld, in order).

        In the paper's TCP a frozen sender sends nothing and, once melted, sends its window from
        where it stopped (Yu 2004 s3.1: after the restore "TCP sends the packets 41 and 42").
        The kernel learns of the freeze from a zero-window ACK and may send before it has read
        it; without this the withheld segment is missing at the receiver and costs a
        retransmission timeout (Yu 2004 runs: 5 of 8 RTOs of an EPLN run, 27 Nov 2026).
        Retransmissions the kernel made while frozen are not sent: the frozen timer is off."""
        out: list[Action] = []
        for s in sorted(deferred, key=lambda q: (q - (c.snd_una or 0)) & 0xFFFFFFFF):
            if s in resent:
                continue
            acts = self.retransmit(c.id, s, now_ns)
            if acts:
                c.stats["agent_rexmt"] -= 1
                c.stats["deferred_sent"] += 1
            out += acts
        return out

    def _probe(self, c: Conn, now_ns: int) -> list[Action]:
        assert c.hold is not None
        out: list[Action] = [SetTimer(ThawTimer(c.id), now_ns + self.params.t_thaw_ns)]
        seq = c.hold.thaw_seqno if c.hold.thaw_seqno is not None else c.snd_una
        probe: list[Action] = []
        if seq is not None:
            probe = self.retransmit(c.id, seq, now_ns)
            if not probe and c.snd_una is not None and seq != c.snd_una:
                seq = c.snd_una
                probe = self.retransmit(c.id, seq, now_ns)
            if probe:
                c.stats["agent_rexmt"] -= 1
        if not probe and c.snd_una is not None and c.last_out_pkt is not None:
            # Nothing unacknowledged to send: a zero-window-style probe (seq = snd_una - 1, no
            # data), which the receiver must answer with an ACK (RFC 9293 section 3.10.7.4).
            seq = (c.snd_una - 1) & 0xFFFFFFFF
            probe = [ToNetwork(self._mark(self._window_probe(c, seq)))]
        if probe:
            c.hold.probes += 1
            c.stats["probes"] += 1
        return out + probe

    def _window_probe(self, c: Conn, seq: int) -> bytes:
        assert c.last_out_pkt is not None
        t = P.parse_tcp(c.last_out_pkt)
        assert t is not None
        opts = (
            P.timestamp_option(t.ts_val, t.ts_ecr) if t.ts_val is not None and t.ts_ecr is not None else b""
        )
        return P.build_tcp(
            c.id.local_ip,
            c.id.remote_ip,
            c.id.local_port,
            c.id.remote_port,
            seq,
            c.rcv_nxt if c.rcv_nxt is not None else t.ack,
            P.ACK,
            t.window,
            opts,
        )

    def _mark(self, pkt: bytes) -> bytes:
        if not self.params.route_control:
            return pkt
        buf = bytearray(pkt)
        P.write_rc_mark(buf, self.route_numbers.get(bytes(pkt[16:20]), 0), False)
        return bytes(buf)

    def _synth_ack(self, c: Conn, window: int | None) -> bytes | None:
        """A copy of the last ACK from the remote end (timestamps included) with ``window`` (None:
        the window TCP holds from the network's ACKs, ``Conn.net``)."""
        if c.last_ack_pkt is None:
            return None
        t = P.parse_tcp(c.last_ack_pkt)
        assert t is not None
        opts = b""
        if t.ts_val is not None and t.ts_ecr is not None:
            opts = P.timestamp_option(t.ts_val, t.ts_ecr)
        seq = c.rcv_nxt if c.rcv_nxt is not None else t.end_seq
        return P.build_tcp(
            c.id.remote_ip,
            c.id.local_ip,
            c.id.remote_port,
            c.id.local_port,
            seq,
            c.snd_una if c.snd_una is not None else t.ack,
            P.ACK,
            c.net.wnd if window is None else window,
            opts,
        )

    @staticmethod
    def _apply_ecn(buf: bytearray, rule: EcnRule) -> None:
        if rule.ip_ecn is not None:
            P.set_ip_ecn(buf, rule.ip_ecn)
        if rule.set_flags or rule.clear_flags:
            P.set_tcp_flags(buf, rule.set_flags, rule.clear_flags)

    # ================================================================ introspection
    def snapshot(self) -> dict[str, Any]:
        return {
            str(cid): {
                "snd_una": c.snd_una,
                "snd_nxt": c.snd_nxt,
                "copies": len(c.segments),
                "hold": None if c.hold is None else c.hold.mode.name,
                **c.stats,
            }
            for cid, c in self.conns.items()
        }


class _Done:
    """Sentinel verdict: the ACK was already forwarded (or consumed) by ``_on_ack``."""


_DONE = _Done()
