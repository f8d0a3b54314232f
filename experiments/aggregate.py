"""Aggregate a sweep's runs: ``python -m experiments.aggregate EXPERIMENT [--out results]``.

Reads only ``results/<experiment>/`` (every run directory below it with a ``sweep-point.json`` and a
complete ``summary.json``, so results collected from several hosts count too) and writes:

- ``aggregate.csv`` — one row per run: the point's parameters, the seed, run metrics (totals over
  the TCP flows; UDP cross traffic is left out) and, per TCP flow k, ``flow<k>_throughput_bps``,
  ``flow<k>_tcp_timeouts``, ``flow<k>_retransmits``.
- ``summary.csv`` — one row per point (parameters without the seed): for each metric the mean over
  seeds, the sample standard deviation and the 90 % and 95 % Student-t confidence half-widths.

A file is rewritten only when its content changes (so ``collect.yml`` can tell a change).

Metrics (``METRICS``): TCP timeouts come from the source station's ``TcpExtTCPTimeouts`` (nstat),
counted once per source station; ``rto_per_100_pkts`` divides them by the packets delivered
(bytes received / MSS), Klemm 2004's metric; ``transfer_time_s`` is bytes received x 8 /
throughput of the slowest flow (Liu 2001's file transfer time when flows send a fixed size).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from experiments.rundirs import SWEEP_COPY, completed_runs, read_json, read_point, read_summary
from experiments.spec import label
from experiments.stats import Summary, summarize

#: Per-run metrics, in CSV column order, with their meaning.
METRICS: Final[dict[str, str]] = {
    "throughput_total_bps": "sum of the TCP flows' receiver throughput, bit/s",
    "throughput_per_flow_bps": "mean receiver throughput per TCP flow, bit/s",
    "tcp_timeouts_total": "TCP retransmission timeouts at the flows' source stations",
    "tcp_timeouts_per_flow": "tcp_timeouts_total / number of TCP flows",
    "retransmits_total": "TCP retransmitted segments (iperf3 sender)",
    "routing_packets": "routing packets sent and forwarded, all stations",
    "bytes_received_total": "bytes received by the TCP sinks",
    "rto_per_100_pkts": "TCP timeouts per 100 delivered packets",
    "transfer_time_s": "time to deliver what the slowest flow delivered, s",
    "flows_failed": "TCP flows without a throughput figure",
    "packet_loss_pct": "IP packets the stations sent into the MANET and never delivered, % (summary.json)",
    "false_link_failure_pct": "failed unicasts whose receiver was in range (collision, channel error), %",
}

_BASE_COLS: Final = ("experiment", "point_id", "index", "seed", "run_id", "run_dir", "duration_s", "n_flows")


def _num(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _mss_by_flow(scenario: Any) -> list[int]:
    try:
        return [int(f.get("mss", 1460)) for f in scenario["traffic"]["tcp"]]
    except (TypeError, KeyError, AttributeError):
        return []


def run_metrics(
    summary: Mapping[str, Any], scenario: Any = None
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Run metrics and per-TCP-flow metrics from a ``summary.json`` (and the run's ``scenario.json``)."""
    flows = [f for f in summary.get("flows") or [] if isinstance(f, dict) and f.get("proto", "tcp") == "tcp"]
    mss = _mss_by_flow(scenario)
    per_flow: list[dict[str, float]] = []
    timeouts_by_src: dict[Any, float] = {}
    delivered_pkts = 0.0
    transfer = math.nan
    failed = 0
    for k, f in enumerate(flows):
        thr, to, rtx, nbytes = (
            _num(f.get(x)) for x in ("throughput_bps", "tcp_timeouts", "retransmits", "bytes_received")
        )
        per_flow.append({"throughput_bps": thr, "tcp_timeouts": to, "retransmits": rtx})
        if math.isnan(thr):  # iperf3 may report an error at the end and still have measured
            failed += 1
        if not math.isnan(to):
            timeouts_by_src[f.get("src")] = to
        if not math.isnan(nbytes):
            delivered_pkts += nbytes / (mss[k] if k < len(mss) else 1460)
            if thr > 0:
                t = nbytes * 8 / thr
                transfer = t if math.isnan(transfer) else max(transfer, t)
    n = len(flows)
    thr_total = (
        math.fsum(x["throughput_bps"] for x in per_flow if not math.isnan(x["throughput_bps"]))
        if n
        else math.nan
    )
    to_total = math.fsum(timeouts_by_src.values()) if timeouts_by_src else math.nan
    rtx_vals = [x["retransmits"] for x in per_flow if not math.isnan(x["retransmits"])]
    routing = summary.get("routing_packets")
    if isinstance(routing, dict):  # per type or per station: the total
        routing = sum(_num(v) for v in routing.values() if not math.isnan(_num(v)))
    bytes_vals = [_num(f.get("bytes_received")) for f in flows]
    metrics = {
        "throughput_total_bps": thr_total,
        "throughput_per_flow_bps": thr_total / n if n else math.nan,
        "tcp_timeouts_total": to_total,
        "tcp_timeouts_per_flow": to_total / n if n else math.nan,
        "retransmits_total": math.fsum(rtx_vals) if rtx_vals else math.nan,
        "routing_packets": _num(routing),
        "bytes_received_total": math.fsum(b for b in bytes_vals if not math.isnan(b))
        if bytes_vals
        else math.nan,
        "rto_per_100_pkts": 100.0 * to_total / delivered_pkts if delivered_pkts > 0 else math.nan,
        "transfer_time_s": transfer,
        "flows_failed": float(failed),
        "packet_loss_pct": _num(summary.get("packet_loss_pct")),
        "false_link_failure_pct": _num(summary.get("false_link_failure_pct")),
    }
    return metrics, per_flow


@dataclass
class RunRow:
    """One completed run of a sweep point."""

    point_id: str
    index: int
    params: dict[str, Any]
    seed: int
    run_dir: Path
    summary: dict[str, Any]
    metrics: dict[str, float]
    flows: list[dict[str, float]]


def load_runs(exp_dir: Path) -> list[RunRow]:
    """Every completed point of the experiment (one run each), in sweep order."""
    rows: list[RunRow] = []
    for pid, run_dir in completed_runs(exp_dir).items():
        point = read_point(run_dir)
        summary = read_summary(run_dir)
        if point is None or summary is None:
            continue
        metrics, flows = run_metrics(summary, read_json(run_dir / "scenario.json"))
        raw = dict(point.get("params") or {})
        order = [a for a in point.get("axes") or [] if a in raw]
        params = {a: raw[a] for a in order + sorted(set(raw) - set(order))}
        rows.append(
            RunRow(
                pid,
                int(point.get("index", 0)),
                params,
                int(point["seed"]),
                run_dir,
                summary,
                metrics,
                flows,
            )
        )
    rows.sort(key=lambda r: (r.index, r.seed, r.point_id))
    return rows


@dataclass
class Group:
    """The runs of one point over its seeds."""

    params: dict[str, str]  # axis -> label
    runs: list[RunRow] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return sorted(r.seed for r in self.runs)

    def stat(self, metric: str) -> Summary:
        return summarize([r.metrics.get(metric, math.nan) for r in self.runs])


def group_runs(rows: Iterable[RunRow]) -> list[Group]:
    out: dict[tuple[tuple[str, str], ...], Group] = {}
    for r in rows:
        labels = {k: label(v) for k, v in r.params.items()}
        key = tuple(labels.items())
        out.setdefault(key, Group(labels)).runs.append(r)
    return list(out.values())


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"
    return str(x)


def _param_cols(rows: Iterable[RunRow]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r.params:
            if k not in cols:
                cols.append(k)
    return cols


def aggregate_csv(exp_dir: Path, rows: list[RunRow]) -> str:
    pcols = _param_cols(rows)
    nflows = max((len(r.flows) for r in rows), default=0)
    fcols = [
        f"flow{k}_{m}"
        for k in range(1, nflows + 1)
        for m in ("throughput_bps", "tcp_timeouts", "retransmits")
    ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*_BASE_COLS[:3], *pcols, *_BASE_COLS[3:], *METRICS, *fcols])
    for r in rows:
        try:
            rel = str(r.run_dir.resolve().relative_to(exp_dir.resolve()))
        except ValueError:
            rel = str(r.run_dir)
        flow_vals = [
            _fmt(r.flows[k][m]) if k < len(r.flows) else ""
            for k in range(nflows)
            for m in ("throughput_bps", "tcp_timeouts", "retransmits")
        ]
        w.writerow(
            [
                exp_dir.name,
                r.point_id,
                r.index,
                *(label(r.params[c]) if c in r.params else "" for c in pcols),
                r.seed,
                r.summary.get("run_id", r.run_dir.name),
                rel,
                _fmt(_num(r.summary.get("duration_s"))),
                len(r.flows),
                *(_fmt(r.metrics[m]) for m in METRICS),
                *flow_vals,
            ]
        )
    return buf.getvalue()


def summary_csv(exp_dir: Path, rows: list[RunRow]) -> str:
    pcols = _param_cols(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    stat_cols = [f"{m}_{s}" for m in METRICS for s in ("mean", "std", "ci90", "ci95")]
    w.writerow(["experiment", *pcols, "n_runs", "seeds", *stat_cols])
    for g in group_runs(rows):
        vals: list[str] = []
        for m in METRICS:
            s = g.stat(m)
            vals += [_fmt(s.mean), _fmt(s.std), _fmt(s.ci90), _fmt(s.ci95)]
        w.writerow(
            [
                exp_dir.name,
                *(g.params.get(c, "") for c in pcols),
                len(g.runs),
                " ".join(map(str, g.seeds)),
                *vals,
            ]
        )
    return buf.getvalue()


def write_if_changed(path: Path, text: str) -> bool:
    """Replace ``path`` atomically with ``text`` unless it already holds exactly that; True if written."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def aggregate(exp_dir: Path) -> dict[Path, bool]:
    """Write ``aggregate.csv`` and ``summary.csv``; returns each path and whether it changed."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    if not (exp_dir / SWEEP_COPY).exists():  # results collected from hosts: adopt one host's copy
        copies = sorted(exp_dir.rglob(SWEEP_COPY))
        if copies:
            shutil.copyfile(copies[0], exp_dir / SWEEP_COPY)
    rows = load_runs(exp_dir)
    return {
        exp_dir / "aggregate.csv": write_if_changed(exp_dir / "aggregate.csv", aggregate_csv(exp_dir, rows)),
        exp_dir / "summary.csv": write_if_changed(exp_dir / "summary.csv", summary_csv(exp_dir, rows)),
    }


def experiment_dir(name: str, out: str = "results") -> Path:
    """``EXPERIMENT`` may be a name (under ``out``) or a path to the experiment folder."""
    p = Path(name)
    return p if (p.is_dir() and (p / SWEEP_COPY).exists()) or "/" in name else Path(out) / name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.aggregate", description="Write aggregate.csv and summary.csv."
    )
    ap.add_argument("experiment", help="experiment name (results/<name>) or folder")
    ap.add_argument("--out", default="results")
    args = ap.parse_args(argv)
    exp_dir = experiment_dir(args.experiment, args.out)
    if not exp_dir.is_dir():
        print(f"error: {exp_dir}: no such experiment folder", file=sys.stderr)
        return 2
    written = aggregate(exp_dir)
    n = len(load_runs(exp_dir))
    for path, changed in written.items():
        print(f"{path}: {'written' if changed else 'unchanged'} ({n} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
