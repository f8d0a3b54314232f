"""InterfaceQueue: ns-2 PriQueue behaviour (control ahead of data, drop-tail, shared capacity)."""

from __future__ import annotations

import pytest

from nodes.core.events import Frame
from nodes.core.ifq import DEFAULT_IFQ_LEN, InterfaceQueue


def data(i: int) -> Frame:
    return Frame(bytes([i]), next_hop=2)


def ctl(i: int) -> Frame:
    return Frame(bytes([i]), next_hop=2, control=True)


def test_default_capacity_is_ns2_limit() -> None:
    assert DEFAULT_IFQ_LEN == 50
    assert InterfaceQueue().capacity == 50


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        InterfaceQueue(0)


def test_control_goes_ahead_of_data_fifo_within_class() -> None:
    q = InterfaceQueue(10)
    for f in (data(1), ctl(2), data(3), ctl(4)):
        assert q.enqueue(f) is None
    assert [f.packet[0] for f in q] == [2, 4, 1, 3]
    assert [q.dequeue().packet[0] for _ in range(4)] == [2, 4, 1, 3]  # type: ignore[union-attr]
    assert q.dequeue() is None
    assert len(q) == 0


def test_drop_tail_when_full() -> None:
    q = InterfaceQueue(3)
    frames = [data(i) for i in range(3)]
    for f in frames:
        q.enqueue(f)
    late = data(9)
    assert q.enqueue(late) is late
    assert q.snapshot() == frames


def test_control_pushes_out_last_data_frame() -> None:
    q = InterfaceQueue(3)
    frames = [data(i) for i in range(3)]
    for f in frames:
        q.enqueue(f)
    c = ctl(7)
    assert q.enqueue(c) is frames[-1]
    assert q.snapshot() == [c, frames[0], frames[1]]


def test_control_dropped_when_queue_full_of_control() -> None:
    q = InterfaceQueue(2)
    q.enqueue(ctl(1))
    q.enqueue(ctl(2))
    c = ctl(3)
    assert q.enqueue(c) is c
    assert len(q) == 2


@pytest.mark.parametrize("capacity", [1, 2, 5, 50])
def test_length_never_exceeds_capacity(capacity: int) -> None:
    q = InterfaceQueue(capacity)
    for i in range(3 * capacity):
        q.enqueue(ctl(i) if i % 3 == 0 else data(i))
        assert len(q) <= capacity


def test_remove_if_returns_matches_in_queue_order() -> None:
    q = InterfaceQueue(10)
    frames = [Frame(bytes([i]), next_hop=2 if i % 2 else 3, control=i == 4) for i in range(6)]
    for f in frames:
        q.enqueue(f)
    removed = q.remove_if(lambda f: f.next_hop == 3)
    assert removed == [frames[4], frames[0], frames[2]]
    assert q.snapshot() == [frames[1], frames[3], frames[5]]
    assert q.remove_if(lambda f: False) == []
    assert len(q) == 3


def test_queued_counts_every_frame_through_all_operations() -> None:
    """``queued`` (the runtime's cheap emptiness test) equals the frames actually queued after
    enqueue, push-out, tail drop, dequeue and remove_if, in random order."""
    import random

    rng = random.Random(3)
    q = InterfaceQueue(5)
    for i in range(2000):
        r = rng.random()
        if r < 0.5:
            q.enqueue(ctl(i % 256) if rng.random() < 0.3 else data(i % 256))
        elif r < 0.9:
            q.dequeue()
        else:
            q.remove_if(lambda f: f.packet[0] % 3 == 0)
        assert q.queued == len(q.snapshot()) == len(q) <= q.capacity
    assert q.queued > 0 or q.dequeue() is None
