"""``python -m experiments.prefix EXPERIMENT --at SECONDS [--by AXIS ...]``: would shorter runs do?

Issue 12 allows Yu 2004's 900 s runs to be shortened "if you show from our own runs that the
per-run throughput of a shorter run has the same distribution". A run of T seconds with the same
seed is the first T seconds of the long run (the seed fixes placement, mobility, traffic and start
times: topologies/seeding.py), so the long runs' prefixes are samples of what T-second runs give.
For each valid run this reads the TCP sinks' per-second records (iperf3 server intervals,
``testbed.traffic.bytes_in_window``) and compares, per point, the prefix throughput (bytes in the
flows' first T s x 8 / T) with the run's own throughput over its whole duration:

- two-sample Kolmogorov-Smirnov (``scipy.stats.ks_2samp``): same distribution of per-run values;
- Wilcoxon signed-rank on the pairs (``scipy.stats.wilcoxon``): no shift run by run;
- the mean ratio prefix / full with its 95 % interval (Fieller, ``experiments.stats``).

A point passes when both p-values exceed ``ALPHA`` and the ratio's interval lies within
``1 +- TOLERANCE``. ``compare_prefix`` is the sans-I/O part.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp, wilcoxon

from experiments.multihop_report import markdown
from experiments.rows import DATA_DIR, RowStore
from experiments.rundirs import valid_runs
from experiments.spec import label
from experiments.stats import fieller
from testbed.traffic import bytes_in_window, load_json

#: Significance level of the two tests.
ALPHA: Final = 0.05
#: The prefix's mean throughput must be within this fraction of the full runs' (both ends of its
#: 95 % interval).
TOLERANCE: Final = 0.10


@dataclass(frozen=True, slots=True)
class RunPair:
    """One run: its point's labels, seed, throughput over the whole run and over the first T s."""

    params: dict[str, str]
    seed: int
    full_bps: float
    prefix_bps: float


def compare_prefix(pairs: Sequence[RunPair], by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per point: runs, mean full and prefix throughput, KS and Wilcoxon p, ratio and its interval,
    and ``same`` (both p > ALPHA and the ratio's interval within 1 +- TOLERANCE)."""
    df = pd.DataFrame(
        [{**p.params, "seed": p.seed, "full": p.full_bps, "prefix": p.prefix_bps} for p in pairs]
    )
    if df.empty:
        return df
    axes = list(by) if by else list(pairs[0].params)
    out = []
    for key, g in df.groupby(axes, sort=True):
        full, pre = g["full"].to_numpy(float), g["prefix"].to_numpy(float)
        ks = float(ks_2samp(pre, full).pvalue) if len(g) >= 2 else math.nan
        diff = pre - full
        wx = float(wilcoxon(pre, full).pvalue) if len(g) >= 2 and np.any(diff != 0) else 1.0
        ch = fieller(pre, full)
        lo, hi = 1 + ch.low / 100, 1 + ch.high / 100
        same = ks > ALPHA and wx > ALPHA and 1 - TOLERANCE <= lo and hi <= 1 + TOLERANCE
        keys = key if isinstance(key, tuple) else (key,)
        out.append(
            {
                **dict(zip(axes, keys, strict=True)),
                "runs": len(g),
                "full_kbps": round(float(full.mean()) / 1e3, 1),
                "prefix_kbps": round(float(pre.mean()) / 1e3, 1),
                "ratio": round(1 + ch.value / 100, 3),
                "ratio_low": round(lo, 3),
                "ratio_high": round(hi, 3),
                "ks_p": round(ks, 3),
                "wilcoxon_p": round(wx, 3),
                "same": bool(same),
            }
        )
    return pd.DataFrame(out)


def load_pairs(exp_dir: Path, at_s: float, invalid: Collection[str] = ()) -> list[RunPair]:
    """The valid complete runs under ``exp_dir`` whose TCP flows all have per-second records (not
    the runs ``invalid`` names: rows marked invalid in git after the run)."""
    out: list[RunPair] = []
    for run_dir, summary, point in valid_runs(exp_dir, invalid):
        flows = [f for f in summary.get("flows") or [] if f.get("proto", "tcp") == "tcp"]
        full = prefix = 0.0
        ok = bool(flows)
        for f in flows:
            server = load_json(run_dir / "flows" / f"{f['id']}.server.json") or {}
            got, found = bytes_in_window(server, at_s)
            if not found or f.get("throughput_bps") is None or float(f.get("duration_s") or 0) < at_s:
                ok = False
                break
            full += float(f["throughput_bps"])
            prefix += 8.0 * got / at_s
        if ok:
            params = {k: label(v) for k, v in (point.get("params") or {}).items()}
            out.append(RunPair(params, int(point.get("seed", 0)), full, prefix))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.prefix", description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument(
        "--at", type=float, required=True, help="the shorter run's length, s (from the flows' start)"
    )
    ap.add_argument("--out", default="results", help="results root (default results)")
    ap.add_argument("--data", default=str(DATA_DIR), help="rows in git: their invalid runs are skipped")
    ap.add_argument("--by", nargs="*", default=None, help="axes to group on (default: all)")
    ap.add_argument("--md", default=None, help="write the table as Markdown to this file")
    args = ap.parse_args(argv)
    exp_dir = Path(args.out) / args.experiment
    if args.at <= 0:
        print("error: --at must be > 0", file=sys.stderr)
        return 2
    if not exp_dir.is_dir():
        print(f"error: {exp_dir}: no such folder (the run directories of this host)", file=sys.stderr)
        return 2
    pairs = load_pairs(exp_dir, args.at, RowStore(args.experiment, args.data).invalid_run_ids())
    if not pairs:
        print(
            f"error: {exp_dir}: no valid run whose flows last {args.at:g} s with per-second records",
            file=sys.stderr,
        )
        return 1
    table = compare_prefix(pairs, args.by)
    if args.md:
        Path(args.md).write_text(markdown(table) + "\n", encoding="utf-8")
        print(f"{args.md}: written ({len(pairs)} runs)")
    else:
        print(table.to_string(index=False))
    return 0 if bool(table["same"].all()) else 3


if __name__ == "__main__":
    sys.exit(main())
