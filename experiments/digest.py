"""``python -m experiments.digest EXPERIMENT [--out results] [--by AXIS ...]``: why a sweep's runs
came out as they did, per point, from the run directories this host still has.

The rows in git (experiments.rows) keep each run's metrics; a report's explanation needs more of
each run: how long the paths were, what caused each TCP timeout (testbed.explain's ground-truth
causes: ``explain.json``, else summary.json ``timeouts_by_cause``), and how the senders' kernels repaired their losses
(nstat at the flows' sources: fast retransmits, SACK and Reno recoveries, tail loss probes, lost
retransmissions, spurious RTOs). ``run_digest`` turns one run's files into a ``RunDigest``
(no I/O); ``main`` reads ``results/<experiment>/*/`` (valid runs only, by ``sweep-point.json``) and
prints the means per point (pandas), or writes them as Markdown with ``--md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import pandas as pd

from experiments.multihop_report import markdown
from experiments.rows import DATA_DIR, RowStore
from experiments.rundirs import read_json, valid_runs
from experiments.spec import label

#: Kernel counters (nstat, the TCP sources' namespaces) that say how losses were repaired.
RECOVERY_COUNTERS: Final[dict[str, str]] = {
    "TcpExtTCPTimeouts": "rto",
    "TcpExtTCPFastRetrans": "fast_retrans",
    "TcpExtTCPSackRecovery": "sack_recovery",
    "TcpExtTCPRenoRecovery": "reno_recovery",
    "TcpExtTCPLossProbes": "loss_probes",
    "TcpExtTCPLostRetransmit": "lost_retransmit",
    "TcpExtTCPSpuriousRTOs": "spurious_rto",
}


@dataclass(frozen=True, slots=True)
class RunDigest:
    """One valid run, explained. ``hops``: 1 + data packets forwarded per data packet originated
    (every station's router counters; dropped packets' hops count too, so it is an estimate)."""

    params: dict[str, str]
    seed: int
    hops: float
    routing_packets: float
    hop_loss_drops: float
    recovery: dict[str, int] = field(default_factory=dict)  # RECOVERY_COUNTERS' short names
    rto_causes: dict[str, int] = field(default_factory=dict)  # timeouts_by_cause

    def flat(self) -> dict[str, Any]:
        d = asdict(self)
        out: dict[str, Any] = {**d.pop("params"), "seed": self.seed}
        out.update({k: v for k, v in d.items() if k not in ("recovery", "rto_causes")})
        out.update(self.recovery)
        out.update({f"rto_{k}": v for k, v in self.rto_causes.items()})
        return out


def run_digest(
    point: Mapping[str, Any],
    summary: Mapping[str, Any],
    nstat_before: Mapping[str, Mapping[str, int]],
    nstat_after: Mapping[str, Mapping[str, int]],
) -> RunDigest:
    """A run's digest from its ``sweep-point.json``, ``summary.json`` and ``nstat/*.json``."""
    net = summary.get("network") or {}
    originated = float(net.get("data_originated") or 0)
    forwarded = float(net.get("data_forwarded") or 0)
    sources = {
        f"sta{f['src']}" if isinstance(f.get("src"), int) else str(f.get("src"))
        for f in summary.get("flows") or []
        if f.get("proto", "tcp") == "tcp"
    }
    recovery: dict[str, int] = {}
    for counter, short in RECOVERY_COUNTERS.items():
        recovery[short] = sum(
            int(nstat_after.get(s, {}).get(counter, 0)) - int(nstat_before.get(s, {}).get(counter, 0))
            for s in sorted(sources)
        )
    routing = summary.get("routing_packets")
    return RunDigest(
        params={k: label(v) for k, v in (point.get("params") or {}).items()},
        seed=int(point.get("seed", 0)),
        hops=1.0 + forwarded / originated if originated > 0 else float("nan"),
        routing_packets=float(routing) if isinstance(routing, int | float) else float("nan"),
        hop_loss_drops=float((net.get("drops") or {}).get("hop_loss", 0)),
        recovery=recovery,
        rto_causes={str(k): int(v) for k, v in (summary.get("timeouts_by_cause") or {}).items()},
    )


def load_digests(exp_dir: Path, invalid: Collection[str] = ()) -> list[RunDigest]:
    """The digests of the valid, complete runs under ``exp_dir`` (the latest run per point), but
    not the runs ``invalid`` names (rows marked invalid in git after the run)."""
    out: list[RunDigest] = []
    for run_dir, summary, point in valid_runs(exp_dir, invalid):
        rep = read_json(run_dir / "explain.json")
        if isinstance(rep, dict) and isinstance(rep.get("by_cause"), dict):
            # explain.json is rewritten by ``python -m testbed.explain RUN`` (newer causes)
            summary = {**summary, "timeouts_by_cause": rep["by_cause"]}
        before = read_json(run_dir / "nstat" / "before.json") or {}
        after = read_json(run_dir / "nstat" / "after.json") or {}
        out.append(run_digest(point, summary, before, after))
    return out


def per_point(digests: Sequence[RunDigest], by: Sequence[str] | None = None) -> pd.DataFrame:
    """Means per point (``by``: the axes to group on; default every axis), with the run count."""
    df = pd.DataFrame([d.flat() for d in digests])
    if df.empty:
        return df
    axes = list(by) if by else list(digests[0].params)
    rto_cols = sorted(c for c in df.columns if c.startswith("rto_"))
    df[rto_cols] = df[rto_cols].fillna(0)
    cols = ["hops", "routing_packets", "hop_loss_drops", *RECOVERY_COUNTERS.values(), *rto_cols]
    g = df.groupby(axes, sort=True)
    table = g[cols].mean().round(2)
    table.insert(0, "runs", g.size())
    return table.reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.digest", description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("--out", default="results", help="results root (default results)")
    ap.add_argument("--data", default=str(DATA_DIR), help="rows in git: their invalid runs are skipped")
    ap.add_argument("--by", nargs="*", default=None, help="axes to group on (default: all)")
    ap.add_argument("--md", default=None, help="write the table as Markdown to this file")
    args = ap.parse_args(argv)
    exp_dir = Path(args.out) / args.experiment
    if not exp_dir.is_dir():
        print(f"error: {exp_dir}: no such folder (the run directories of this host)", file=sys.stderr)
        return 2
    digests = load_digests(exp_dir, RowStore(args.experiment, args.data).invalid_run_ids())
    if not digests:
        print(f"error: {exp_dir}: no valid complete run", file=sys.stderr)
        return 1
    try:
        table = per_point(digests, args.by)
    except KeyError as exc:
        print(f"error: --by: no axis {exc} (axes: {', '.join(digests[0].params)})", file=sys.stderr)
        return 2
    text = markdown(table) if args.md else table.to_string(index=False)
    if args.md:
        Path(args.md).write_text(text + "\n", encoding="utf-8")
        print(f"{args.md}: written ({len(digests)} runs)")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
