"""Frame receptions evaluated per second per core, in virtual mode with many stations.

A reception is one (transmission, receiver) pair the PHY tracks: a signal start and end at the
receiver, its share of the interference sum and carrier sense, and a decode decision if the
receiver locked on it. 100 stations are placed at random (seeded) in a 700 m x 700 m square;
30 of them are saturated senders of 1000-byte frames to their nearest neighbour (RTS/CTS,
ns2-wavelan). The medium runs single-threaded, so receptions / CPU seconds of the child process
is the per-core rate. Target: >= 50,000 per second.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BINARY, command_line, ensure_binary, write_result  # noqa: E402

TARGET = 50_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stations", type=int, default=100)
    ap.add_argument("--senders", type=int, default=30)
    ap.add_argument("--side", type=float, default=700.0)
    ap.add_argument("--duration", type=float, default=60.0, help="virtual seconds")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ensure_binary()
    rng = random.Random(args.seed)
    pos = [(rng.uniform(0, args.side), rng.uniform(0, args.side)) for _ in range(args.stations)]
    stations = [{"id": i + 1, "trajectory": [[0.0, x, y]]} for i, (x, y) in enumerate(pos)]
    sat = []
    for s in rng.sample(range(args.stations), args.senders):
        d = min((j for j in range(args.stations) if j != s), key=lambda j: math.dist(pos[s], pos[j]))
        sat.append({"src": s + 1, "dst": d + 1, "len": 1000})
    cfg = {
        "run_id": "bench1",
        "seed": args.seed,
        "radio": {"preset": "ns2-wavelan"},
        "stations": stations,
        "saturated": sat,
    }
    with tempfile.TemporaryDirectory() as d:
        cp = Path(d) / "c.json"
        cp.write_text(json.dumps(cfg))
        out = Path(d) / "counters.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [
                str(BINARY),
                "--config",
                str(cp),
                "--virtual",
                "--duration",
                str(args.duration),
                "--counters",
                str(out),
            ],
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        c = json.loads(out.read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rec = c["receptions_evaluated"]
    rate = rec / cpu
    meets = rate >= TARGET
    print(
        f"{rec} receptions ({c['transmissions']} transmissions, {c['events_processed']} events) "
        f"in {cpu:.2f} s CPU for {args.duration:.0f} s virtual: {rate:,.0f} receptions/s per core "
        f"(target >= {TARGET:,}): {'OK' if meets else 'MISSED'}"
    )
    print(f"speed-up over real time: {args.duration / cpu:.1f}x")
    path = write_result(
        "medium_receptions_per_second",
        round(rate),
        "receptions/s per core",
        f">= {TARGET}",
        meets,
        command_line(),
        stations=args.stations,
        senders=args.senders,
        virtual_s=args.duration,
        cpu_s=cpu,
        receptions=rec,
        events=c["events_processed"],
    )
    print(f"wrote {path}")
    return 0 if meets else 1


if __name__ == "__main__":
    sys.exit(main())
