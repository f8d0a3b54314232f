"""Fill the rows' empty metric cells from the run folders still on this host.

A metric added after runs were made (``experiments.aggregate.METRICS``) has an empty cell in their
rows. When their run folders are still here (``results/<experiment>/``: ``summary.json``,
``scenario.json``, ``medium/counters.json``), the metric is computed from them as a new run's row
would be: the summary fields derived from the medium's counters (``testbed.metrics.medium_summary``)
are added where the summary lacks them, and the out-of-range episodes of the TCP state in its
``tcp/staN.csv`` samples (``nodes.tcpctl.observe.out_of_range_episodes``), then ``run_metrics``. Cells that have a value are never
changed; a row is matched to its folder by run id (the folder's name).

Usage: ``python -m experiments.backfill <experiment> [--results results] [--data docs/results/data]``
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterator
from pathlib import Path

from experiments.aggregate import METRICS, run_metrics
from experiments.rows import DATA_DIR, RowStore
from experiments.rundirs import SUMMARY, read_json, read_summary
from nodes.tcpctl.observe import out_of_range_episodes
from testbed.metrics import medium_summary


def run_dirs(exp_dir: Path) -> Iterator[Path]:
    """Every folder below ``exp_dir`` with a ``summary.json`` (hosts' folders side by side too)."""
    for s in sorted(exp_dir.rglob(SUMMARY)):
        yield s.parent


def sampled_faults(run_dir: Path) -> int | None:
    """Out-of-range episodes in the run's tcp_info samples (``tcp/staN.csv``, as the sampler wrote
    them), or None if the run kept none."""
    files = sorted((run_dir / "tcp").glob("sta*.csv"))
    if not files:
        return None
    n = 0
    for f in files:
        with open(f, newline="", encoding="utf-8") as fh:
            n += out_of_range_episodes(csv.DictReader(fh))
    return n


def metrics_of(run_dir: Path) -> dict[str, float] | None:
    """The row metrics of one run folder, with the medium-derived summary fields it lacks."""
    summary = read_summary(run_dir)
    if summary is None:
        return None
    derived = medium_summary(read_json(run_dir / "medium" / "counters.json"))
    for k, v in derived.items():
        if summary.get(k) is None:
            summary[k] = v
    if summary.get("tcp_cc_faults") is None and (faults := sampled_faults(run_dir)) is not None:
        summary["tcp_cc_faults"] = faults
    metrics, _ = run_metrics(summary, read_json(run_dir / "scenario.json"))
    return metrics


def backfill(experiment: str, results: Path, data_dir: Path) -> tuple[list[str], int, int]:
    """(columns added, runs found, cells filled)."""
    store = RowStore(experiment, data_dir)
    added = store.add_columns(list(METRICS))
    values: dict[str, dict[str, float]] = {}
    for d in run_dirs(results / experiment):
        m = metrics_of(d)
        if m is not None:
            values[d.name] = m
    return added, len(values), store.fill(values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--data", type=Path, default=DATA_DIR)
    args = ap.parse_args(argv)
    store = RowStore(args.experiment, args.data)
    if store.columns() is None:
        print(f"error: {store.path}: no rows file for experiment {args.experiment!r}", file=sys.stderr)
        return 2
    added, runs, filled = backfill(args.experiment, args.results, args.data)
    print(
        f"{store.path}: columns added: {', '.join(added) or 'none'}; "
        f"{runs} run folders under {args.results / args.experiment}; {filled} cells filled"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
