"""Benchmark ``sweep_capacity``: valid runs per hour at ``--parallel auto`` against one at a time.

Issue 10, item 2: "for a 15-20-station mobile scenario: runs per hour at auto against one at a
time, and an equivalence check: the same 10 seeds at K=1 and at K=auto give the same throughput
and timeout distributions within noise (state the test you use). Target: at least 4x the serial
rate on this 2-core machine with the equivalence holding."

The scenario is ``bench/sweep/capacity.yaml`` (Ghanem's 20-station field, DSR, random waypoint up to
10 m/s, 1 TCP + 10 CBR flows, 45 s). Both halves go through the sweep runner exactly as a user's
sweep does (validity, re-runs of invalid runs), each into a fresh rows folder under
``results/bench/sweep_capacity/``:

1. serial: seeds 1..``--seeds`` at ``--parallel 1``;
2. auto: seeds 1..``--auto-seeds`` at ``--parallel auto`` (more runs than the serial half, so that
   the rate is not dominated by the last wave).

Rate = valid runs / wall time of the half. Equivalence, on the seeds both halves ran: the Wilcoxon
signed-rank test of the per-seed differences (paired: a seed fixes the placement, mobility and
traffic) for throughput and for TCP timeouts, two-sided, "holds" when p > 0.05 for both; reported
beside it the paired change of mean throughput with Fieller's 95 % interval, and the two-sample
Kolmogorov-Smirnov p-values of the distributions.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.medium.common import command_line, write_result  # noqa: E402
from experiments.capacity import (  # noqa: E402
    DEFAULT_MODEL,
    AutoParallel,
    FixedParallel,
    SweepHostSampler,
    cores,
    mem_available_mb,
)
from experiments.rows import RowStore, RunRecord  # noqa: E402
from experiments.spec import expand, load_sweep  # noqa: E402
from experiments.stats import paired_change  # noqa: E402
from experiments.sweep import PrintProgress, run_points  # noqa: E402

SWEEP = ROOT / "bench" / "sweep" / "capacity.yaml"
OUT = ROOT / "results" / "bench" / "sweep_capacity"
#: The issue's target: the auto rate over the serial rate.
TARGET_SPEEDUP = 4.0


def half(name: str, seeds: int, parallel: str) -> tuple[list[RunRecord], float, str]:
    sweep = load_sweep(SWEEP).model_copy(update={"seeds": list(range(1, seeds + 1))})
    data = OUT / name / "data"
    shutil.rmtree(OUT / name, ignore_errors=True)
    points = expand(sweep)
    if parallel == "auto":
        from topologies.scenario import load_scenario

        sc = load_scenario(sweep.scenario, points[0].overrides)
        cost = DEFAULT_MODEL.estimate(sc.stations.count, len(sc.traffic.tcp) + len(sc.traffic.udp))
        conc: AutoParallel | FixedParallel = AutoParallel(
            cores(), cost, mem_available_mb(), sc.stations.count
        )
    else:
        conc = FixedParallel(int(parallel))
    prog = PrintProgress(sweep, len(points), 0, lambda t: print(f"[{name}] {t}", file=sys.stderr, flush=True))
    t0 = time.monotonic()
    with SweepHostSampler() as sampler:
        report = run_points(
            sweep,
            points,
            out_root=OUT / name / "results",
            data_dir=data,
            parallel=conc,
            progress=prog,
            host_busy=sampler.busy,
            start_gap_s=DEFAULT_MODEL.start_gap_s if parallel == "auto" else 0.0,
        )
    wall = time.monotonic() - t0
    rows = RowStore(sweep.experiment, data).load().records
    return rows, wall, f"{report.parallel}; invalid re-runs {len(report.reruns)}; failed {len(report.failed)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="serial runs (seeds 1..N), default 10")
    ap.add_argument("--auto-seeds", type=int, default=20, help="runs at auto (seeds 1..N), default 20")
    args = ap.parse_args(argv)

    serial, serial_wall, serial_how = half("serial", args.seeds, "1")
    auto, auto_wall, auto_how = half("auto", args.auto_seeds, "auto")
    s_valid = {r.seed: r for r in serial if r.valid}
    a_valid = {r.seed: r for r in auto if r.valid}
    serial_rate = 3600.0 * len(s_valid) / serial_wall
    auto_rate = 3600.0 * len(a_valid) / auto_wall
    speedup = auto_rate / serial_rate if serial_rate else 0.0

    seeds = sorted(set(s_valid) & set(a_valid))
    thr_s = [s_valid[s].metric("throughput_total_bps") for s in seeds]
    thr_a = [a_valid[s].metric("throughput_total_bps") for s in seeds]
    to_s = [s_valid[s].metric("tcp_timeouts_total") for s in seeds]
    to_a = [a_valid[s].metric("tcp_timeouts_total") for s in seeds]

    def wilcoxon(a: list[float], b: list[float]) -> float:
        if all(x == y for x, y in zip(a, b, strict=True)):
            return 1.0
        return float(sps.wilcoxon(a, b, zero_method="zsplit").pvalue)

    p_thr, p_to = wilcoxon(thr_a, thr_s), wilcoxon(to_a, to_s)
    ks_thr = float(sps.ks_2samp(thr_a, thr_s).pvalue)
    ks_to = float(sps.ks_2samp(to_a, to_s).pvalue)
    change = paired_change([(thr_a, thr_s)])
    equivalent = len(seeds) >= 8 and p_thr > 0.05 and p_to > 0.05
    lag_auto = sorted(r.signals.get("medium_lag_p99_ms", float("nan")) for r in auto)
    print(
        f"serial: {len(s_valid)} valid runs in {serial_wall:.0f} s = {serial_rate:.1f}/h ({serial_how})\n"
        f"auto:   {len(a_valid)} valid runs in {auto_wall:.0f} s = {auto_rate:.1f}/h ({auto_how})\n"
        f"speed-up {speedup:.2f}x (target >= {TARGET_SPEEDUP}x)\n"
        f"equivalence on {len(seeds)} seeds: Wilcoxon signed-rank p = {p_thr:.3f} (throughput), "
        f"{p_to:.3f} (timeouts); KS p = {ks_thr:.3f}, {ks_to:.3f}; throughput auto vs serial "
        f"{change.value:+.1f} % [{change.low:+.1f}, {change.high:+.1f}] -> "
        f"{'holds' if equivalent else 'does not hold'}"
    )
    write_result(
        "sweep_capacity",
        round(speedup, 3),
        "x serial valid runs/hour",
        f">= {TARGET_SPEEDUP}x with equivalence (Wilcoxon signed-rank p > 0.05 on throughput and timeouts)",
        speedup >= TARGET_SPEEDUP and equivalent,
        command_line(),
        serial_runs_per_hour=round(serial_rate, 1),
        auto_runs_per_hour=round(auto_rate, 1),
        serial=serial_how,
        auto=auto_how,
        seeds_compared=len(seeds),
        wilcoxon_p_throughput=round(p_thr, 4),
        wilcoxon_p_timeouts=round(p_to, 4),
        ks_p_throughput=round(ks_thr, 4),
        ks_p_timeouts=round(ks_to, 4),
        throughput_change_pct=[round(change.value, 2), round(change.low, 2), round(change.high, 2)],
        equivalent=equivalent,
        auto_medium_lag_p99_ms=lag_auto,
        throughput_serial_bps=thr_s,
        throughput_auto_bps=thr_a,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
