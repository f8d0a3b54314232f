"""Bring-up and teardown time of 10, 50 and 100 stations, and the idle CPU of 100 stations.

Issue 2 targets: 50 stations up in <= 10 s and torn down in <= 5 s; 100 idle stations (routers +
medium) use < 5% of one core. For 10 and 100 stations the time targets are the 50-station ones
scaled linearly (<= 10 s / <= 20 s up, <= 5 s / <= 10 s down), shown for information.

Bring-up is ``Testbed.start()``: namespaces, medium, zygote, one router per station, until every
router is connected to the medium. Teardown is ``Testbed.stop()``: routers, zygote, medium,
namespaces, state directory. Idle CPU is the CPU time (``clock_getcpuclockid``: exact, not the
tick-sampled utime + stime of ``/proc/<pid>/stat``) of the routers, the zygote and the medium over
10 s with no traffic, starting 1 s after bring-up, as a percentage of one core.

Each measurement is written to ``results/bench/<name>.json`` (name, value, unit, target,
meets_target, command); ``--quick`` measures 10 stations only (the CI smoke configuration).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testbed import netns  # noqa: E402
from testbed.procs import cpu_time_ns  # noqa: E402
from testbed.run import Testbed  # noqa: E402

COMMAND = ".venv/bin/python bench/foundation/bringup.py"
SETTLE_S = 1.0
"""Seconds between bring-up and the start of the idle window."""


def scenario_file(n: int, directory: Path) -> Path:
    """An idle grid of ``n`` static stations, 200 m apart, static routes, no traffic."""
    cols = 10
    rows = (n + cols - 1) // cols
    path = directory / f"idle{n}.yaml"
    path.write_text(
        f"name: bench-idle{n}\n"
        "duration_s: 600\n"
        f"field: {{x_m: {cols * 200 + 100}, y_m: {rows * 200 + 100}}}\n"
        f"stations: {{count: {n}, placement: {{kind: grid, cols: {cols}, spacing_m: 200, origin: [50, 50]}}}}\n"
        "mobility: {model: static}\n"
        "routing: {protocol: static, routes: auto}\n"
    )
    return path


def cpu_ns(pid: int) -> int:
    """Exact CPU time of ``pid`` so far (0 once it is gone): testbed.procs.cpu_time_ns."""
    return cpu_time_ns(pid) or 0


def record(out: Path, name: str, value: float, unit: str, target: str, meets: bool) -> dict[str, object]:
    row = {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "target": target,
        "meets_target": meets,
        "command": COMMAND,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(row, indent=2) + "\n")
    return row


def measure(n: int, idle_s: float, tmp: Path, out: Path) -> list[dict[str, object]]:
    rows = []
    up_target, down_target = 10.0 * max(1.0, n / 50), 5.0 * max(1.0, n / 50)
    tb = Testbed(scenario_file(n, tmp), experiment="bench", out_root=tmp / "results", quiet=True)
    t = time.monotonic()
    try:
        tb.start()
        up = time.monotonic() - t
        if idle_s > 0:
            pids = [st.router_pid for st in tb.stations.values() if st.router_pid]
            pids += [p.pid for p in (tb.medium_proc, tb.zygote) if p is not None]
            time.sleep(SETTLE_S)  # what a station does just after it is up is start-up, not idle
            t0, c0 = time.monotonic(), sum(cpu_ns(p) for p in pids)
            time.sleep(idle_s)
            t1, c1 = time.monotonic(), sum(cpu_ns(p) for p in pids)
            pct = 100.0 * (c1 - c0) / 1e9 / (t1 - t0)
            rows.append(record(out, f"foundation_idle_cpu_{n}", pct, "% of one core", "< 5", pct < 5.0))
    finally:
        t = time.monotonic()
        tb.stop()
        down = time.monotonic() - t
    assert not netns.list_ours(tb.run_id), "teardown left namespaces"
    rows.insert(0, record(out, f"foundation_bringup_{n}", up, "s", f"<= {up_target:g}", up <= up_target))
    rows.insert(
        1, record(out, f"foundation_teardown_{n}", down, "s", f"<= {down_target:g}", down <= down_target)
    )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,50,100")
    ap.add_argument("--idle-s", type=float, default=10.0, help="idle CPU window for the largest size")
    ap.add_argument("--quick", action="store_true", help="10 stations, 2 s idle window (smoke test)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench"))
    args = ap.parse_args()
    sizes = [10] if args.quick else [int(s) for s in args.sizes.split(",")]
    idle_s = 2.0 if args.quick else args.idle_s
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-foundation-") as tmp:
        for n in sizes:
            rows += measure(n, idle_s if n == max(sizes) else 0.0, Path(tmp), Path(args.out))
    from rich.console import Console
    from rich.table import Table

    table = Table(title="foundation: bring-up, teardown, idle CPU")
    for col in ("benchmark", "value", "unit", "target", "meets"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r["name"]),
            f"{r['value']:.3g}",
            str(r["unit"]),
            str(r["target"]),
            "yes" if r["meets_target"] else "NO",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
