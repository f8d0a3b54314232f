"""Router start-up CPU per station and idle CPU of N idle stations (zygote + fork, as the
orchestrator does). Each station is a fork of this process (which has imported nodes.router and
the static protocol), unshares its own network namespace (nothing outside it is touched), and
runs ``nodes.router.run(config)`` against the fake medium (tests/router/fake_medium.py, in a
separate process). CPU times are exact (``clock_getcpuclockid``, testbed.procs.cpu_time_ns).
Start-up CPU is read 1 s after every station's first counters file exists; idle CPU is the
stations' CPU over ``--idle-s`` seconds after that. Root only.
Writes results/bench/router_startup_cpu.json and results/bench/router_idle_cpu.json.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import nodes.protocols.static  # noqa: E402,F401  (the zygote imports what stations run)
from nodes.router import run  # noqa: E402
from testbed.procs import cpu_time_ns  # noqa: E402

CLONE_NEWNET = 0x40000000
SETTLE_S = 1.0
"""Seconds between the last station's first counters file and the start of the idle window."""


def cpu_s(pid: int) -> float:
    """The process's exact CPU time so far (testbed.procs.cpu_time_ns; 0 once it is gone)."""
    return (cpu_time_ns(pid) or 0) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--out-dir", default=str(ROOT / "results/bench"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root")
        return 1
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory(prefix="mtt-bench-") as tmp:
        sock = f"{tmp}/medium.sock"
        medium = subprocess.Popen([sys.executable, str(ROOT / "tests/router/fake_medium.py"), sock, str(args.n)],
                                  stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert medium.stdout is not None and medium.stdout.readline().strip() == "ready"
        pids: list[int] = []
        t0 = time.monotonic()
        try:
            for s in range(1, args.n + 1):
                cfg = {"run_id": "bench", "station_id": s, "n_stations": args.n, "seed": 1, "medium_socket": sock,
                       "protocol": {"name": "static", "params": {}, "routes": {}}, "extensions": [],
                       "ifq_len": 50, "promiscuous": False, "out_dir": f"{tmp}/routers"}
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        if libc.unshare(CLONE_NEWNET) == 0:
                            code = run(cfg)
                    finally:
                        os._exit(code)
                pids.append(pid)
            for s in range(1, args.n + 1):
                path = Path(f"{tmp}/routers/sta{s}.counters.json")
                while not path.exists():
                    time.sleep(0.01)
            up_s = time.monotonic() - t0
            # the counters file is written just before the loop starts; what a station still does
            # after it (first log lines, the first timers) is start-up, not idle: let it settle
            time.sleep(SETTLE_S)
            start_cpu = [cpu_s(p) for p in pids]
            time.sleep(args.idle_s)
            idle_cpu = sum(cpu_s(p) for p in pids) - sum(start_cpu)
        finally:
            for p in pids:
                os.kill(p, signal.SIGTERM)
            codes = [os.waitpid(p, 0)[1] for p in pids]
            medium.terminate()
            medium.wait()
    startup_ms = 1000 * sum(start_cpu) / args.n
    idle_pct = 100 * idle_cpu / args.idle_s
    cmd = ".venv/bin/python bench/router/startup_idle.py " + " ".join(sys.argv[1:])
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "router_startup_cpu.json").write_text(json.dumps({
        "name": "router_startup_cpu", "value": round(startup_ms, 1), "unit": "ms CPU/station",
        "target": 30.0, "meets_target": startup_ms <= 30.0, "command": cmd,
        "details": {"stations": args.n, "all_up_wall_s": round(up_s, 2), "cpu_clock": "clock_getcpuclockid", "settle_s": SETTLE_S},
    }, indent=2) + "\n")
    (out / "router_idle_cpu.json").write_text(json.dumps({
        "name": "router_idle_cpu", "value": round(idle_pct, 2), "unit": "% of one core",
        "target": 5.0, "meets_target": idle_pct < 5.0, "command": cmd,
        "details": {"stations": args.n, "idle_s": args.idle_s},
    }, indent=2) + "\n")
    print(f"{args.n} stations up in {up_s:.2f} s wall; start-up CPU {startup_ms:.1f} ms/station "
          f"(forked from a zygote); idle CPU {idle_pct:.2f}% of one core over {args.idle_s} s; "
          f"exit statuses {sorted(set(codes))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
