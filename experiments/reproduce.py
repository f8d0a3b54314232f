"""``python -m experiments.reproduce PAPER [--budget 2h]``: what ``make reproduce PAPER=...`` runs.

PAPER is a paper's key (``experiments.papers.PAPERS``) or the name of one sweep file
(``experiments/sweeps/<name>.yaml``, e.g. ``yu2004-100``: that sweep only). For a paper: every part of the paper's evaluation in turn (``experiments.papers``: the main sweep
``experiments/sweeps/<paper>.yaml``, then ``<paper>-<part>.yaml`` for each other part, e.g. Liu &
Singh's congestion and partition experiments), each sweep with ``--parallel auto`` and what is left
of the budget (one budget for them all: a part that finds none left is not started, its report is
still written from the rows it has), then its report (``experiments.compare``). A sweep that ends
with runs not complete (exit 1) does not stop the others; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import sys
import time

from experiments import compare, sweep
from experiments.papers import PAPERS, SWEEPS_DIR


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("paper", help=f"a paper ({', '.join(sorted(PAPERS))}) or a sweep's name")
    ap.add_argument("--budget", default=None, help="for all the paper's sweeps together, e.g. 2h, 90m")
    args = ap.parse_args(argv)
    paper = PAPERS.get(args.paper)
    files = [paper.sweep_file(part) for part in paper.parts] if paper else [SWEEPS_DIR / f"{args.paper}.yaml"]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        print(f"error: {', '.join(missing)}: no such sweep", file=sys.stderr)
        return 2
    budget_s = sweep.parse_duration(args.budget) if args.budget else None
    deadline = None if budget_s is None else time.monotonic() + budget_s
    status = 0
    for f in files:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left < 1.0:
            print(f"{f}: budget reached, not started", file=sys.stderr)
        else:
            rc = sweep.main(
                [str(f), "--parallel", "auto", *([] if left is None else ["--budget", f"{left:.0f}s"])]
            )
            if rc not in (0, 1):
                return rc
            status = max(status, rc)
        rc = compare.main([f.stem, "--sweep", str(f), "--quiet"])
        if rc != 0:
            return rc
    return status


if __name__ == "__main__":
    sys.exit(main())
