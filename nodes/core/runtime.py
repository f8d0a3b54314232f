"""The node runtime: applies a core's actions, owns the timers and feeds the MAC.

Shared by the router daemon (wall clock, real medium) and by ``nodes.core.sim`` (virtual time,
ideal links), so protocol tests exercise the same glue as the emulator. The MAC takes one frame at
a time (docs/interfaces.md section 2); the next frame leaves the interface queue only when the
TX status of the previous one has been handled.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

from nodes.core.clock import Scheduler
from nodes.core.events import (
    Action,
    CancelTimer,
    DeliverLocal,
    Drop,
    Event,
    Frame,
    FromAir,
    FromLocal,
    IfqDrop,
    Send,
    SetPower,
    SetTimer,
    Timer,
    ToKernel,
    ToNetwork,
    TxStatus,
)
from nodes.core.hoploss import HOP_LOSS_DROP, HopLoss
from nodes.core.mac import MacState
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.core.trace import (
    EV_DELIVER,
    EV_DROP,
    EV_IFQ_DROP,
    EV_ORIG,
    EV_RX,
    EV_TX,
    EV_TX_FAIL,
    EV_TX_OK,
    Tracer,
)


class NodeIO(Protocol):
    """What the runtime needs from the outside world."""

    def transmit(self, frame: Frame) -> None:
        """Hand one frame to the MAC (never called while a frame is outstanding)."""

    def deliver_local(self, packet: bytes) -> None:
        """Write an IP packet up to the local kernel."""

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None: ...


class Endpoint(Protocol):
    """The endpoint agent between kernel TCP and the routing core (issue 5; ATCP's thin layer).

    Every packet from the kernel goes through ``on_outbound`` (return ``ToNetwork(p)`` to pass it
    on, nothing to withhold it) and every packet for the kernel through ``on_inbound`` (return
    ``ToKernel(p)``). Timers whose key is an ``EndpointTimer`` (or, for the extensions' own
    timers, a tuple starting with ``ENDPOINT_TIMER``) go to ``on_timer``. The agent may return any
    other action too (e.g. ``Send``).
    """

    def on_outbound(self, packet: bytes, now_ns: int) -> list[Action]: ...

    def on_inbound(self, packet: bytes, now_ns: int) -> list[Action]: ...

    def on_timer(self, key: Hashable, now_ns: int) -> list[Action]: ...


class EndpointTimer:
    """Base class of the endpoint agent's timer keys (frozen dataclasses, e.g. the agent's
    ``ThawTimer(conn)``): the runtime routes them to ``Endpoint.on_timer``, never to the core."""

    __slots__ = ()


ENDPOINT_TIMER = "endpoint"
"""First element of an extension's own endpoint timer key, ``("endpoint", <extension>, ...)``:
routed to the endpoint agent like an ``EndpointTimer`` (the extensions' keys are still tuples)."""


@dataclass(frozen=True, slots=True)
class JitterTimer:
    """The runtime's own timer: a ``Send(jitter_ns > 0)`` whose frame enters the queue when it fires."""

    n: int


class NodeRuntime:
    def __init__(
        self, ctx: NodeContext, protocol: RoutingProtocol, io: NodeIO, mac: MacState | None = None
    ) -> None:
        self.ctx = ctx
        self.protocol = protocol
        self.io = io
        self.timers = Scheduler()
        #: the MAC's state (the frame it holds; in the router also the medium's numbers and cookies)
        self.mac = mac if mac is not None else MacState()
        self.endpoint: Endpoint | None = None
        self._jitter_frames: dict[JitterTimer, Frame] = {}
        self._jitter_seq = itertools.count()
        #: the per-packet trace (nodes.core.trace), or None when off
        self.tracer: Tracer | None = None
        #: per-hop loss above the MAC (nodes.core.hoploss), or None when there is none
        self.hop_loss: HopLoss | None = None
        self._now_ns = 0

    @property
    def mac_busy(self) -> Frame | None:
        """The frame the MAC holds, or None (read-only: ``mac`` owns it)."""
        return self.mac.busy

    # ------------------------------------------------------------------ inputs
    def start(self, now_ns: int) -> None:
        self.apply(self.protocol.start(now_ns), now_ns)

    def handle(self, event: Event, now_ns: int) -> None:
        tr = self.tracer
        if tr is not None:
            self._now_ns = now_ns
            if isinstance(event, FromAir):
                tr.add(now_ns, EV_RX, event.packet, event.src)
            elif isinstance(event, FromLocal):
                tr.add(now_ns, EV_ORIG, event.packet)
        hl = self.hop_loss
        if hl is not None and isinstance(event, FromAir) and not event.overheard and hl.lose():
            self.apply([Drop(event.packet, HOP_LOSS_DROP)], now_ns)
            return
        if self.endpoint is not None and isinstance(event, FromLocal):
            self.apply(self.endpoint.on_outbound(event.packet, now_ns), now_ns)
            return
        self.apply(self.protocol.on_event(event, now_ns), now_ns)

    def tx_done(self, status: TxStatus, now_ns: int) -> None:
        """The MAC finished the outstanding frame."""
        self.mac.done()
        self.ctx.counters.mac["tx_ok" if status.ok else "tx_failed"] += 1
        tr = self.tracer
        if tr is not None:
            f = status.frame
            tr.add(now_ns, EV_TX_OK if status.ok else EV_TX_FAIL, f.packet, f.next_hop, status.cause)
        # handle(status) without its FromAir/FromLocal tests (a TX status is neither): one call
        # less per packet; apply() pumps the next frame to the MAC
        self.apply(self.protocol.on_event(status, now_ns), now_ns)

    def fire_due(self, now_ns: int) -> None:
        self._now_ns = now_ns
        for key in self.timers.pop_due(now_ns):
            if isinstance(key, JitterTimer):
                frame = self._jitter_frames.pop(key)
                self._enqueue(frame, now_ns)
            elif self.endpoint is not None and (
                isinstance(key, EndpointTimer)
                or (isinstance(key, tuple) and key and key[0] == ENDPOINT_TIMER)
            ):
                self.apply(self.endpoint.on_timer(key, now_ns), now_ns)
            else:
                self.handle(Timer(key), now_ns)
        self.pump()

    def next_timer_ns(self) -> int | None:
        return self.timers.next_time()

    # ------------------------------------------------------------------ actions
    def apply(self, actions: list[Action], now_ns: int) -> None:
        self._now_ns = now_ns
        for a in actions:
            if isinstance(a, Send):
                if a.jitter_ns > 0:
                    key = JitterTimer(next(self._jitter_seq))
                    self._jitter_frames[key] = a.frame
                    self.timers.set(key, now_ns + a.jitter_ns)
                else:  # _enqueue(), inlined (once per forwarded packet)
                    sent = a.frame
                    sent.enq_ns = now_ns
                    victim = self.ctx.ifq.enqueue(sent)
                    if victim is not None:
                        self._ifq_full(victim, now_ns)
            elif isinstance(a, DeliverLocal):
                if self.endpoint is not None:
                    self.apply(self.endpoint.on_inbound(a.packet, now_ns), now_ns)
                else:
                    if self.tracer is not None:
                        self.tracer.add(now_ns, EV_DELIVER, a.packet)
                    self.io.deliver_local(a.packet)
            elif isinstance(a, ToKernel):
                if self.tracer is not None:
                    self.tracer.add(now_ns, EV_DELIVER, a.packet)
                self.io.deliver_local(a.packet)
            elif isinstance(a, ToNetwork):
                self.apply(self.protocol.on_event(FromLocal(a.packet), now_ns), now_ns)
            elif isinstance(a, SetTimer):
                self.timers.set(a.key, a.at_ns)
            elif isinstance(a, CancelTimer):
                self.timers.cancel(a.key)
            elif isinstance(a, Drop):
                self.ctx.counters.drops[a.reason] += 1
                if self.tracer is not None:
                    self.tracer.drop(now_ns, EV_DROP, a.packet, a.reason)
            elif isinstance(a, SetPower):
                self.io.set_power(a.neighbour, a.tx_power_dbm)
            else:  # pragma: no cover - exhaustive
                raise TypeError(f"unknown action {a!r}")
        # pump(), inlined: this runs for every event (twice per forwarded packet), and a Python
        # call costs about as much as the rest of pump (docs/benchmarks.md); an empty queue has
        # nothing for the MAC (the TX status of the last frame: no call at all)
        ifq = self.ctx.ifq
        if ifq.queued:
            frame = self.mac.take_next(ifq)
            if frame is not None:
                if self.tracer is not None:
                    self.tracer.add(self._now_ns, EV_TX, frame.packet, frame.next_hop)
                self.io.transmit(frame)

    def _enqueue(self, frame: Frame, now_ns: int) -> None:
        """Into the interface queue (``apply`` does the same inline for a ``Send``)."""
        frame.enq_ns = now_ns
        victim = self.ctx.ifq.enqueue(frame)
        if victim is not None:
            self._ifq_full(victim, now_ns)

    def _ifq_full(self, victim: Frame, now_ns: int) -> None:
        """The queue was full: ``victim`` (the new frame, or a data frame a control one pushed out)."""
        self.ctx.counters.drops["ifq_full"] += 1
        if self.tracer is not None:
            self.tracer.drop(now_ns, EV_IFQ_DROP, victim.packet, "ifq_full")
        self.handle(IfqDrop(victim), now_ns)

    def pump(self) -> None:
        """Hand the next queued frame to the MAC if it is idle (``apply`` does the same inline)."""
        frame = self.mac.take_next(self.ctx.ifq)
        if frame is not None:
            if self.tracer is not None:
                self.tracer.add(self._now_ns, EV_TX, frame.packet, frame.next_hop)
            self.io.transmit(frame)
