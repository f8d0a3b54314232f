"""A fake medium for the router's own tests: the wire protocol of docs/interfaces.md section 2 over
an ideal graph with fixed delays, in one background thread.

Not a model of anything: a unicast over an up link is received and ACKED after ``delay_s``; over
a missing link it FAILS after ``fail_delay_s`` (cause out of range, or scripted when the link was
taken down with :meth:`set_link`); a broadcast reaches every neighbour and is SENT. A TX while one
is pending is REJECTED, as the real medium does. The real medium (medium/, Rust) replaces this in
the orchestrator's tests.
"""

from __future__ import annotations

import heapq
import itertools
import os
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

from nodes.formats import medium as wire


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.station = 0
        self.flags = 0
        self.tx_seq = 0
        self.rx_seq = 0
        self.pending = False

    def next_seq(self) -> int:
        self.tx_seq += 1
        return self.tx_seq


class FakeMedium:
    def __init__(
        self,
        path: str,
        n_stations: int,
        links: Iterable[tuple[int, int]] | None = None,
        *,
        delay_s: float = 0.0005,
        fail_delay_s: float = 0.01,
        default_tx_power_dbm: float = 15.0,
        rssi_dbm: float = -60.0,
        noise_dbm: float = -95.0,
    ) -> None:
        self.path = path
        self.n_stations = n_stations
        chain = [(i, i + 1) for i in range(1, n_stations)]
        self.links: set[frozenset[int]] = {frozenset(p) for p in (chain if links is None else links)}
        self.scripted_down: set[frozenset[int]] = set()
        self.delay_ns = int(delay_s * 1e9)
        self.fail_delay_ns = int(fail_delay_s * 1e9)
        self.default_tx_power_dbm = default_tx_power_dbm
        self.rssi_dbm = rssi_dbm
        self.noise_dbm = noise_dbm
        self.epoch_ns = time.monotonic_ns()
        self.stations: dict[int, _Conn] = {}
        self.counters: Counter[str] = Counter()
        self.tx_log: list[tuple[int, int, int]] = []  # (src, dst, len)
        self.bye: set[int] = set()
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        self._stop = False
        self._thread: threading.Thread | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(path)
        self.listener.listen(256)

    # ------------------------------------------------------------------ control
    def start(self) -> FakeMedium:
        self._sel.register(self.listener, selectors.EVENT_READ, None)
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._thread = threading.Thread(target=self._run, name="fake-medium", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every connection (routers see the medium go away) and the listener. Idempotent."""
        if self._stop:
            return
        self._stop = True
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(5)
        for c in list(self.stations.values()):
            c.sock.close()
        self.listener.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.epoch_ns

    def call_later(self, delay_ns: int, fn: Callable[[], None]) -> None:
        with self._lock:
            heapq.heappush(self._timers, (time.monotonic_ns() + delay_ns, next(self._seq), fn))
        os.write(self._wake_w, b"x")

    def set_link(self, a: int, b: int, up: bool) -> None:
        key = frozenset((a, b))
        if up:
            self.links.add(key)
            self.scripted_down.discard(key)
        else:
            self.links.discard(key)
            self.scripted_down.add(key)

    def inject_rx(self, src: int, dst: int, payload: bytes, flags: int = 0) -> None:
        """Deliver a frame to ``dst`` as if ``src`` had sent it (benchmarks)."""
        self.call_later(0, lambda: self._send_rx(dst, src, dst, payload, flags))

    def wait_connected(self, stations: Iterable[int], timeout_s: float = 10.0) -> None:
        want = set(stations)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if want <= set(self.stations):
                return
            time.sleep(0.01)
        raise TimeoutError(f"stations {sorted(want - set(self.stations))} did not connect")

    # ------------------------------------------------------------------ internals
    def _run(self) -> None:
        while not self._stop:
            with self._lock:
                timeout = None
                if self._timers:
                    timeout = max(0.0, (self._timers[0][0] - time.monotonic_ns()) / 1e9)
            for key, _ in self._sel.select(timeout):
                if key.fileobj is self.listener:
                    sock, _ = self.listener.accept()
                    self._sel.register(sock, selectors.EVENT_READ, _Conn(sock))
                elif key.data == "wake":
                    os.read(self._wake_r, 4096)
                else:
                    self._on_readable(key.data)
            while True:
                with self._lock:
                    if not self._timers or self._timers[0][0] > time.monotonic_ns():
                        break
                    _, _, fn = heapq.heappop(self._timers)
                fn()

    def _on_readable(self, conn: _Conn) -> None:
        try:
            buf = conn.sock.recv(65536)
        except OSError:
            buf = b""
        if not buf:
            self._sel.unregister(conn.sock)
            if self.stations.get(conn.station) is conn:
                del self.stations[conn.station]
            conn.sock.close()
            return
        try:
            msg = wire.decode(buf)
        except wire.MalformedMessage as exc:
            self.counters["malformed_" + exc.reason] += 1
            return
        if msg.seq != conn.rx_seq + 1:
            self.counters["out_of_order"] += 1
        conn.rx_seq = msg.seq
        if isinstance(msg, wire.Hello):
            conn.station, conn.flags = msg.station_id, msg.flags
            self.stations[msg.station_id] = conn
            self._send(
                conn,
                wire.encode_welcome(
                    conn.next_seq(),
                    self.now_ns(),
                    msg.station_id,
                    self.n_stations,
                    self.epoch_ns,
                    self.default_tx_power_dbm,
                ),
            )
        elif isinstance(msg, wire.Tx):
            self._on_tx(conn, msg)
        elif isinstance(msg, wire.SetPower):
            self.counters["set_power"] += 1
        elif isinstance(msg, wire.Bye):
            self.bye.add(conn.station)
        else:
            self.counters["unexpected_" + type(msg).__name__] += 1

    def _on_tx(self, conn: _Conn, msg: wire.Tx) -> None:
        src = conn.station
        if conn.pending:
            self.counters["rejected"] += 1
            self._send(conn, wire.encode_tx_status(conn.next_seq(), self.now_ns(), msg.cookie, wire.REJECTED))
            return
        conn.pending = True
        self.counters["tx"] += 1
        self.tx_log.append((src, msg.dst, len(msg.payload)))
        t_start = self.now_ns()

        def finish() -> None:
            conn.pending = False
            now = self.now_ns()
            if msg.dst == wire.BROADCAST:
                for nb in self._neighbours(src):
                    self._send_rx(nb, src, wire.BROADCAST, msg.payload, 0)
                status, cause, attempts = wire.SENT, 0, 1
            elif frozenset((src, msg.dst)) in self.links:
                self._send_rx(msg.dst, src, msg.dst, msg.payload, 0)
                for nb in self._neighbours(src):
                    c = self.stations.get(nb)
                    if nb != msg.dst and c is not None and c.flags & wire.HELLO_PROMISCUOUS:
                        self._send_rx(nb, src, msg.dst, msg.payload, wire.RX_OVERHEARD)
                status, cause, attempts = wire.ACKED, 0, 1
            else:
                status, attempts = wire.FAILED, 7
                cause = (
                    wire.CAUSE_SCRIPTED
                    if frozenset((src, msg.dst)) in self.scripted_down
                    else wire.CAUSE_OUT_OF_RANGE
                )
            self.counters[wire.STATUS_NAMES[status]] += 1
            self._send(
                conn,
                wire.encode_tx_status(
                    conn.next_seq(), now, msg.cookie, status, attempts, attempts, cause, t_start, now
                ),
            )

        ok = msg.dst == wire.BROADCAST or frozenset((src, msg.dst)) in self.links
        self.call_later(self.delay_ns if ok else self.fail_delay_ns, finish)

    def _neighbours(self, s: int) -> list[int]:
        return sorted(x for link in self.links if s in link for x in link if x != s)

    def _send_rx(self, to: int, src: int, dst: int, payload: bytes, flags: int) -> None:
        c = self.stations.get(to)
        if c is None:
            return
        self.counters["rx"] += 1
        self._send(
            c,
            wire.encode_rx(
                c.next_seq(),
                self.now_ns(),
                src,
                dst,
                payload,
                flags,
                self.rssi_dbm,
                self.rssi_dbm - self.noise_dbm,
                self.noise_dbm,
            ),
        )

    def _send(self, conn: _Conn, msg: bytes) -> None:
        try:
            conn.sock.send(msg)
        except OSError:
            self.counters["send_errors"] += 1


def main(argv: list[str] | None = None) -> int:
    """``python tests/router/fake_medium.py SOCKET N_STATIONS``: serve a chain until SIGTERM/SIGINT."""
    import argparse
    import signal

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("socket")
    ap.add_argument("n_stations", type=int)
    args = ap.parse_args(argv)
    m = FakeMedium(args.socket, args.n_stations).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    m.stop()
    return 0


if __name__ == "__main__":  # run with PYTHONPATH=<repository root>
    import sys

    sys.exit(main())
