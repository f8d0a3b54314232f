"""TCP-ELFN, Explicit Link Failure Notification (Holland & Vaidya, MobiCom 1999), as Yu 2004
(MobiCom 2004) section 3.1/3.2 runs it over DSR; also over AODV.

Yu 2004 section 3.1: node 31 "detects that link (31, 1) is broken when transmitting the packet
with sequence number 39 ... It salvages this packet ... It then sends a ROUTE ERROR to node 0,
including the sender and the receiver addresses, ports, and sequence number 39. This is an ELFN
message. ... node 0 receives the ROUTE ERROR; the routing protocol sends an ICMP message to TCP.
TCP disables its retransmission timer, starts a timer called a thaw timer with timeout 2 s, and
sets the sequence number of the probing packet to 39. After TCP is frozen, it does not send any
packet until the thaw timer times out. ... node 0 receives the ACK for packet 39 and restores
TCP's retransmission timer." Restore: "default values (RTO 6 s, cwnd 2)" or the values TCP had when
frozen ("old"). Section 3.2: "In ELFN, TCP will be frozen either when a TCP sender initiates a
route discovery, or when a TCP sender receives an ELFN message" and "ELFN ... freezes TCP even if
packets are salvaged" (the choice Yu keeps: "freezing TCP upon route failures").

What runs where (each station runs the same extension; events of ``nodes.core.hooks`` and the
cores' own, whichever the core emits, never the protocol's name):

- The TCP sender whose own link broke (``LinkFailure``, any core): its connections with a data
  segment among the packets that met the break (the failed frame and the queue) freeze, the probe
  at that segment (the route failed; DSR re-routes its own packets without a ROUTE ERROR).
- The TCP sender starting a route discovery for a data segment (``RouteDiscoveryStarted``), or
  whose data segment waits for the discovery it already has under way (``RouteDiscoveryJoined``:
  an ACK in flight at the break thawed it, and what it sends next waits for the route).
- DSR, the node detecting the broken link (``DsrRouteErrorSent``): for the TCP data segments
  that met the break (``packets``: lost *or salvaged*), one ELFN option (:class:`ElfnOption`, DSR
  option type :data:`OPT_ELFN`) in the ROUTE ERROR, one entry per connection (sender, receiver,
  ports, the sequence number of its first such segment).
- DSR, the TCP sender's station (``DsrRouteErrorReceived`` with ``for_me``): every entry whose
  sender is this station and whose connection the endpoint agent knows freezes it.
- AODV (``AodvRouteErrorReceived`` at any station): a RERR lists the unreachable destinations,
  not connections; the station freezes its sending connections to those destinations. No extra
  option: AODV's RERR already says enough for ELFN's purpose.

The freeze, the probe every ``probe_interval`` (the agent's thaw timer, ``thaw_seqno`` = the
notified sequence number) and the thaw on the first ACK that arrives while frozen (Algorithm 2's
``melt()``) with ``restore`` are the endpoint agent's (``TcpControl.freeze``; docs/fidelity.md
"ELFN"). This module decides when, and keeps each connection's ELFN state (:class:`ElfnState`)
and the freeze/thaw record.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, ClassVar, get_args

from nodes.core.clock import NS_PER_S
from nodes.core.events import Action
from nodes.core.hooks import LinkFailure, Needs, RouteDiscoveryJoined, RouteDiscoveryStarted
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions._tcp import data_conn, endpoint_of
from nodes.protocols.aodv.events import AodvRouteErrorReceived
from nodes.protocols.dsr import srcroute
from nodes.protocols.dsr.events import DsrRouteErrorReceived, DsrRouteErrorSent
from nodes.protocols.dsr.options import (
    OPT_EXPERIMENTAL_FIRST,
    OPTION_DECODERS,
    DsrOption,
    MalformedDsr,
    RouteError,
    register_option,
)
from nodes.tcpctl.agent import ConnId, Restore, TcpAck, TcpDupack, TcpSegmentSent
from nodes.tcpctl.api import TcpControl

OPT_ELFN = OPT_EXPERIMENTAL_FIRST + 2
"""DSR option type 20: the ELFN message. Unassigned in RFC 4728; ``20 & 0x80 == 0`` and
``20 & 0x60 == 0``, so a router without the extension carries it unchanged and sends no
OPTION_NOT_SUPPORTED (section 8.1.6). 17 is Yu's conn_list; 18 and 19 are left to the other Yu
2004 extensions (DSR-Update, BEAD)."""

ENTRY = struct.Struct("!4s4sHHI")
"""One connection: sender address, receiver address, sender port, receiver port, sequence number."""


@dataclass(frozen=True, slots=True)
class ElfnEntry:
    sender: bytes
    receiver: bytes
    sport: int
    dport: int
    seqno: int

    @property
    def conn(self) -> ConnId:
        """The connection as the sender's endpoint agent names it."""
        return ConnId(self.sender, self.sport, self.receiver, self.dport)


@dataclass(frozen=True, slots=True)
class ElfnOption:
    """The ELFN message in a ROUTE ERROR::

    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |  Option Type  |  Opt Data Len |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                 TCP Sender Address (entry 1)                  |
    |                TCP Receiver Address                           |
    |          Sender Port          |         Receiver Port         |
    |                    Sequence Number                            |
    .                  ... (16 bytes per entry, 1 to 15)            .
    """

    TYPE: ClassVar[int] = OPT_ELFN
    entries: tuple[ElfnEntry, ...]

    def encode(self) -> bytes:
        if not 1 <= len(self.entries) <= MAX_ENTRIES:
            raise ValueError(f"an ELFN option carries 1..{MAX_ENTRIES} entries")
        body = b"".join(
            ENTRY.pack(e.sender, e.receiver, e.sport, e.dport, e.seqno & 0xFFFFFFFF) for e in self.entries
        )
        return bytes((OPT_ELFN, len(body))) + body


MAX_ENTRIES = 255 // ENTRY.size


def decode_elfn(data: bytes) -> DsrOption:
    if not data or len(data) % ENTRY.size:
        raise MalformedDsr("ELFN option length")
    return ElfnOption(tuple(ElfnEntry(*ENTRY.unpack_from(data, i)) for i in range(0, len(data), ENTRY.size)))


if OPTION_DECODERS.get(OPT_ELFN) is not decode_elfn:
    register_option(OPT_ELFN, decode_elfn)  # raises if another extension took the number


class ElfnState(IntEnum):
    """ELFN at the TCP sender, per connection (STYLE.md: states as data, checked setter)."""

    ACTIVE = 1
    FROZEN = 2


TRANSITIONS: dict[ElfnState, frozenset[ElfnState]] = {
    ElfnState.ACTIVE: frozenset({ElfnState.FROZEN}),  # notification -> freeze
    ElfnState.FROZEN: frozenset({ElfnState.ACTIVE}),  # an ACK arrives -> thaw
}


class IllegalTransition(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class ElfnParams:
    probe_interval: float = 2.0
    """s; the thaw timer: "starts a timer called a thaw timer with timeout 2 s" (Yu 2004 s3.1)."""
    restore: Restore = "old"
    """What the thaw restores: the values at the freeze ("old") or the defaults below, reached
    either by a 6 s RTT sample on the thawing ACK ("default": the RTO is exactly 6 s, and Linux's
    srtt keeps the sample for 10-20 samples after) or with the estimator left as it was
    ("default_srtt": cwnd 2, the RTO the kernel's own under a 6 s cap; nodes/tcpctl/agent.py
    ``Restore``, docs/fidelity.md "ELFN")."""
    default_rto: float = 6.0
    """s; "default values (RTO 6 s, cwnd 2)" (the kernel side realises only these)."""
    default_cwnd: int = 2
    """segments; see ``default_rto``."""
    freeze_on_own_link_failure: bool = True
    """s3.2: the sender's own broken link (it re-routes, or starts a discovery) also freezes."""
    freeze_on_route_discovery: bool = True
    """s3.2: "TCP will be frozen ... when a TCP sender initiates a route discovery" (DSR)."""

    def __post_init__(self) -> None:
        if self.probe_interval <= 0:
            raise ValueError("probe_interval must be > 0")
        if self.restore not in get_args(Restore):
            raise ValueError(f"restore must be one of {', '.join(get_args(Restore))}, not {self.restore!r}")
        if (self.default_rto, self.default_cwnd) != (6.0, 2):
            raise ValueError("default_rto/default_cwnd: only the paper's 6 s and 2 are realised (BPF)")

    @property
    def probe_interval_ns(self) -> int:
        return round(self.probe_interval * NS_PER_S)

    @property
    def default_rto_ns(self) -> int:
        return round(self.default_rto * NS_PER_S)


@dataclass(slots=True)
class ConnElfn:
    state: ElfnState = ElfnState.ACTIVE
    freezes: list[int] = field(default_factory=list)
    thaws: list[int] = field(default_factory=list)


class Elfn:
    """The ELFN extension of one station (all roles: detecting node, sender)."""

    name = "elfn"

    def __init__(self, ctx: NodeContext, api: TcpControl, params: ElfnParams, log: logging.Logger) -> None:
        self.ctx = ctx
        self.api = api
        self.p = params
        self.log = log
        self.conns: dict[ConnId, ConnElfn] = {}
        self.events: list[tuple[int, str, str, str]] = []
        """(t_ns, event, connection, cause), bounded."""
        self.counters = {"elfn_sent": 0, "elfn_entries_sent": 0, "elfn_received": 0, "freezes": 0, "thaws": 0}
        ag = api.agent
        if (
            ag.params.t_thaw_ns != params.probe_interval_ns
            or ag.params.default_rto_ns != params.default_rto_ns
        ):
            ag.params = replace(
                ag.params, t_thaw_ns=params.probe_interval_ns, default_rto_ns=params.default_rto_ns
            )
        api.on_segment_sent(self._on_segment_sent)
        api.on_ack(self._on_tcp_ack)
        api.on_dupack(self._on_tcp_ack)
        hooks = ctx.hooks
        hooks.subscribe(LinkFailure, self.on_link_failure)
        hooks.subscribe(RouteDiscoveryStarted, self.on_route_discovery)
        hooks.subscribe(RouteDiscoveryJoined, self.on_route_discovery)
        # NEEDS.one_of: the route error of whichever core this is (check_protocol made sure).
        if hooks.emits(DsrRouteErrorSent):
            hooks.subscribe(DsrRouteErrorSent, self.on_route_error_sent)
            hooks.subscribe(DsrRouteErrorReceived, self.on_route_error_received)
        if hooks.emits(AodvRouteErrorReceived):
            hooks.subscribe(AodvRouteErrorReceived, self.on_aodv_route_error)

    # ------------------------------------------------------------------ state
    def state_of(self, conn: ConnId) -> ElfnState:
        c = self.conns.get(conn)
        return ElfnState.ACTIVE if c is None else c.state

    def _set(self, conn: ConnId, new: ElfnState, now_ns: int, cause: str) -> None:
        c = self.conns.setdefault(conn, ConnElfn())
        if new not in TRANSITIONS[c.state]:
            raise IllegalTransition(f"elfn {conn}: {c.state.name} -> {new.name}")
        self.log.info("elfn %s: %s -> %s (%s)", conn, c.state.name, new.name, cause)
        c.state = new
        (c.freezes if new == ElfnState.FROZEN else c.thaws).append(now_ns)
        self.counters["freezes" if new == ElfnState.FROZEN else "thaws"] += 1
        self.events.append((now_ns, new.name.lower(), str(conn), cause))
        del self.events[:-256]

    def _sync(self, conn: ConnId, now_ns: int) -> None:
        """The agent thaws by itself on the first ACK while frozen; notice it."""
        c = self.conns.get(conn)
        if c is not None and c.state == ElfnState.FROZEN and not self.api.is_frozen(conn):
            self._set(conn, ElfnState.ACTIVE, now_ns, "ack arrived")

    def freeze(self, conn: ConnId, now_ns: int, cause: str, seqno: int | None = None) -> list[Action]:
        """Freeze a local sending connection (no-op if unknown, not sending, or frozen)."""
        self._sync(conn, now_ns)
        if conn not in self.api.agent.conns or conn not in self.api.senders() or self.api.is_frozen(conn):
            return []
        acts = self.api.agent.freeze(conn, now_ns, self.p.restore, thaw_seqno=seqno)
        self._set(conn, ElfnState.FROZEN, now_ns, cause)
        return acts

    # ------------------------------------------------------------------ endpoint hooks
    def _on_segment_sent(self, ev: TcpSegmentSent) -> list[Action]:
        self._sync(ev.conn, ev.now_ns)
        return []

    def _on_tcp_ack(self, ev: TcpAck | TcpDupack) -> list[Action]:
        # Any ACK while frozen thaws: the agent right after this hook (Algorithm 2's melt();
        # agent._on_ack), or already (_sync's case). Record the thaw at this ACK's time. An ACK
        # that is neither new nor a duplicate (a window update) thaws too; _sync notices it.
        if self.state_of(ev.conn) == ElfnState.FROZEN:
            self._set(ev.conn, ElfnState.ACTIVE, ev.now_ns, "ack arrived")
        return []

    # ------------------------------------------------------------------ any core
    def on_link_failure(self, ev: LinkFailure) -> list[Action]:
        """The sender's own link broke: its connections among the packets that met the break."""
        if not self.p.freeze_on_own_link_failure:
            return []
        out: list[Action] = []
        seen: set[ConnId] = set()
        for pkt in ev.packets:
            dc = data_conn(pkt)
            if dc is None or dc[0] in seen or dc[0].local_ip != self.ctx.ip:
                continue
            seen.add(dc[0])
            out += self.freeze(dc[0], ev.now_ns, "own link failure", dc[1])
        return out

    def on_route_discovery(self, ev: RouteDiscoveryStarted | RouteDiscoveryJoined) -> list[Action]:
        """Yu 2004 s3.2: "TCP will be frozen either when a TCP sender initiates a route discovery,
        or when a TCP sender receives an ELFN message". The station starts a discovery for
        ``packet`` (no route to ``dst``), or ``packet`` waits for the one under way: when that is
        a data segment of a connection this station sends on, freeze it with the probe at the
        segment's sequence number. A handshake looking for its first route (SYN, no data) is not
        frozen. Joining matters after a thaw by an ACK that was in flight at the break: without
        it the sender sends on into the discovery unfrozen and its retransmission timer runs
        (seen: two RTOs, the retransmission waiting 6 s in the send buffer)."""
        if not self.p.freeze_on_route_discovery:
            return []
        dc = data_conn(ev.packet)
        if dc is None or dc[0].local_ip != self.ctx.ip:
            return []
        return self.freeze(dc[0], ev.now_ns, "route discovery", dc[1])

    # ------------------------------------------------------------------ DSR's ROUTE ERROR
    def on_route_error_sent(self, ev: DsrRouteErrorSent) -> list[Action]:
        """At the node detecting the break: the ELFN message, also for salvaged packets. Not on
        an ``optional`` ROUTE ERROR (the sources of packets that only waited in the interface
        queue under ns-2's ``xmitFailed``): ELFN tells the source of the packet that met the
        failure (Yu 2004 s3: "A TCP sender will receive a notice only when a data packet
        encounters a link failure for the first time")."""
        if ev.optional:
            return []
        entries: dict[ConnId, ElfnEntry] = {}
        for pkt in ev.packets:
            try:
                inner = srcroute.strip(pkt)
            except (MalformedDsr, ValueError, IndexError):
                continue
            dc = data_conn(inner)
            if dc is None or dc[0] in entries:
                continue
            conn, seq = dc
            entries[conn] = ElfnEntry(conn.local_ip, conn.remote_ip, conn.local_port, conn.remote_port, seq)
        if entries:
            ev.extra_options.append(ElfnOption(tuple(entries.values())[:MAX_ENTRIES]))
            self.counters["elfn_sent"] += 1
            self.counters["elfn_entries_sent"] += len(entries)
        return []

    def on_route_error_received(self, ev: DsrRouteErrorReceived) -> list[Action]:
        """At the TCP sender: the ELFN options after the ROUTE ERROR addressed here."""
        if not ev.for_me:
            return []
        out: list[Action] = []
        for o in ev.following:
            if isinstance(o, RouteError):
                break  # a nested error's options belong to it
            if not isinstance(o, ElfnOption):
                continue
            self.counters["elfn_received"] += 1
            for e in o.entries:
                if e.sender == self.ctx.ip:
                    out += self.freeze(e.conn, ev.now_ns, "elfn", e.seqno)
        return out

    # ------------------------------------------------------------------ AODV's RERR
    def _freeze_towards(self, remote: set[bytes], now_ns: int, cause: str) -> list[Action]:
        out: list[Action] = []
        for conn in self.api.senders():
            if conn.remote_ip in remote:
                out += self.freeze(conn, now_ns, cause)
        return out

    def on_aodv_route_error(self, ev: AodvRouteErrorReceived) -> list[Action]:
        remote = {int(ip).to_bytes(4, "big") for ip, _seq in ev.rerr.unreachable}
        return self._freeze_towards(remote, ev.now_ns, "aodv rerr")

    def state(self) -> dict[str, Any]:
        return {
            "counters": dict(self.counters),
            "conns": {
                str(c): {"state": v.state.name, "freezes": v.freezes, "thaws": v.thaws}
                for c, v in self.conns.items()
            },
        }


PARAMS = ElfnParams
NEEDS = Needs(
    events=frozenset({LinkFailure, RouteDiscoveryStarted, RouteDiscoveryJoined}),
    one_of=(
        frozenset({DsrRouteErrorSent, DsrRouteErrorReceived}),  # the ELFN option in the ROUTE ERROR (s3.1)
        frozenset({AodvRouteErrorReceived}),  # the RERR's unreachable destinations (s3.2)
    ),
    endpoint=True,
)


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: ElfnParams) -> Elfn:
    return Elfn(ctx, endpoint_of(ctx, "elfn"), params, ctx.log.getChild("elfn"))
