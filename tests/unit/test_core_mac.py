"""``nodes.core.mac.MacState``: the one owner of the MAC's outstanding frame, the medium's sequence
numbers and TX cookies (used by the runtime, the router daemon and the native fast path)."""

from __future__ import annotations

import pytest

from nodes.core.events import Frame
from nodes.core.ifq import InterfaceQueue
from nodes.core.mac import MacState, MacStateError, WireNumbers


def frame(n: int = 1) -> Frame:
    return Frame(bytes([n]) * 20, 3)


def test_numbers_cookies_and_pending() -> None:
    mac = MacState()
    assert mac.next_seq() == 1  # HELLO
    f1, f2 = frame(1), frame(2)
    assert mac.send_tx(f1) == (2, 1)
    assert mac.send_tx(f2) == (3, 2)
    assert mac.numbers() == WireNumbers(rx_seq=0, tx_seq=3, cookie=2)
    assert mac.n_pending == 2 and mac.is_pending(1) and mac.is_pending(2)
    assert mac.complete(2) is f2
    assert mac.complete(2) is None  # a second TX_STATUS for the same cookie is unknown
    assert mac.complete(99) is None
    assert mac.n_pending == 1


def test_receive_checks_order_and_resynchronises() -> None:
    mac = MacState()
    assert mac.receive(1) and mac.receive(2)
    assert not mac.receive(5)  # a gap: out of order, and the stream goes on from 5
    assert mac.rx_seq == 5
    assert mac.receive(6)
    assert not mac.receive(6)  # a duplicate


def test_one_frame_at_a_time() -> None:
    mac = MacState()
    f1, f2 = frame(1), frame(2)
    mac.take(f1)
    assert mac.busy is f1
    with pytest.raises(MacStateError, match="busy"):
        mac.take(f2)
    assert not mac.release(f2)  # REJECTED for a frame the MAC does not hold changes nothing
    assert mac.busy is f1
    assert mac.release(f1)
    assert mac.busy is None
    mac.take(f2)
    mac.done()
    assert mac.busy is None


def test_take_next_takes_from_the_queue_only_while_idle() -> None:
    """``take_next`` (the runtime's pump): the head of the queue while idle, nothing while busy
    (the queue keeps its frames), nothing from an empty queue."""
    mac = MacState()
    q = InterfaceQueue(4)
    assert mac.take_next(q) is None and mac.busy is None  # empty queue: still idle
    f1, f2 = frame(1), frame(2)
    q.enqueue(f1)
    q.enqueue(f2)
    assert mac.take_next(q) is f1 and mac.busy is f1
    assert mac.take_next(q) is None and len(q) == 1  # busy: f2 stays queued
    mac.done()
    assert mac.take_next(q) is f2 and mac.busy is f2 and len(q) == 0


def test_fast_path_hand_over() -> None:
    """The fast path numbers messages on the same connection while it waits: the counters only
    move on, and its outstanding TX becomes ours (pending and MAC busy)."""
    mac = MacState(WireNumbers(rx_seq=10, tx_seq=20, cookie=5))
    mac.resume(WireNumbers(rx_seq=14, tx_seq=22, cookie=7))
    assert mac.numbers() == WireNumbers(14, 22, 7)
    with pytest.raises(MacStateError, match="backwards"):
        mac.resume(WireNumbers(rx_seq=13, tx_seq=22, cookie=7))
    f = frame(3)
    mac.adopt(7, f)
    assert mac.busy is f and mac.is_pending(7)
    assert mac.complete(7) is f
    mac.done()
    with pytest.raises(MacStateError, match="never issued"):
        mac.adopt(8, f)  # a cookie the fast path did not report through resume()
    mac.take(frame(4))
    with pytest.raises(MacStateError, match="busy"):
        mac.adopt(6, f)


def test_fields_are_read_only() -> None:
    mac = MacState()
    for name in ("busy", "rx_seq", "tx_seq", "cookie", "n_pending"):
        with pytest.raises(AttributeError):
            setattr(mac, name, 1)


def test_receive_status_numbers_and_completes_in_one_call() -> None:
    """``receive_status``: ``receive(seq)`` then, if in order, ``complete(cookie)``; out of order
    the cookie stays pending (as with the two calls) and the stream goes on from ``seq``."""
    mac = MacState()
    f1, f2 = frame(1), frame(2)
    mac.send_tx(f1)
    mac.send_tx(f2)
    assert mac.receive_status(1, 1) == (True, f1)
    assert not mac.is_pending(1) and mac.rx_seq == 1
    assert mac.receive_status(3, 2) == (False, None)  # gap: out of order, cookie 2 still pending
    assert mac.is_pending(2) and mac.rx_seq == 3
    assert mac.receive_status(4, 99) == (True, None)  # in order, unknown cookie
    assert mac.receive_status(5, 2) == (True, f2)
    assert mac.n_pending == 0 and mac.rx_seq == 5
