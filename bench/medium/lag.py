"""Scheduling lag of the real-time medium with 100 stations and 10 TCP-like flows.

Lag = actual minus intended (virtual) time of every event the medium processes, measured by the
medium itself against CLOCK_MONOTONIC and reported in counters.json (p50/p99/max). The load
generator connects 100 fake routers (SOCK_SEQPACKET, one per station of a 10 x 10 grid with
150 m spacing, ns2-wavelan), runs 10 TCP-like flows between grid neighbours (1000-byte
segments, a window of 8 segments, one 40-byte ACK per 2 segments, as delayed ACKs do) and a
60-byte broadcast HELLO per station per second (jittered), like a routing protocol. Each router
holds one frame in the MAC at a time and queues the rest, as the station routers do.
Target: p99 < 1 ms.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "medium" / "py"))
import mmclient as mm  # noqa: E402
from common import BINARY, command_line, ensure_binary, write_result  # noqa: E402

TARGET_NS = 1_000_000
SEGMENT = 1000
ACK_LEN = 40
WINDOW = 8
HELLO_LEN = 60


class Station:
    def __init__(self, router: mm.Router) -> None:
        self.r = router
        self.queue: deque[tuple[int, bytes]] = deque()
        self.busy = False
        self.cookie = 0

    def enqueue(self, dst: int, payload: bytes) -> None:
        self.queue.append((dst, payload))
        self.pump()

    def pump(self) -> None:
        if not self.busy and self.queue:
            dst, payload = self.queue.popleft()
            self.cookie += 1
            self.busy = True
            self.r.send_tx(self.cookie, dst, payload)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="wall seconds of load")
    ap.add_argument("--side", type=int, default=10, help="grid side (side^2 stations)")
    ap.add_argument("--flows", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--rt-priority", type=int, default=None, help="run the medium SCHED_FIFO at this priority"
    )
    args = ap.parse_args()
    ensure_binary()
    rng = random.Random(args.seed)
    n = args.side * args.side
    with tempfile.TemporaryDirectory() as d:
        dd = Path(d)
        cfg = {
            "run_id": "bench2",
            "seed": args.seed,
            "socket": str(dd / "medium.sock"),
            "control_socket": str(dd / "control.sock"),
            "out_dir": str(dd / "out"),
            "radio": {"preset": "ns2-wavelan"},
            "stations": [
                {"id": i + 1, "trajectory": [[0.0, 150.0 * (i % args.side), 150.0 * (i // args.side)]]}
                for i in range(n)
            ],
        }
        (dd / "m.json").write_text(json.dumps(cfg))
        cmd = [str(BINARY), "--config", str(dd / "m.json")]
        if args.rt_priority is not None:
            cmd += ["--rt-priority", str(args.rt_priority)]
        proc = subprocess.Popen(cmd)
        t0 = time.monotonic()
        while not os.path.exists(cfg["socket"]):
            if time.monotonic() - t0 > 10:
                raise SystemExit("medium did not start")
            time.sleep(0.01)
        sel = selectors.DefaultSelector()
        stations: dict[int, Station] = {}
        for i in range(1, n + 1):
            st = Station(mm.Router(cfg["socket"], i))
            st.r.sock.setblocking(False)
            stations[i] = st
            sel.register(st.r.sock, selectors.EVENT_READ, i)
        # Flows: station (row r, col 0) -> (row r, col 1), spread over the rows and columns.
        flows = []
        for k in range(args.flows):
            row = k % args.side
            col = (2 * (k // args.side)) % (args.side - 1)
            src = row * args.side + col + 1
            flows.append((src, src + 1))
        sent = {f: 0 for f in flows}
        acked = {f: 0 for f in flows}
        recv = {f: 0 for f in flows}
        by_dst = {dst: (src, dst) for src, dst in flows}
        by_src = {src: (src, dst) for src, dst in flows}
        for f in flows:
            for _ in range(WINDOW):
                stations[f[0]].enqueue(f[1], b"D" * SEGMENT)
                sent[f] += 1
        timers: list[tuple[float, int]] = [(time.monotonic() + rng.uniform(0, 1), i) for i in range(1, n + 1)]
        heapq.heapify(timers)
        end = time.monotonic() + args.duration
        while time.monotonic() < end:
            timeout = max(0.0, min(timers[0][0], end) - time.monotonic())
            for key, _ in sel.select(timeout):
                st = stations[key.data]
                while True:
                    try:
                        b = st.r.sock.recv(65536)
                    except BlockingIOError:
                        break
                    m = mm.parse(b)
                    if isinstance(m, mm.TxStatus):
                        st.busy = False
                        st.pump()
                    elif isinstance(m, mm.Rx) and m.dst == key.data:
                        if m.payload[:1] == b"D" and key.data in by_dst:
                            f = by_dst[key.data]
                            recv[f] += 1
                            if recv[f] % 2 == 0:
                                st.enqueue(f[0], b"A" * ACK_LEN)
                        elif m.payload[:1] == b"A" and key.data in by_src:
                            f = by_src[key.data]
                            acked[f] += 2
                            while sent[f] - acked[f] < WINDOW:
                                st.enqueue(f[1], b"D" * SEGMENT)
                                sent[f] += 1
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                _, i = heapq.heappop(timers)
                stations[i].enqueue(mm.BROADCAST, b"H" * HELLO_LEN)
                heapq.heappush(timers, (now + 1.0 + rng.uniform(-0.1, 0.1), i))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        c = json.loads((dd / "out" / "counters.json").read_text())
    lag = c["lag"]
    goodput = sum(recv.values()) * SEGMENT * 8 / args.duration
    meets = lag["p99_ns"] < TARGET_NS
    print(
        f"{n} stations, {len(flows)} flows: {lag['count']} events, lag p50 {lag['p50_ns'] / 1e3:.0f} us, "
        f"p99 {lag['p99_ns'] / 1e3:.0f} us, max {lag['max_ns'] / 1e3:.0f} us "
        f"(target p99 < {TARGET_NS / 1e3:.0f} us): {'OK' if meets else 'MISSED'}"
    )
    print(
        f"flow goodput total {goodput / 1e6:.3f} Mbit/s, frames acked {c['frames']['acked']}, "
        f"broadcasts {c['frames']['sent_broadcast']}, failed {c['frames']['failed']}"
    )
    path = write_result(
        "medium_lag_p99",
        lag["p99_ns"] / 1e3,
        "us",
        "< 1000 us",
        meets,
        command_line(),
        lag_ns=lag,
        stations=n,
        flows=len(flows),
        wall_s=args.duration,
        flow_goodput_bps=goodput,
        frames=c["frames"],
    )
    print(f"wrote {path}")
    return 0 if meets else 1


if __name__ == "__main__":
    sys.exit(main())
