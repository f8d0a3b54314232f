"""A virtual-time network of protocol cores over idealised links, for unit tests.

Each node runs the real ``NodeRuntime`` (interface queue, timers, one frame at a time to the MAC).
The "MAC" here is deliberately simple and exact: a frame occupies the sender for
``airtime_ns(frame)``; a unicast over an up link is delivered and acknowledged, over a down link it
fails after ``fail_ns`` (the time 7 RTS attempts would take); a broadcast reaches every neighbour
once. No contention, no collisions: that is the medium's job (medium/), tested there. Links are an
explicit undirected graph the test edits (``link_up``/``link_down``) or derive from positions.
Per-link loss can be set to exercise retries; draws come from the seeded RNG.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from nodes.core.addr import BROADCAST
from nodes.core.clock import NS_PER_MS, EventLoop
from nodes.core.events import Frame, FromAir, FromLocal, TxStatus
from nodes.core.hoploss import HopLoss
from nodes.core.ifq import DEFAULT_IFQ_LEN, InterfaceQueue
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.core.runtime import NodeRuntime
from topologies.seeding import station_rng

DEFAULT_FAIL_NS: int = 12 * NS_PER_MS
"""About the time of 7 failed RTS attempts with 802.11b backoff (medium/ computes it exactly)."""


def default_airtime_ns(frame: Frame) -> int:
    """192 us PLCP + 2 Mbit/s payload (4 us per byte) + ~0.5 ms RTS/CTS/ACK overhead."""
    return 192_000 + 4_000 * len(frame.packet) + 500_000


@dataclass(slots=True)
class TraceEntry:
    t_ns: int
    src: int
    dst: int
    packet: bytes
    ok: bool


@dataclass(slots=True)
class SimNode:
    ctx: NodeContext
    runtime: NodeRuntime
    delivered: list[tuple[int, bytes]] = field(default_factory=list)


class _SimIO:
    def __init__(self, net: SimNetwork, station: int) -> None:
        self.net = net
        self.station = station

    def transmit(self, frame: Frame) -> None:
        self.net._transmit(self.station, frame)

    def deliver_local(self, packet: bytes) -> None:
        node = self.net.nodes[self.station]
        node.delivered.append((self.net.loop.now_ns(), packet))

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
        self.net.power_changes.append((self.station, neighbour, tx_power_dbm))


class SimNetwork:
    def __init__(
        self,
        n: int,
        make_protocol: Callable[[NodeContext], RoutingProtocol],
        links: Iterable[tuple[int, int]] = (),
        *,
        seed: int = 1,
        promiscuous: bool = False,
        ifq_len: int = DEFAULT_IFQ_LEN,
        airtime_ns: Callable[[Frame], int] = default_airtime_ns,
        fail_ns: int = DEFAULT_FAIL_NS,
        hop_loss: float = 0.0,
    ) -> None:
        self.loop = EventLoop()
        self.links: set[frozenset[int]] = {frozenset(p) for p in links}
        self.loss: dict[frozenset[int], float] = {}
        self.rng = random.Random(seed)
        self.airtime_ns = airtime_ns
        self.fail_ns = fail_ns
        self.trace: list[TraceEntry] = []
        self.power_changes: list[tuple[int, int | None, float | None]] = []
        self.nodes: dict[int, SimNode] = {}
        for s in range(1, n + 1):
            ctx = NodeContext(
                station=s,
                n_stations=n,
                rng=station_rng(seed, s),
                ifq=InterfaceQueue(ifq_len),
                promiscuous=promiscuous,
            )
            proto = make_protocol(ctx)
            rt = NodeRuntime(ctx, proto, _SimIO(self, s))
            rt.hop_loss = HopLoss.for_station(hop_loss, seed, s)  # the same draws as the router's
            self.nodes[s] = SimNode(ctx, rt)
        for node in self.nodes.values():
            node.runtime.start(0)
            self._arm(node)

    # ---------------------------------------------------------------- topology
    @classmethod
    def chain(
        cls, n: int, make_protocol: Callable[[NodeContext], RoutingProtocol], **kw: object
    ) -> SimNetwork:
        return cls(n, make_protocol, [(i, i + 1) for i in range(1, n)], **kw)  # type: ignore[arg-type]

    def link_up(self, a: int, b: int) -> None:
        self.links.add(frozenset((a, b)))

    def link_down(self, a: int, b: int) -> None:
        self.links.discard(frozenset((a, b)))

    def set_loss(self, a: int, b: int, p: float) -> None:
        self.loss[frozenset((a, b))] = p

    def neighbours(self, s: int) -> list[int]:
        return sorted(x for link in self.links if s in link for x in link if x != s)

    # ---------------------------------------------------------------- driving
    @property
    def now_ns(self) -> int:
        return self.loop.now_ns()

    def inject(self, station: int, packet: bytes, at_ns: int | None = None) -> None:
        """The kernel of ``station`` sends ``packet`` into its TUN at ``at_ns`` (default now)."""

        def go() -> None:
            node = self.nodes[station]
            node.runtime.handle(FromLocal(packet), self.now_ns)
            self._arm(node)

        self.loop.call_at(self.now_ns if at_ns is None else at_ns, go)

    def at(self, t_ns: int, fn: Callable[[], None]) -> None:
        self.loop.call_at(t_ns, fn)

    def run_until(self, t_ns: int) -> None:
        self.loop.run_until(t_ns)

    def run_for(self, dt_ns: int) -> None:
        self.loop.run_until(self.now_ns + dt_ns)

    # ---------------------------------------------------------------- internals
    def _arm(self, node: SimNode) -> None:
        t = node.runtime.next_timer_ns()
        if t is not None:
            self.loop.call_at(t, lambda: self._fire(node, t))

    def _fire(self, node: SimNode, t: int) -> None:
        if node.runtime.next_timer_ns() == t:
            node.runtime.fire_due(self.now_ns)
        self._arm(node)

    def _delivered_ok(self, a: int, b: int) -> bool:
        link = frozenset((a, b))
        if link not in self.links:
            return False
        p = self.loss.get(link, 0.0)
        return p <= 0.0 or self.rng.random() >= p

    def _transmit(self, src: int, frame: Frame) -> None:
        start = self.now_ns
        airtime = self.airtime_ns(frame)

        def finish() -> None:
            now = self.now_ns
            if frame.next_hop == BROADCAST:
                for nb in self.neighbours(src):
                    if self._delivered_ok(src, nb):
                        self._rx(nb, FromAir(frame.packet, src, BROADCAST))
                self.trace.append(TraceEntry(start, src, BROADCAST, frame.packet, True))
                self._tx_done(src, TxStatus(frame, True, 0, 1))
                return
            ok = self._delivered_ok(src, frame.next_hop)
            self.trace.append(TraceEntry(start, src, frame.next_hop, frame.packet, ok))
            if ok:
                self._rx(frame.next_hop, FromAir(frame.packet, src, frame.next_hop))
                for nb in self.neighbours(src):
                    if nb != frame.next_hop and self.nodes[nb].ctx.promiscuous:
                        self._rx(nb, FromAir(frame.packet, src, frame.next_hop, overheard=True))
                self._tx_done(src, TxStatus(frame, True, 1, 1))
            else:
                self.loop.call_at(
                    now + self.fail_ns - airtime if self.fail_ns > airtime else now,
                    lambda: self._tx_done(src, TxStatus(frame, False, 7, 0)),
                )

        self.loop.call_at(start + airtime, finish)

    def _rx(self, station: int, ev: FromAir) -> None:
        node = self.nodes[station]
        node.runtime.handle(ev, self.now_ns)
        self._arm(node)

    def _tx_done(self, station: int, status: TxStatus) -> None:
        node = self.nodes[station]
        node.runtime.tx_done(status, self.now_ns)
        self._arm(node)
