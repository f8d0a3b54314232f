"""The station router daemon: the I/O shell around a sans-I/O protocol core (docs/router.md).

One process per station, inside the station's network namespace. ``run(config)`` creates the TUN
``tun0`` and the radiotap TAP ``staN-wlan0``, connects to the medium (docs/interfaces.md section
2), builds the protocol core, its extensions and the ``NodeRuntime``, and runs one epoll loop
(``nodes.router.loop``):

- medium socket readable -> RX -> ``FromAir`` (+ mirror copy); TX_STATUS -> ``runtime.tx_done``;
- TUN readable -> ``FromLocal``;
- the earliest protocol timer -> one ``loop.call_at_ns`` handle, re-armed after every step;
- mirror ``auto`` (default): mirror frames are written only while a packet socket (tcpdump)
  listens on the TAP or on all interfaces, checked in ``/proc/net/packet`` at most every 200 ms;
- every second: ``out_dir/sta<N>.counters.json`` (atomic), only when something changed, and the
  trace records, both written by a thread off the loop (``nodes.router.files``);
- at start: ``mlockall`` (``nodes.router.memory``), so no page the router runs waits for the disk;
- SIGTERM/SIGINT -> counters, BYE, exit 0; medium gone -> counters, exit ``EXIT_MEDIUM_GONE``.

Nothing runs at import time (the orchestrator forks stations from a zygote that imported this).
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import resource
import signal
import socket
import time
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nodes.core import icmp
from nodes.core.addr import station_ip_bytes
from nodes.core.clock import MonotonicClock
from nodes.core.events import Action, Frame, FromAir, FromLocal, TxStatus
from nodes.core.hoploss import HopLoss
from nodes.core.ifq import InterfaceQueue
from nodes.core.ipip import IPPROTO_IPIP, WiredRoute, decapsulate, encapsulate
from nodes.core.mac import MacState
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.core.runtime import NodeRuntime
from nodes.core.trace import MAGIC as TRACE_MAGIC
from nodes.core.trace import Tracer
from nodes.formats import medium as wire
from nodes.formats.medium import Rx as _Rx
from nodes.formats.medium import TxStatusMsg as _TxStatusMsg
from nodes.formats.radiotap import Mirror
from nodes.router.config import ConfigError, MirrorMode, RouterConfig, TraceMode
from nodes.router.fastpath import FastPath, fastpath_mode, load_library, why_not
from nodes.router.files import FileWriter
from nodes.router.loop import EpollLoop, LagHistogram, TimerHandle
from nodes.router.memory import lock_memory
from topologies.seeding import station_rng

if TYPE_CHECKING:
    from nodes.tcpctl.api import TcpControl
    from nodes.tcpctl.station import ControlServer

EXIT_OK = 0
"""Stopped by SIGTERM/SIGINT."""
EXIT_ERROR = 1
"""Setup failed (devices, medium connection, protocol)."""
EXIT_CONFIG = 2
"""The configuration is invalid."""
EXIT_MEDIUM_GONE = 3
"""The medium closed the connection (normal at the end of a run if the medium stops first)."""

_decode = wire.decode
_TX_PACK = wire.TX_ST.pack
_MAGIC, _VERSION, _TX = wire.MAGIC, wire.VERSION, wire.TX
_ACKED, _SENT, _MAX_PAYLOAD, _NAN = wire.ACKED, wire.SENT, wire.MAX_PAYLOAD, wire.NAN
_RX_OVERHEARD, _TX_NO_RTS = wire.RX_OVERHEARD, wire.TX_NO_RTS
_MSG_DONTWAIT = socket.MSG_DONTWAIT
_write = os.write
_read = os.read
_monotonic_ns = time.monotonic_ns

RX_BATCH = 64
"""TAP frames drained per readiness callback (medium and TUN: one per callback, see the loop)."""
RECV_SIZE = 65536
CAPTURE_CHECK_NS = 200_000_000
"""``auto`` mirror: how old the answer to "is anyone capturing?" may be (docs/router.md)."""
PACKET_SOCKETS = "/proc/net/packet"
_NEVER = 1 << 62


class Router:
    """The station's I/O: medium socket, TUN, TAP mirror, timers, counters. Also the ``NodeIO``."""

    def __init__(self, config: RouterConfig, log: logging.Logger) -> None:
        self.config = config
        self.log = log
        self.station: int = config.station_id
        self.n_stations: int = config.n_stations
        self.out_dir: str = config.out_dir
        self.counters_path = os.path.join(self.out_dir, f"sta{self.station}.counters.json")
        self.counters_interval_s = config.counters_interval_s
        self.lag_probe_interval_s = config.lag_probe_interval_s
        self._probe_rng = random.Random(self.station)  # the probe's jitter, apart from the core's RNG
        self._probe_on = False
        self._probe_seen = -1  # _probe_activity() when the probe last looked
        self.mirror_mode: MirrorMode = config.mirror.mode
        self.freq_mhz, self.rate = config.mirror.freq_mhz, config.mirror.rate_500kbps
        self.mirror_enabled = self.mirror_mode != "off"
        self.fastpath_mode = fastpath_mode(config.fastpath)
        self.fastpath: FastPath | None = None
        self.fastpath_off_reason: str | None = None
        self.wired: WiredRoute | None = config.wired
        self._ipip_ident = 0
        self.trace_mode: TraceMode = config.trace
        self.trace_path = os.path.join(self.out_dir, f"sta{self.station}.trace.bin")
        self.trace_off_reason: str | None = "off in the router config" if self.trace_mode == "off" else None
        self.tracer: Tracer | None = None
        self.files = FileWriter(f"sta{self.station}-files")  # started by ``serve``
        self.memory_lock_error: str | None = "not tried"  # ``lock_memory``'s answer, in the counters
        self.capture_check_interval_ns = CAPTURE_CHECK_NS

        self.io: Counter[str] = Counter()
        self.sock: socket.socket | None = None
        self.tun_fd = -1
        self.tap_fd = -1
        self.tap_name = f"sta{self.station}-wlan0"
        #: the MAC's state: the frame it holds, the medium's sequence numbers, the TX cookies
        #: (shared with the runtime and the native fast path; nodes/core/mac.py)
        self.mac = MacState()
        self.clock = MonotonicClock(0)
        self.mirror: Mirror | None = None
        # what the hot path writes with: ``mirror``, or None while nobody captures (``auto``)
        self._mirror_live: Mirror | None = None
        self._capture_check_at = _NEVER
        self._packet_sockets_fd = -1
        self.packet_sockets_path = PACKET_SOCKETS
        self.tap_ifindex = -1
        self.welcome: wire.Welcome | None = None
        self.ctx: NodeContext | None = None
        self.protocol: RoutingProtocol | None = None
        self.extensions: list[object] = []
        self.tcpctl_control: ControlServer | None = None  # nodes.tcpctl.station, when configured
        self.tcpctl_api: TcpControl | None = None  # its API (the endpoint agent), when configured
        self.rt: NodeRuntime | None = None
        self.loop: EpollLoop | None = None
        self._loop_lag: LagHistogram | None = None  # the serving loop's, kept after it closes
        self._timer: TimerHandle | None = None
        self._timer_at: int | None = None
        self._timers_seen = -1  # rt.timers.changes when _rearm last looked
        self._activity = 0
        self._written_activity = -1
        self._medium_up = False
        # hot-path state (plain attributes: cheaper than Counter lookups)
        self._recv: Any = None
        self._send_medium: Any = None
        self._epoch_ns = 0
        self.n_medium_rx = 0
        self.n_medium_tx = 0
        self.n_tun_rx = 0
        self._debug = log.isEnabledFor(logging.DEBUG)

    # ------------------------------------------------------------------ setup
    def setup_devices(self) -> None:
        from nodes.router.netdev import create_station_devices, lo_up

        self.tun_fd, self.tap_fd, self.tap_name = create_station_devices(
            self.station, station_ip_bytes(self.station)
        )
        self.tap_ifindex = socket.if_nametoindex(self.tap_name)
        lo_up()

    def connect_medium(self) -> None:
        path = self.config.medium_socket
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        timeout = self.config.welcome_timeout_s
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            flags = wire.HELLO_PROMISCUOUS if self.config.promiscuous else 0
            self._send(wire.encode_hello(self._next_seq(), self.station, flags), sock)
            while True:
                buf = sock.recv(RECV_SIZE)
                if not buf:
                    raise ConnectionError("medium closed the connection before WELCOME")
                try:
                    msg = wire.decode(buf)
                except wire.MalformedMessage as exc:
                    self._count_malformed(exc.reason)
                    continue
                self._check_seq(msg.seq)
                if isinstance(msg, wire.Welcome):
                    break
                self._count_malformed("before_welcome")
        except BaseException:
            sock.close()
            raise
        if msg.station_id != self.station:
            sock.close()
            raise ConnectionError(f"medium welcomed station {msg.station_id}, we are {self.station}")
        if self.n_stations and msg.n_stations != self.n_stations:
            self.log.warning("medium has %d stations, config says %d", msg.n_stations, self.n_stations)
        sock.settimeout(None)  # blocking sends; receives use MSG_DONTWAIT from the loop
        self.welcome = msg
        self.attach_medium(sock, msg.epoch_monotonic_ns)

    def attach_medium(self, sock: socket.socket, epoch_monotonic_ns: int) -> None:
        """Use ``sock`` (after WELCOME) as the medium connection; router time = medium time."""
        self.sock = sock
        self._medium_up = True
        self.clock = MonotonicClock(epoch_monotonic_ns)
        self._epoch_ns = epoch_monotonic_ns
        self._recv = sock.recv
        self._send_medium = sock.send

    def build_core(self) -> None:
        from nodes.extensions import attach_extensions
        from nodes.protocols import create_protocol

        seed = self.config.seed
        self.ctx = NodeContext(
            station=self.station,
            n_stations=self.welcome.n_stations if self.welcome else self.n_stations,
            rng=station_rng(seed, self.station),
            ifq=InterfaceQueue(self.config.ifq_len),
            promiscuous=self.config.promiscuous,
            log=self.log,
        )
        self.protocol = create_protocol(self.ctx, self.config.protocol.to_json())
        # the runtime exists before extensions attach, so an endpoint agent (nodes.tcpctl) can be
        # plugged into it first
        self.rt = NodeRuntime(self.ctx, self.protocol, self, self.mac)
        self.rt.hop_loss = HopLoss.for_station(self.config.hop_loss, seed, self.station)
        if self.config.tcpctl is not None:
            from nodes.tcpctl.station import attach

            # ctx.endpoint, rt.endpoint; inside the station's netns
            self.tcpctl_api, self.tcpctl_control = attach(
                self.ctx, self.rt, self.config.tcpctl, self.config.run_id, self
            )
        self.extensions = attach_extensions(
            self.ctx, self.protocol, [e.to_json() for e in self.config.extensions]
        )
        icmp.attach(self.ctx, self.protocol, self.config.icmp)
        if self.trace_mode != "off":
            self.tracer = self.rt.tracer = Tracer()
            with open(self.trace_path, "wb") as f:
                f.write(TRACE_MAGIC)
        default_power = self.welcome.default_tx_power_dbm if self.welcome else math.nan
        if self.mirror_enabled and self.tap_fd >= 0:
            self.mirror = Mirror(self.station, self.freq_mhz, self.rate, default_power)
            if self.mirror_mode == "always":
                self._mirror_live = self.mirror
            else:
                try:
                    self._packet_sockets_fd = os.open(self.packet_sockets_path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError as exc:
                    self.log.warning(
                        "mirror auto: cannot read %s (%s): mirroring always", self.packet_sockets_path, exc
                    )
                    self._mirror_live = self.mirror
                else:
                    self._capture_check_at = 0

    def _check_capture(self, now: int) -> None:
        """``auto`` mirror: is a packet socket bound to the TAP or to every interface running?

        ``/proc/net/packet`` (of the station's netns) lists packet sockets: ``sk RefCnt Type Proto
        Iface R Rmem User Inode``; ``Iface`` is the ifindex (0: all), ``R`` 1 while it receives.
        One ``pread`` of the open file (~2 us), at most every ``capture_check_interval_ns``
        (``CAPTURE_CHECK_NS``; the fast path checks on the same schedule).
        """
        self._capture_check_at = now + self.capture_check_interval_ns
        try:
            data = os.pread(self._packet_sockets_fd, 1 << 20, 0)
        except OSError as exc:
            self.log.warning(
                "mirror auto: cannot read %s (%s): mirroring always", self.packet_sockets_path, exc
            )
            self._capture_check_at = _NEVER
            self._mirror_live = self.mirror
            return
        capturing = False
        ifindexes = (b"0", str(self.tap_ifindex).encode())
        for line in data.splitlines()[1:]:
            f = line.split()
            if len(f) > 5 and f[5] == b"1" and f[4] in ifindexes:
                capturing = True
                break
        live = self.mirror if capturing else None
        if live is not self._mirror_live:
            self.log.info(
                "mirror: %s",
                f"capture on {self.tap_name}, writing frames"
                if capturing
                else "no capture, not writing frames",
            )
            self._mirror_live = live

    # ------------------------------------------------------------------ NodeIO
    def transmit(self, frame: Frame) -> None:
        payload = frame.packet
        n = len(payload)
        if n > _MAX_PAYLOAD:
            self.io["tx_oversized"] += 1
            assert self.loop is not None
            self.loop.call_soon(self._reject_local, frame)
            return
        seq, cookie = self.mac.send_tx(frame)
        power = frame.tx_power_dbm
        send = self._send_medium
        if send is None:
            self.io["medium_send_dropped"] += 1
            return
        next_hop = frame.next_hop
        try:
            # one struct pack and one concatenation: cheaper here than sendmsg() with two iovecs
            send(
                _TX_PACK(
                    _MAGIC,
                    _VERSION,
                    _TX,
                    seq,
                    0,
                    cookie,
                    next_hop,
                    _NAN if power is None else power,
                    frame.retry_limit or 0,
                    _TX_NO_RTS if frame.no_rts else 0,
                    n,
                )
                + payload
            )
        except OSError as exc:
            self.log.warning("medium send failed: %s", exc)
            self._medium_gone()
            return
        self.n_medium_tx += 1
        if self._capture_check_at <= _monotonic_ns():
            self._check_capture(_monotonic_ns())
        mirror = self._mirror_live
        if mirror is not None:
            try:
                _write(self.tap_fd, mirror.tx_frame(next_hop, power, payload))
            except OSError as exc:
                self.io[f"tap_write_error_{exc.errno}"] += 1
        if self._debug:
            self.log.debug("TX cookie=%d to %d len=%d", cookie, next_hop, n)

    def deliver_local(self, packet: bytes) -> None:
        if self.wired is not None and len(packet) > 9 and packet[9] == IPPROTO_IPIP:
            inner = decapsulate(packet)
            if inner is None:
                self.io["ipip_malformed"] += 1
                return
            packet = inner
            self.io["ipip_decapsulated"] += 1
        try:
            _write(self.tun_fd, packet)
            self.io["tun_tx"] += 1
        except OSError as exc:
            self.io[f"tun_write_error_{exc.errno}"] += 1

    def set_power(self, neighbour: int | None, tx_power_dbm: float | None) -> None:
        self._send(
            wire.encode_set_power(
                self._next_seq(),
                wire.ALL_NEIGHBOURS if neighbour is None else neighbour,
                wire.NAN if tx_power_dbm is None else tx_power_dbm,
            )
        )
        self.io["set_power"] += 1

    # ------------------------------------------------------------------ loop callbacks
    def on_medium_readable(self) -> None:
        """The medium socket is readable: handle one message.

        One per callback: the loop's epoll is level-triggered, so if another message is queued the
        next ``epoll_wait`` returns at once (no sleep), which costs less than asking with
        ``poll(0)`` or a ``recv`` failing with EAGAIN after every message (docs/router.md).

        The hot path (an RX, then the TX_STATUS of the forwarded frame, per packet) is written
        out here rather than in a method per message (a Python call costs about as much as
        the rest of the dispatch, docs/benchmarks.md "Cost of the issue-13 seams"): ``decode``
        (``nodes.formats.medium``) returns exactly ``Rx`` / ``TxStatusMsg``, so one ``type() is``
        test picks the branch and one tuple unpack reads the fields (``seq`` included); the
        other messages go to ``_on_other_message``. The loop timer is re-armed only if the
        runtime's timers changed (``_rearm``).
        """
        recv = self._recv
        if recv is None:
            return
        try:
            fp = self.fastpath
            if fp is not None and fp.st.has_msg:  # read by the fast path, left for the core
                buf = fp.take()
            else:
                buf = recv(RECV_SIZE, _MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.log.warning("medium socket error: %s", exc)
            self._medium_gone()
            return
        if not buf:
            self._medium_gone()
            return
        self._activity += 1
        self.n_medium_rx += 1
        rt = self.rt
        assert rt is not None
        try:
            msg = _decode(buf)
        except wire.MalformedMessage as exc:
            self._count_malformed(exc.reason)
            return
        if type(msg) is _Rx:
            seq, _, src, dst, flags, rssi, snr, noise, payload = msg
            if not self.mac.receive(seq):
                self._count_malformed("out_of_order")
                return
            now = _monotonic_ns()
            if self._capture_check_at <= now:
                self._check_capture(now)
            mirror = self._mirror_live
            if mirror is not None:
                try:
                    _write(self.tap_fd, mirror.rx_frame(src, dst, rssi, noise, payload))
                except OSError as exc:
                    self.io[f"tap_write_error_{exc.errno}"] += 1
            rt.handle(FromAir(payload, src, dst, rssi, snr, flags & _RX_OVERHEARD != 0), now - self._epoch_ns)
        elif type(msg) is _TxStatusMsg:
            seq, _, cookie, status, rts, data, cause, _, _ = msg
            in_order, frame = self.mac.receive_status(seq, cookie)
            if not in_order:
                self._count_malformed("out_of_order")
                return
            if frame is None:
                self._count_malformed("unknown_cookie")
                return
            if status == _ACKED or status == _SENT:
                rt.tx_done(TxStatus(frame, True, rts, data, cause), _monotonic_ns() - self._epoch_ns)
            else:
                counters = rt.ctx.counters.mac
                if status == wire.FAILED:
                    counters["failed_cause_" + wire.CAUSE_NAMES.get(cause, str(cause))] += 1
                    rt.tx_done(TxStatus(frame, False, rts, data, cause), _monotonic_ns() - self._epoch_ns)
                elif status == wire.REJECTED:
                    counters["rejected"] += 1
                    self._reject_local(frame)
                    return
                else:
                    self._count_malformed("bad_status")
                    rt.tx_done(TxStatus(frame, False, rts, data, cause), _monotonic_ns() - self._epoch_ns)
        else:
            self._on_other_message(msg)
            return
        if rt.timers.changes != self._timers_seen:  # else _rearm() would find the same time
            self._rearm()

    def _on_other_message(self, msg: wire.Message) -> None:
        """A well-formed message the router does not expect from the medium (only its number counts)."""
        if not self.mac.receive(msg.seq):
            self._count_malformed("out_of_order")
        elif isinstance(msg, wire.Welcome):
            self._count_malformed("duplicate_welcome")
        else:
            self._count_malformed("unexpected_type")

    def _reject_local(self, frame: Frame) -> None:
        """The MAC refused the frame (REJECTED or oversized): count it, free the MAC, carry on."""
        rt = self.rt
        assert rt is not None
        rt.ctx.counters.drops["mac_rejected"] += 1
        self.mac.release(frame)
        rt.pump()
        self._rearm()

    def on_tun_readable(self) -> None:
        """One packet from the kernel (one per callback, like the medium socket)."""
        try:
            packet = _read(self.tun_fd, RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        if not packet:
            return
        rt = self.rt
        assert rt is not None
        self._activity += 1
        self.n_tun_rx += 1
        if self.wired is not None and len(packet) >= 20:
            end = self.wired.tunnel_end(packet)
            if end is not None:
                self._ipip_ident = (self._ipip_ident + 1) & 0xFFFF
                packet = encapsulate(packet, self.station, end, self._ipip_ident)
                self.io["ipip_encapsulated"] += 1
        rt.handle(FromLocal(packet), _monotonic_ns() - self._epoch_ns)
        if rt.timers.changes != self._timers_seen:
            self._rearm()

    def on_tap_readable(self) -> None:
        """Drain and discard what the kernel sends out on the TAP (nothing is expected)."""
        for _ in range(RX_BATCH):
            try:
                if not os.read(self.tap_fd, RECV_SIZE):
                    break
            except (BlockingIOError, InterruptedError):
                break
            self.io["tap_out_discarded"] += 1

    def _on_timer(self) -> None:
        at = self._timer_at
        self._timer = None
        self._timer_at = None
        rt = self.rt
        assert rt is not None
        now = self.clock.now_ns()
        self._activity += 1
        rt.fire_due(now if at is None or now >= at else at)
        self._rearm()

    def _rearm(self) -> None:
        """Keep exactly one loop timer, for the runtime's earliest timer.

        The packet callbacks call it only when ``rt.timers.changes`` moved since the last call:
        the earliest time is a function of the pending timers only, so it cannot have changed
        otherwise (two calls less per message, docs/benchmarks.md). ``_on_timer`` always calls it.
        """
        rt = self.rt
        assert rt is not None
        timers = rt.timers
        self._timers_seen = timers.changes
        t = timers.next_time()
        if t == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = t
        if t is not None:
            assert self.loop is not None
            self._timer = self.loop.call_at_ns(t + self._epoch_ns, self._on_timer)

    def flush_trace(self) -> None:
        """Append the trace records collected since the last flush to ``sta<N>.trace.bin``."""
        tr = self.tracer
        if tr is None or not tr.buf:
            return
        self.files.append(self.trace_path, tr.take())

    def _probe_activity(self) -> int:
        """Grows with every packet the station handles (the fast path's too, synced at each return)."""
        return self._activity + self.n_medium_rx + self.n_tun_rx

    def _lag_probe(self) -> None:
        """Being a timer is its job (its lateness goes into the loop's lag histogram); it re-arms
        itself while packets flow and stops after a quiet period (see ``LAG_PROBE_INTERVAL_S``)."""
        assert self.loop is not None
        act = self._probe_activity()
        if act == self._probe_seen:
            self._probe_on = False
            return
        self._probe_on = True
        self._probe_seen = act
        self.loop.call_later(self.lag_probe_interval_s * (0.5 + self._probe_rng.random()), self._lag_probe)

    def _periodic_counters(self) -> None:
        assert self.loop is not None
        if (
            self.lag_probe_interval_s > 0
            and not self._probe_on
            and self._probe_activity() != self._probe_seen
        ):
            self._lag_probe()
        if self._activity != self._written_activity:
            self.flush_trace()
            self.write_counters()
        self.loop.call_later(self.counters_interval_s, self._periodic_counters)

    # ------------------------------------------------------------------ the native fast path's returns
    def count_medium(self, rx: int, tx: int) -> None:
        """Messages the native fast path received from and sent to the medium since its last return."""
        self.n_medium_rx += rx
        self._activity += rx
        self.n_medium_tx += tx

    def capture_checked(self, next_check_ns: int) -> None:
        """The native fast path looked at ``/proc/net/packet`` (no capture): next look due then."""
        self._capture_check_at = next_check_ns

    # ------------------------------------------------------------------ the control socket's shell
    def now_ns(self) -> int:
        """Router time (the medium's clock)."""
        return self.clock.now_ns()

    def apply_actions(self, actions: list[Action], now_ns: int) -> None:
        """Apply actions from outside the packet path (tcpctl's control socket) and re-arm."""
        rt = self.rt
        assert rt is not None
        rt.apply(actions, now_ns)
        rt.pump()
        self._rearm()

    # ------------------------------------------------------------------ helpers
    def _next_seq(self) -> int:
        return self.mac.next_seq()

    def _send(self, msg: bytes, sock: socket.socket | None = None) -> None:
        s = sock or self.sock
        if s is None:
            self.io["medium_send_dropped"] += 1
            return
        try:
            s.send(msg)
        except OSError as exc:
            self.log.warning("medium send failed: %s", exc)
            self._medium_gone()

    def _check_seq(self, seq: int) -> None:
        if not self.mac.receive(seq):
            self._count_malformed("out_of_order")

    def _count_malformed(self, reason: str) -> None:
        if self.ctx is not None:
            self.ctx.counters.malformed[reason] += 1
        else:
            self.io["malformed_" + reason] += 1
        self.log.debug("malformed medium message: %s", reason)

    def _medium_gone(self) -> None:
        self._medium_up = False
        self.log.info("medium connection closed")
        self._stop_with(EXIT_MEDIUM_GONE)

    def _stop_with(self, code: int) -> None:
        if self.loop is not None:
            self.loop.stop(code)

    def snapshot(self) -> dict[str, Any]:
        rt, ctx = self.rt, self.ctx
        out: dict[str, Any] = {
            "station": self.station,
            "run_id": self.config.run_id,
            "time_ns": self.clock.now_ns(),
            "written_unix_s": time.time(),
            "io": {
                "medium_rx": self.n_medium_rx,
                "medium_tx": self.n_medium_tx,
                "tun_rx": self.n_tun_rx,
                **self.io,
            },
        }
        if self._loop_lag is not None:
            out["loop_lag"] = self._loop_lag.to_dict()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        out["rusage"] = {"utime_s": ru.ru_utime, "stime_s": ru.ru_stime, "majflt": ru.ru_majflt}
        out["memory"] = {"locked": self.memory_lock_error is None, "error": self.memory_lock_error}
        out["files"] = {
            "written": self.files.written,
            "coalesced": self.files.coalesced,
            "errors": self.files.errors,
        }
        if ctx is not None:
            out["counters"] = ctx.counters.to_dict()
            out["counters"]["malformed"].update(
                {k[10:]: v for k, v in self.io.items() if k.startswith("malformed_")}
            )
        if rt is not None and ctx is not None:
            out["runtime"] = {
                "ifq_len": len(ctx.ifq),
                "ifq_capacity": ctx.ifq.capacity,
                "mac_busy": self.mac.busy is not None,
                "timers": len(rt.timers),
                "tx_pending": self.mac.n_pending,
            }
        fp = self.fastpath
        if fp is not None:
            fp.sync()
            out["fastpath"] = {"on": True, **fp.stats()}
        else:
            out["fastpath"] = {"on": False, "reason": self.fastpath_off_reason}
        tr = self.tracer
        if tr is not None:
            out["trace"] = {
                "on": True,
                "file": os.path.basename(self.trace_path),
                "records": tr.records,
                "reasons": tr.reasons,
            }
        else:
            out["trace"] = {"on": False, "reason": self.trace_off_reason}
        if self.protocol is not None:
            try:
                out["protocol"] = {"name": self.protocol.name, "state": self.protocol.state()}
            except Exception as exc:  # a state() bug must not lose the counters
                out["protocol"] = {"name": self.protocol.name, "state_error": repr(exc)}
        exts: dict[str, Any] = {}
        for spec, ext in zip(self.config.extensions, self.extensions, strict=False):
            state = getattr(ext, "state", None)  # an extension's counters (e.g. ATCP's transitions)
            if callable(state):
                try:
                    exts[spec.name] = state()
                except Exception as exc:  # a state() bug must not lose the counters
                    exts[spec.name] = {"state_error": repr(exc)}
        if exts:
            out["extensions"] = exts
        if self.tcpctl_api is not None:  # the endpoint agent's per-connection counters (docs/tcpctl.md)
            try:
                out["endpoint"] = {"conns": self.tcpctl_api.agent.snapshot()}
            except Exception as exc:  # a snapshot bug must not lose the counters
                out["endpoint"] = {"state_error": repr(exc)}
        return out

    def write_counters(self) -> None:
        self._written_activity = self._activity
        data = json.dumps(self.snapshot(), default=str).encode()
        self.files.replace(self.counters_path, data)

    # ------------------------------------------------------------------ main
    def serve(self, loop: EpollLoop | None = None) -> int:
        """Run the event loop until SIGTERM/SIGINT or the medium goes; return the exit code.

        Uses ``loop`` (or ``self.loop`` if set, else a new ``EpollLoop``); a loop it made itself
        is closed on return.
        """
        own = loop is None and self.loop is None
        loop = loop or self.loop or EpollLoop()
        self.loop = loop
        self._loop_lag = loop.lag
        assert self.sock is not None and self.rt is not None
        fds = [self.sock.fileno(), self.tun_fd, self.tap_fd]
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stop_with, EXIT_OK)
            loop.add_reader(fds[0], self.on_medium_readable)
            if self.tun_fd >= 0:
                loop.add_reader(self.tun_fd, self.on_tun_readable)
            if self.tap_fd >= 0:
                loop.add_reader(self.tap_fd, self.on_tap_readable)
            if self.tcpctl_control is not None:
                self.tcpctl_control.start(loop)
            self.rt.start(self.clock.now_ns())
            self._rearm()
            self.start_fastpath(loop)
            self.files.start()
            self.write_counters()
            loop.call_later(self.counters_interval_s, self._periodic_counters)
            self.log.info(
                "station %d up (protocol %s)", self.station, self.protocol.name if self.protocol else "?"
            )
            code = loop.run()
        finally:
            if self.fastpath is not None:
                loop.set_poller(None)
                self.fastpath.sync()
            for fd in fds:
                if fd >= 0:
                    loop.remove_reader(fd)
            loop.remove_signal_handlers()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
                self._timer_at = None
            if own:
                loop.close()
                self.loop = None
            self.files.close()  # pending writes done; from here on they are synchronous
        return code

    def start_fastpath(self, loop: EpollLoop) -> None:
        """Wait with the native fast path if it can run here (nodes/router/fastpath.py)."""
        reason = "fastpath: off" if self.fastpath_mode == "off" else why_not(self)
        if reason is None and self.trace_mode == "on":
            reason = "trace: on (the trace sees only packets that go through Python)"
        lib = None
        if reason is None:
            lib = load_library()
            if lib is None:
                reason = "library not built (make setup builds nodes/router/native/libmtfast.so)"
        self.fastpath_off_reason = reason
        if reason is not None or self.sock is None:
            self.log.info("fast path off: %s", reason)
            return
        self.fastpath = FastPath(lib, self, loop.fileno(), loop.poll)
        if self.tracer is not None and self.rt is not None:  # trace: auto
            self.tracer = self.rt.tracer = None
            self.trace_off_reason = "the native fast path forwards (static routes); set routing.trace: on"
            try:
                os.unlink(self.trace_path)
            except OSError:
                pass
        loop.set_poller(self.fastpath.poll)
        self.log.info("fast path on (static routes, native forwarding)")

    def close(self) -> None:
        if self.sock is not None:
            if self._medium_up:
                try:
                    self.sock.send(wire.encode_bye(self._next_seq()))
                except OSError as exc:
                    self.log.info("BYE not sent: %s", exc)
            # Closing an AF_UNIX socket with unread messages in its receive queue resets the
            # connection: the medium's next recv() fails with ECONNRESET before it reads our BYE.
            # Drain what arrived after the loop stopped first.
            try:
                while self.sock.recv(RECV_SIZE, _MSG_DONTWAIT):
                    pass
            except OSError:
                pass
            self.sock.close()
            self.sock = None
            self._recv = self._send_medium = None
        if self._packet_sockets_fd >= 0:
            os.close(self._packet_sockets_fd)
            self._packet_sockets_fd = -1
        for fd in (self.tun_fd, self.tap_fd):
            if fd >= 0:
                os.close(fd)
        self.tun_fd = self.tap_fd = -1


def run(config: Mapping[str, Any] | RouterConfig) -> int:
    """Run the station router in the current network namespace until stopped; return the exit code.

    ``config`` is a ``RouterConfig`` or its JSON object (what the zygote and ``--config`` pass).
    Call after setns into the station's namespace. Exit codes: ``EXIT_OK`` (SIGTERM/SIGINT),
    ``EXIT_MEDIUM_GONE``, ``EXIT_CONFIG``, ``EXIT_ERROR``.
    """
    try:
        cfg = config if isinstance(config, RouterConfig) else RouterConfig.from_json(config)
    except ConfigError as exc:
        logging.getLogger("nodes.router").error("%s", exc)
        return EXIT_CONFIG
    station = cfg.station_id
    log = logging.getLogger(f"nodes.router.sta{station}")
    if cfg.log_level is not None:
        log.setLevel(cfg.log_level.upper())
    try:
        router = Router(cfg, log)
    except (ConfigError, ValueError, TypeError) as exc:
        log.error("station %d: bad configuration: %s", station, exc)
        return EXIT_CONFIG
    router.memory_lock_error = lock_memory()
    if router.memory_lock_error is not None:
        log.warning("station %d: memory not locked (%s)", station, router.memory_lock_error)
    try:
        os.makedirs(router.out_dir, exist_ok=True)
        router.setup_devices()
        router.connect_medium()
        router.build_core()
    except (ValueError, KeyError, TypeError) as exc:
        log.error("station %d: bad configuration: %s", station, exc)
        router.close()
        return EXIT_CONFIG
    except OSError as exc:
        log.error("station %d: setup failed: %s", station, exc)
        router.close()
        return EXIT_ERROR
    try:
        code = router.serve()
    except Exception:
        log.exception("station %d: router crashed", station)
        code = EXIT_ERROR
    finally:
        router.flush_trace()
        router.write_counters()
        router.close()
    log.info("station %d stopped (exit %d)", station, code)
    return code
