"""The router's native forwarding fast path: the Python side (docs/router.md, "The fast path").

A forwarded data packet costs the relay two wake-ups and five syscalls (RX, TX, TX_STATUS); done
from Python each syscall costs ~1.6 us more than from C and the Python work on top (event objects,
the core, the runtime, the loop) ~30 us. With the fast path the event loop's ``epoll_wait`` is
``fp_wait`` in ``native/fastpath.c``, which forwards what the static core would forward without
looking (an IPv4 packet for another station, TTL > 1, MAC idle, interface queue empty, nobody
capturing on the mirror TAP), and hands everything else back to Python unchanged.

It is one flow cache in front of the sans-I/O core, not a second router: the routes are the static
core's table, every decision it does not take is the core's, the counters it keeps are merged into
the core's (``data_forwarded``, ``mac["tx_ok"]``) and the daemon's (``medium_rx``/``medium_tx``)
at every return, and a TX of its own still outstanding when Python gets control is adopted
(``MacState.adopt``: its cookie pending, the MAC busy with its frame), so the TX_STATUS, a failure
included, reaches the core as it would have without the fast path. The medium's sequence numbers
and cookies are the router's ``MacState`` (nodes/core/mac.py): copied into the shared structure
before each wait and taken back after it (``MacState.resume``, which refuses numbers that go
backwards).

On only when the library is built (``make setup``), the protocol is ``static`` and no extension is
attached; ``fastpath: off`` in the router config (or ``MANET_FASTPATH=off``) turns it off.
"""

from __future__ import annotations

import ctypes
import math
import os
import select
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodes.core.addr import MAX_STATIONS, station_ip_int
from nodes.core.events import Frame
from nodes.core.mac import WireNumbers
from nodes.formats import medium as wire
from nodes.router.config import FastpathMode

if TYPE_CHECKING:
    from nodes.router.main import Router

ABI = 2
"""``fp_abi()`` of the library this module speaks to."""
LIBRARY = Path(__file__).resolve().parent / "native" / "libmtfast.so"
ENV_LIBRARY = "MANET_FASTPATH_LIB"
ENV_MODE = "MANET_FASTPATH"
MAX_EVENTS = 16
SLOT_PREFIX = 16
"""Bytes before the TX message in a queue slot: enqueue time (int64 ns), payload length (uint32)."""
_SLOT_PREFIX = struct.Struct("<qI")
_NEVER = 1 << 62


class _FpState(ctypes.Structure):
    """``struct fp_state`` in native/fastpath.c, field for field."""

    _fields_ = [
        ("abi", ctypes.c_int32),
        ("ep_fd", ctypes.c_int32),
        ("medium_fd", ctypes.c_int32),
        ("station", ctypes.c_uint32),
        ("first_ip", ctypes.c_uint32),
        ("last_ip", ctypes.c_uint32),
        ("magic", ctypes.c_uint16),
        ("version", ctypes.c_uint8),
        ("t_rx", ctypes.c_uint8),
        ("t_tx", ctypes.c_uint8),
        ("t_tx_status", ctypes.c_uint8),
        ("st_acked", ctypes.c_uint8),
        ("st_sent", ctypes.c_uint8),
        ("rx_overheard", ctypes.c_uint8),
        ("pad0", ctypes.c_uint8 * 3),
        ("max_payload", ctypes.c_uint32),
        ("msg_cap", ctypes.c_uint32),
        ("packet_sockets_fd", ctypes.c_int32),
        ("tap_ifindex", ctypes.c_int32),
        ("capture_check_interval_ns", ctypes.c_int64),
        ("routes_len", ctypes.c_uint32),
        ("pad1", ctypes.c_uint32),
        ("routes", ctypes.POINTER(ctypes.c_uint16)),
        ("msg", ctypes.c_void_p),
        ("tx", ctypes.c_void_p),
        ("q_buf", ctypes.c_void_p),
        ("q_cap", ctypes.c_uint32),
        ("slot_size", ctypes.c_uint32),
        ("enabled", ctypes.c_int32),
        ("py_busy", ctypes.c_int32),
        ("rx_seq", ctypes.c_uint32),
        ("tx_seq", ctypes.c_uint32),
        ("cookie", ctypes.c_uint64),
        ("native_cookie", ctypes.c_uint64),
        ("capture_check_at", ctypes.c_int64),
        ("has_msg", ctypes.c_int32),
        ("msg_len", ctypes.c_int32),
        ("q_head", ctypes.c_uint32),
        ("q_count", ctypes.c_uint32),
        ("n_forwarded", ctypes.c_uint64),
        ("n_tx_ok", ctypes.c_uint64),
        ("n_medium_rx", ctypes.c_uint64),
        ("n_medium_tx", ctypes.c_uint64),
        ("n_wakeups", ctypes.c_uint64),
        ("n_capture_checks", ctypes.c_uint64),
        ("n_queued", ctypes.c_uint64),
    ]


_lib_cache: dict[str, Any] = {}


def load_library(path: str | os.PathLike[str] | None = None) -> Any:
    """The fast-path library (``ctypes.CDLL``), or None when it is not built or does not match.

    Raises nothing: without the library the router runs the same forwarding in Python.
    """
    p = str(path or os.environ.get(ENV_LIBRARY) or LIBRARY)
    if p in _lib_cache:
        return _lib_cache[p]
    lib: Any = None
    try:
        cand = ctypes.CDLL(p)
        cand.fp_abi.restype = ctypes.c_int
        cand.fp_sizes.restype = ctypes.c_int
        cand.fp_sizes.argtypes = [ctypes.c_int]
        sizes = [cand.fp_sizes(i) for i in range(4)]
        if cand.fp_abi() == ABI and sizes == [
            wire.RX_ST.size,
            wire.TX_ST.size,
            wire.TX_STATUS_ST.size,
            ctypes.sizeof(_FpState),
        ]:
            cand.fp_wait.restype = ctypes.c_int
            cand.fp_wait.argtypes = [
                ctypes.POINTER(_FpState),
                ctypes.c_int64,
                ctypes.POINTER(ctypes.c_int32),
                ctypes.POINTER(ctypes.c_uint32),
                ctypes.c_int,
            ]
            lib = cand
    except OSError:
        lib = None
    _lib_cache[p] = lib
    return lib


def fastpath_mode(configured: FastpathMode) -> FastpathMode:
    """The router config's ``fastpath`` (nodes/router/config.py), unless the environment variable
    ``MANET_FASTPATH=off`` turns the fast path off."""
    if os.environ.get(ENV_MODE, "").lower() in ("off", "0", "false", "no"):
        return "off"
    return configured


def why_not(router: Router) -> str | None:
    """Why the fast path cannot run for this station (None: it can)."""
    proto = router.protocol
    if proto is None or proto.name != "static":
        return f"protocol {proto.name if proto else None!r} (only static routing has a fast path)"
    if router.extensions:
        return "extensions attached"
    if router.wired is not None:
        return "wired gateway (IP-in-IP in the Python path)"
    if router.config.hop_loss > 0:
        return "hop_loss (drawn in the Python path)"
    if router.mirror_mode == "always":
        return "mirror: always"
    routes = getattr(proto, "routes", None)
    if not isinstance(routes, dict) or any(not 0 < int(v) <= MAX_STATIONS for v in routes.values()):
        return "routes not a station table"
    return None


class FastPath:
    """The event loop's poller while the fast path is on: ``poll(timeout_s)`` like
    ``select.epoll.poll``; medium messages it did not take are handed over by ``take()``."""

    def __init__(self, lib: Any, router: Router, ep_fd: int, fallback_poll: Any) -> None:
        assert router.sock is not None and router.protocol is not None and router.rt is not None
        self.lib = lib
        self.router = router
        self.rt = router.rt
        self.mac = router.mac
        self.counters = router.rt.ctx.counters
        self._fallback_poll = fallback_poll
        routes: dict[int, int] = dict(router.protocol.routes)  # type: ignore[attr-defined]
        n = max([0, *routes]) + 1
        self._routes = (ctypes.c_uint16 * n)()
        for dst, nh in routes.items():
            if 0 <= dst < n:
                self._routes[dst] = nh
        cap = wire.TX_ST.size + wire.MAX_PAYLOAD + 65536
        self._msg = ctypes.create_string_buffer(cap)
        self._tx = ctypes.create_string_buffer(cap)
        st = self.st = _FpState()
        st.abi = ABI
        st.ep_fd = ep_fd
        st.medium_fd = router.sock.fileno()
        st.station = router.station
        st.first_ip, st.last_ip = station_ip_int(1), station_ip_int(MAX_STATIONS)
        st.magic, st.version = wire.MAGIC, wire.VERSION
        st.t_rx, st.t_tx, st.t_tx_status = wire.RX, wire.TX, wire.TX_STATUS
        st.st_acked, st.st_sent, st.rx_overheard = wire.ACKED, wire.SENT, wire.RX_OVERHEARD
        st.max_payload = wire.MAX_PAYLOAD
        st.msg_cap = cap
        st.packet_sockets_fd = router._packet_sockets_fd
        st.tap_ifindex = router.tap_ifindex
        st.capture_check_interval_ns = router.capture_check_interval_ns
        st.routes_len = n
        st.routes = self._routes
        st.msg = ctypes.addressof(self._msg)
        st.tx = ctypes.addressof(self._tx)
        # the fast path's own queue: as many frames as the interface queue holds
        self._slot_size = SLOT_PREFIX + wire.TX_ST.size + wire.MAX_PAYLOAD
        st.q_cap = router.rt.ctx.ifq.capacity
        st.slot_size = self._slot_size
        self._q = ctypes.create_string_buffer(st.q_cap * self._slot_size)
        st.q_buf = ctypes.addressof(self._q)
        st.enabled = 1
        self._st_ref = ctypes.byref(st)
        self._fds = (ctypes.c_int32 * MAX_EVENTS)()
        self._evs = (ctypes.c_uint32 * MAX_EVENTS)()
        self._wait = lib.fp_wait
        self._seen = [0, 0, 0, 0]  # forwarded, tx_ok, medium_rx, medium_tx
        self._medium_fd = st.medium_fd
        self.calls = 0

    # ------------------------------------------------------------------ the loop's poller
    def poll(self, timeout: float = -1.0) -> list[tuple[int, int]]:
        r = self.router
        st = self.st
        if st.has_msg:  # not taken yet (the loop stopped mid-batch): hand it over first
            return [(self._medium_fd, select.EPOLLIN)]
        if r._mirror_live is not None:  # a capture is running: every frame goes through Python
            return self._fallback_poll(timeout)  # type: ignore[no-any-return]
        mac = self.mac
        st.py_busy = 1 if mac.busy is not None or len(self.rt.ctx.ifq) else 0
        st.rx_seq, st.tx_seq, st.cookie = mac.rx_seq, mac.tx_seq, mac.cookie
        st.capture_check_at = min(r._capture_check_at, _NEVER)
        deadline = -1 if timeout < 0 else time.monotonic_ns() + math.ceil(timeout * 1e9)
        self.calls += 1
        n = self._wait(self._st_ref, deadline, self._fds, self._evs, MAX_EVENTS)
        mac.resume(WireNumbers(st.rx_seq, st.tx_seq, st.cookie))
        r.capture_checked(st.capture_check_at)
        self.sync()
        if st.native_cookie or st.q_count:
            self._adopt()
        if n < 0:
            if n == -4:  # EINTR: a signal; the loop runs its handlers
                return []
            raise OSError(-n, os.strerror(-n))
        fds, evs = self._fds, self._evs
        return [(fds[i], evs[i]) for i in range(n)]

    def sync(self) -> None:
        """Add what the fast path counted since the last call to the core's and daemon's counters."""
        st, seen = self.st, self._seen
        fwd, ok, mrx, mtx = st.n_forwarded, st.n_tx_ok, st.n_medium_rx, st.n_medium_tx
        if fwd != seen[0] or ok != seen[1] or mrx != seen[2] or mtx != seen[3]:
            c = self.counters
            c.data_forwarded += fwd - seen[0]
            if ok != seen[1]:
                c.mac["tx_ok"] += ok - seen[1]
            self.router.count_medium(mrx - seen[2], mtx - seen[3])
            self._seen = [fwd, ok, mrx, mtx]

    def _adopt(self) -> None:
        """The fast path's TX still outstanding becomes the runtime's (``MacState.adopt``)
        and its queued frames go to the interface queue in order, so that from here on the core
        and the runtime see the MAC and the queue as they would have without the fast path."""
        st = self.st
        size = wire.TX_ST.size
        if st.native_cookie:
            tx = wire.TX_ST.unpack_from(self._tx, 0)
            frame = Frame(ctypes.string_at(st.tx + size, tx[-1]), int(tx[6]))
            self.mac.adopt(int(st.native_cookie), frame)
            st.native_cookie = 0
        if st.q_count:
            ifq = self.rt.ctx.ifq
            epoch = self.router._epoch_ns
            base, cap, slot = st.q_buf, st.q_cap, self._slot_size
            for i in range(st.q_count):
                off = ((st.q_head + i) % cap) * slot
                enq, plen = _SLOT_PREFIX.unpack_from(self._q, off)
                tx = wire.TX_ST.unpack_from(self._q, off + SLOT_PREFIX)
                frame = Frame(ctypes.string_at(base + off + SLOT_PREFIX + size, plen), int(tx[6]))
                frame.enq_ns = enq - epoch
                victim = ifq.enqueue(frame)
                assert victim is None  # the queue was empty when the fast path started queueing
            st.q_head = st.q_count = 0

    def take(self) -> bytes:
        """The medium message ``fp_wait`` read but did not take (b"" at EOF; OSError on error)."""
        st = self.st
        st.has_msg = 0
        n = st.msg_len
        if n < 0:
            raise OSError(-n, os.strerror(-n))
        return ctypes.string_at(st.msg, n) if n else b""

    def stats(self) -> dict[str, int]:
        st = self.st
        return {
            "forwarded": st.n_forwarded,
            "tx_ok": st.n_tx_ok,
            "medium_rx": st.n_medium_rx,
            "medium_tx": st.n_medium_tx,
            "wakeups": st.n_wakeups,
            "returns": self.calls,
            "capture_checks": st.n_capture_checks,
            "queued": st.n_queued,
        }
