"""How far medium and router lag move TCP throughput: the study behind testbed/validity.py's
thresholds (docs/orchestrator.md, "Run validity").

Runs a scenario (default ``topologies/chain5.yaml``: 4 hops, static routes, window 8; and the
same chain without the window cap) under conditions:

- ``base``: nothing added (repeated, for the run-to-run noise);
- ``hogN``: N CPU hogs (``sh -c 'while :; do :; done'``, same niceness as this script) for the
  whole run;
- ``stallD``: the medium stopped with SIGSTOP for D ms every second (SIGCONT after D ms);
- ``rstallD``: the same for the router of the chain's middle station (sta3), a relay.

Each run's summary.json gives throughput, the validity measurements (medium and router lag,
late share, drops, host CPU saturation, PSI cpu pressure); one JSON line per run goes to
``results/validity-study/study.jsonl`` and a table (markdown) is printed at the end.

    nice -n 5 python3 bench/validity/lag_study.py                    # all conditions, both chains
    nice -n 5 python3 bench/validity/lag_study.py --conditions base hog4 stall20 --variants cap
    python3 bench/validity/lag_study.py --table                      # the table of what is stored
    python3 bench/validity/lag_study.py --table --out bench/validity/study-2026-11-24.jsonl

``study-2026-11-24.jsonl`` is the study in docs/orchestrator.md ("Run validity"), kept in git.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testbed.run import Testbed  # noqa: E402
from testbed.validity import (  # noqa: E402
    DEFAULT_THRESHOLDS,
    Measurements,
    Thresholds,
    Validity,
    judge,
    medium_lag,
)

OUT = ROOT / "results" / "validity-study" / "study.jsonl"
VARIANTS: dict[str, dict[str, Any]] = {
    "cap": {},  # chain5 as written: max_window_pkts 8
    "nocap": {"traffic.tcp[0].max_window_pkts": None},
}
DEFAULT_CONDITIONS = ["base", "hog1", "hog2", "hog4", "stall1", "stall5", "stall20", "stall100", "base"]


class Staller(threading.Thread):
    """SIGSTOP ``pid`` for ``stall_ms`` every ``period_s`` until stopped (then SIGCONT)."""

    def __init__(self, pid: int, stall_ms: float, period_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.stall_s, self.period_s = pid, stall_ms / 1000, period_s
        self.halt = threading.Event()
        self.n = 0

    def run(self) -> None:
        while not self.halt.wait(self.period_s - self.stall_s):
            try:
                os.kill(self.pid, signal.SIGSTOP)
                time.sleep(self.stall_s)
            finally:
                os.kill(self.pid, signal.SIGCONT)
            self.n += 1


def run_one(scenario: str, variant: str, condition: str, seed: int) -> dict[str, Any]:
    hogs: list[subprocess.Popen[bytes]] = []
    staller: Staller | None = None
    if condition.startswith("hog"):
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(int(condition[3:]))]
    try:
        with Testbed(
            scenario, seed=seed, experiment="validity-study", overrides=VARIANTS[variant] or None, quiet=True
        ) as tb:
            if condition.startswith("stall"):
                assert tb.medium_proc is not None
                staller = Staller(tb.medium_proc.pid, float(condition[5:]))
            elif condition.startswith("rstall"):
                relay = tb.station(3).router_pid
                assert relay is not None
                staller = Staller(relay, float(condition[6:]))
            if staller is not None:
                staller.start()
            tb.run()
            if staller is not None:
                staller.halt.set()
                staller.join()
        summary = json.loads((tb.dir / "summary.json").read_text())
        medium = json.loads((tb.dir / "medium" / "counters.json").read_text())
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    flow = summary["flows"][0]
    v = summary["validity"]
    return {
        "scenario": scenario,
        "variant": variant,
        "condition": condition,
        "seed": seed,
        "run_id": summary["run_id"],
        "throughput_bps": flow.get("throughput_bps"),
        "tcp_timeouts": flow.get("tcp_timeouts"),
        "valid": summary["valid"],
        **{k: v[k] for k in v if k != "thresholds"},
        "medium_lag": {k: medium["lag"][k] for k in ("count", "p50_ns", "p99_ns", "max_ns", "late")},
    }


def _late_share(row: dict[str, Any], late_ms: float, root: Path) -> float | None:
    """The share of medium events >= ``late_ms`` late (the row's copy of the medium's ``lag``, or
    the run's medium counters)."""
    if "medium_lag" in row:
        counters = {"lag": row["medium_lag"]}
    else:
        try:
            counters = json.loads((root / row["run_id"] / "medium" / "counters.json").read_text())
        except (OSError, ValueError):
            return None
    ml = medium_lag(counters, late_ms)
    return None if ml is None else ml.late_share


def rejudge(row: dict[str, Any], root: Path, t: Thresholds = DEFAULT_THRESHOLDS) -> Validity:
    """The run's verdict under ``t`` (the stored one used the thresholds of its day)."""
    names = {f.name for f in fields(Measurements)}
    m = Measurements(**{k: v for k, v in row.items() if k in names})
    return judge(replace(m, medium_late_share=_late_share(row, t.medium_late_ms, root)), t)


def table(rows: list[dict[str, Any]], root: Path) -> str:
    """One line per run; "vs base" against the mean of the variant's base runs; "valid" under
    the current default thresholds (the reasons abbreviated to the signals' names)."""
    t = DEFAULT_THRESHOLDS
    out = [
        f"| chain | condition | throughput kbit/s | vs base | medium lag p99 / max ms "
        f"| late >= {t.medium_late_ms:g} ms | router lag p99 / max ms | host saturated | PSI cpu some "
        "| valid (today's thresholds) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in dict.fromkeys(r["variant"] for r in rows):
        vr = [r for r in rows if r["variant"] == variant]
        base = [r["throughput_bps"] for r in vr if r["condition"] == "base" and r["throughput_bps"]]
        b = statistics.mean(base) if base else None
        for r in sorted(vr, key=lambda r: r["condition"] != "base"):
            thr = float(r["throughput_bps"] or 0.0)
            v = rejudge(r, root, t)
            late = _late_share(r, t.medium_late_ms, root)
            why = ", ".join(dict.fromkeys(" ".join(x.split()[:3]) for x in v.reasons))
            out.append(
                f"| {variant} | {r['condition']} | {thr / 1e3:.0f} | "
                + (f"{100 * (thr / b - 1):+.1f} %" if b else "-")
                + f" | {r['medium_lag_p99_ms']:.2f} / {r['medium_lag_max_ms']:.1f}"
                + (" | - " if late is None else f" | {100 * late:.3f} %")
                + f" | {r['router_lag_p99_ms']:.1f} / {r['router_lag_max_ms']:.0f}"
                + f" | {100 * (r['host_cpu_busy_share'] or 0):.0f} % | {100 * (r['cpu_pressure_share'] or 0):.0f} %"
                + f" | {'yes' if v.valid else 'no: ' + why} |"
            )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="topologies/chain5.yaml")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--conditions", nargs="+", default=DEFAULT_CONDITIONS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--table", action="store_true", help="only print the table of the stored runs")
    args = ap.parse_args()
    out = Path(args.out)
    if not args.table:
        out.parent.mkdir(parents=True, exist_ok=True)
        for variant in args.variants:
            for cond in args.conditions:
                row = run_one(args.scenario, variant, cond, args.seed)
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{variant} {cond}: {(row['throughput_bps'] or 0) / 1e3:.0f} kbit/s valid={row['valid']} "
                    f"medium p99/max {row['medium_lag_p99_ms']}/{row['medium_lag_max_ms']} ms "
                    f"router p99/max {row['router_lag_p99_ms']}/{row['router_lag_max_ms']} ms "
                    f"PSI {row['cpu_pressure_share']} busy {row['host_cpu_busy_share']}",
                    flush=True,
                )
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    print(table(rows, out.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
