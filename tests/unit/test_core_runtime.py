"""NodeRuntime: one frame at a time to the MAC, broadcast jitter, IfqDrop, timers, actions."""

from __future__ import annotations

import random
from collections.abc import Callable

from nodes.core.addr import BROADCAST
from nodes.core.events import (
    Action,
    CancelTimer,
    DeliverLocal,
    Drop,
    Event,
    Frame,
    FromLocal,
    IfqDrop,
    Send,
    SetPower,
    SetTimer,
    Timer,
    TxStatus,
)
from nodes.core.ifq import InterfaceQueue
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.core.runtime import NodeRuntime


class Recorder(RoutingProtocol):
    """Records events; answers each with whatever ``script`` returns."""

    name = "recorder"

    def __init__(self, ctx: NodeContext, script: Callable[[Event, int], list[Action]] | None = None) -> None:
        super().__init__(ctx)
        self.events: list[tuple[int, Event]] = []
        self.script = script or (lambda e, t: [])

    def on_event(self, event: Event, now_ns: int) -> list[Action]:
        self.events.append((now_ns, event))
        return self.script(event, now_ns)


class IO:
    def __init__(self) -> None:
        self.tx: list[Frame] = []
        self.local: list[bytes] = []
        self.power: list[tuple[int | None, float | None]] = []

    def transmit(self, frame: Frame) -> None:
        self.tx.append(frame)

    def deliver_local(self, packet: bytes) -> None:
        self.local.append(packet)

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
        self.power.append((neighbour, tx_power_dbm))


def make(
    script: Callable[[Event, int], list[Action]] | None = None, ifq_len: int = 50
) -> tuple[NodeRuntime, Recorder, IO]:
    ctx = NodeContext(station=1, n_stations=3, rng=random.Random(1), ifq=InterfaceQueue(ifq_len))
    proto = Recorder(ctx, script)
    io = IO()
    return NodeRuntime(ctx, proto, io), proto, io


def send_each(event: Event, now: int) -> list[Action]:
    if isinstance(event, FromLocal):
        return [Send(Frame(event.packet, 2))]
    return []


def test_one_frame_at_a_time() -> None:
    rt, proto, io = make(send_each)
    for i in range(3):
        rt.handle(FromLocal(bytes([i])), 0)
    assert [f.packet for f in io.tx] == [b"\x00"]
    assert len(rt.ctx.ifq) == 2
    rt.tx_done(TxStatus(io.tx[0], True, 1, 1), 10)
    assert [f.packet for f in io.tx] == [b"\x00", b"\x01"]
    rt.tx_done(TxStatus(io.tx[1], False, 7, 0), 20)
    assert [f.packet for f in io.tx] == [b"\x00", b"\x01", b"\x02"]
    rt.tx_done(TxStatus(io.tx[2], True, 1, 1), 30)
    assert rt.mac_busy is None
    assert rt.ctx.counters.mac == {"tx_ok": 2, "tx_failed": 1}
    statuses = [e for _, e in proto.events if isinstance(e, TxStatus)]
    assert [s.ok for s in statuses] == [True, False, True]


def test_enqueue_time_is_stamped() -> None:
    rt, _, io = make(send_each)
    rt.handle(FromLocal(b"a"), 0)
    rt.handle(FromLocal(b"b"), 42)
    assert rt.ctx.ifq.snapshot()[0].enq_ns == 42


def test_broadcast_jitter_delays_enqueue() -> None:
    def script(event: Event, now: int) -> list[Action]:
        if isinstance(event, FromLocal):
            return [Send(Frame(event.packet, BROADCAST, control=True), jitter_ns=5_000)]
        return []

    rt, proto, io = make(script)
    rt.handle(FromLocal(b"rreq"), 1_000)
    assert io.tx == [] and len(rt.ctx.ifq) == 0
    assert rt.next_timer_ns() == 6_000
    rt.fire_due(5_999)
    assert io.tx == []
    rt.fire_due(6_000)
    assert [f.packet for f in io.tx] == [b"rreq"]
    assert io.tx[0].enq_ns == 6_000
    # jitter is internal: the core never sees a Timer event for it
    assert not any(isinstance(e, Timer) for _, e in proto.events)
    assert rt.next_timer_ns() is None


def test_ifq_drop_event_and_counter() -> None:
    rt, proto, io = make(send_each, ifq_len=2)
    for i in range(4):  # 1 at the MAC, 2 queued, 1 dropped
        rt.handle(FromLocal(bytes([i])), i)
    drops = [e for _, e in proto.events if isinstance(e, IfqDrop)]
    assert [d.frame.packet for d in drops] == [b"\x03"]
    assert rt.ctx.counters.drops["ifq_full"] == 1


def test_timers_set_replace_cancel_and_fire() -> None:
    def script(event: Event, now: int) -> list[Action]:
        if isinstance(event, FromLocal):
            return [
                SetTimer("a", 100),
                SetTimer("b", 50),
                SetTimer("b", 70),
                SetTimer("c", 60),
                CancelTimer("c"),
            ]
        return []

    rt, proto, _ = make(script)
    rt.handle(FromLocal(b"x"), 0)
    assert rt.next_timer_ns() == 70
    rt.fire_due(100)
    fired = [(t, e) for t, e in proto.events if isinstance(e, Timer)]
    assert fired == [(100, Timer("b")), (100, Timer("a"))]


def test_deliver_drop_and_power_actions() -> None:
    def script(event: Event, now: int) -> list[Action]:
        return [
            DeliverLocal(b"up"),
            Drop(b"x", "no_route"),
            Drop(b"y", "no_route"),
            SetPower(3, 5.0),
            SetPower(None, None),
        ]

    rt, _, io = make(script)
    rt.handle(FromLocal(b"x"), 0)
    assert io.local == [b"up"]
    assert rt.ctx.counters.drops["no_route"] == 2
    assert io.power == [(3, 5.0), (None, None)]


def test_start_applies_initial_actions() -> None:
    class Periodic(Recorder):
        def start(self, now_ns: int) -> list[Action]:
            return [SetTimer("hello", now_ns + 1_000)]

    ctx = NodeContext(station=1, n_stations=1, rng=random.Random(1))
    rt = NodeRuntime(ctx, Periodic(ctx), IO())
    rt.start(500)
    assert rt.next_timer_ns() == 1_500
