"""The station's MAC state: one owner for the frame outstanding at the MAC and, in the router, the
medium connection's sequence numbers and TX cookies (docs/interfaces.md section 2).

The MAC takes one frame at a time: ``NodeRuntime.pump`` hands the next frame only after the TX
status of the previous one (``busy`` is that frame). In the router daemon every TX carries a
cookie that its TX_STATUS echoes (``pending`` maps it back to the ``Frame``), every message
carries a per-direction sequence number (``tx_seq`` the last one sent, ``rx_seq`` the last one
received). Three parties act on this state: the ``NodeRuntime`` (start and end of a TX), the router
daemon (``nodes.router.main``: TX, TX_STATUS, REJECTED) and the native fast path
(``nodes.router.fastpath``), which sends and receives on the same connection while it waits and
hands its numbers and its outstanding TX back. All of them go through the methods below; nothing
else writes the fields (they are read-only properties).

Sans-I/O: no sockets, no clock. Tests: ``tests/unit/test_core_mac.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nodes.core.events import Frame


class FrameQueue(Protocol):
    """Where the MAC takes its next frame from (``nodes.core.ifq.InterfaceQueue``)."""

    def dequeue(self) -> Frame | None: ...


class MacStateError(RuntimeError):
    """An impossible hand-over (a second outstanding frame, numbers going backwards): a bug."""


@dataclass(frozen=True, slots=True)
class WireNumbers:
    """The medium connection's counters at one instant: last sequence number received and sent,
    last cookie used (what the native fast path takes and gives back)."""

    rx_seq: int
    tx_seq: int
    cookie: int


class MacState:
    """The frame outstanding at the MAC, the cookies of the TXs in flight and the sequence numbers."""

    __slots__ = ("_busy", "_cookie", "_pending", "_rx_seq", "_tx_seq")

    def __init__(self, numbers: WireNumbers | None = None) -> None:
        """Idle, nothing pending; the medium connection's counters at 0 or at ``numbers``."""
        self._busy: Frame | None = None
        self._rx_seq, self._tx_seq, self._cookie = (
            (0, 0, 0) if numbers is None else (numbers.rx_seq, numbers.tx_seq, numbers.cookie)
        )
        self._pending: dict[int, Frame] = {}

    # ------------------------------------------------------------------ reading
    @property
    def busy(self) -> Frame | None:
        """The frame the MAC holds (handed to it, TX status not handled yet), or None: idle."""
        return self._busy

    @property
    def rx_seq(self) -> int:
        return self._rx_seq

    @property
    def tx_seq(self) -> int:
        return self._tx_seq

    @property
    def cookie(self) -> int:
        return self._cookie

    @property
    def n_pending(self) -> int:
        """TXs sent whose TX_STATUS has not come back."""
        return len(self._pending)

    def is_pending(self, cookie: int) -> bool:
        return cookie in self._pending

    def numbers(self) -> WireNumbers:
        return WireNumbers(self._rx_seq, self._tx_seq, self._cookie)

    # ------------------------------------------------------------------ the MAC (NodeRuntime)
    def take(self, frame: Frame) -> None:
        """The MAC takes ``frame`` (the runtime hands it over only while idle)."""
        if self._busy is not None:
            raise MacStateError("MAC busy: a second frame handed over before the TX status")
        self._busy = frame

    def take_next(self, queue: FrameQueue) -> Frame | None:
        """If idle, take the next frame of ``queue`` and return it; None if busy or the queue is
        empty. ``NodeRuntime.apply`` and ``pump``: one call instead of ``busy`` and ``take``."""
        if self._busy is not None:
            return None
        frame = queue.dequeue()
        if frame is not None:
            self._busy = frame
        return frame

    def done(self) -> None:
        """The TX status of the outstanding frame was handled: the MAC is idle."""
        self._busy = None

    def release(self, frame: Frame) -> bool:
        """The MAC refused ``frame`` (REJECTED, oversized): idle again if it held it; True if so."""
        if self._busy is frame:
            self._busy = None
            return True
        return False

    # ------------------------------------------------------------------ the medium connection
    def next_seq(self) -> int:
        """The sequence number of the next message to the medium."""
        self._tx_seq += 1
        return self._tx_seq

    def send_tx(self, frame: Frame) -> tuple[int, int]:
        """Number a TX of ``frame``: ``(seq, cookie)``; its TX_STATUS is expected (``complete``)."""
        self._cookie = cookie = self._cookie + 1
        self._tx_seq = seq = self._tx_seq + 1
        self._pending[cookie] = frame
        return seq, cookie

    def receive(self, seq: int) -> bool:
        """A message numbered ``seq`` came from the medium: True if it is the next one in order.

        Either way it becomes the last received (an out-of-order message is counted and dropped
        by the caller; the stream goes on from it)."""
        ok = seq == self._rx_seq + 1
        self._rx_seq = seq
        return ok

    def complete(self, cookie: int) -> Frame | None:
        """The TX_STATUS of ``cookie``: its frame (no longer pending), or None if unknown."""
        return self._pending.pop(cookie, None)

    def receive_status(self, seq: int, cookie: int) -> tuple[bool, Frame | None]:
        """A TX_STATUS numbered ``seq`` for ``cookie`` came from the medium: ``receive(seq)`` and,
        if in order, ``complete(cookie)``, in one call (the router's hot path: one call less per
        forwarded packet, docs/benchmarks.md). ``(in_order, frame)``: out of order, the cookie
        stays pending and ``frame`` is None; in order, ``frame`` is None if the cookie is unknown."""
        if seq != self._rx_seq + 1:
            self._rx_seq = seq
            return False, None
        self._rx_seq = seq
        return True, self._pending.pop(cookie, None)

    # ------------------------------------------------------------------ the native fast path
    def resume(self, numbers: WireNumbers) -> None:
        """Take back the counters after the fast path used the connection: they only move on."""
        if numbers.rx_seq < self._rx_seq or numbers.tx_seq < self._tx_seq or numbers.cookie < self._cookie:
            raise MacStateError(f"wire numbers went backwards: {self.numbers()} -> {numbers}")
        self._rx_seq, self._tx_seq, self._cookie = numbers.rx_seq, numbers.tx_seq, numbers.cookie

    def adopt(self, cookie: int, frame: Frame) -> None:
        """A TX the fast path sent and whose TX_STATUS has not come back becomes ours: the MAC
        holds ``frame`` and the status, a failure included, reaches the core as usual."""
        if self._busy is not None:
            raise MacStateError("MAC busy: cannot adopt the fast path's TX")
        if cookie in self._pending or cookie > self._cookie:
            raise MacStateError(f"cookie {cookie} already pending or never issued (last {self._cookie})")
        self._pending[cookie] = frame
        self._busy = frame
