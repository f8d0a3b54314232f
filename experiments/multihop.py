"""TCP over chains and the grid (issue 11): run a subset of a sweep, one CSV row per run, and report.

``python -m experiments.multihop run experiments/sweeps/multihop.yaml --hops 1 2 4 7 --window 8 none
--seeds 1`` runs the chosen points of the sweep file one after the other (real time, each in
its own ``Testbed``) and appends one row per run to ``docs/results/data/<experiment>-flows.csv``; a
point already there (same point id) is skipped, so an interrupted study resumes.
``python -m experiments.multihop report`` writes the tables and figures of
``docs/results/multihop.md`` from those rows (pandas, matplotlib).

A row (``RunRow``) holds what the study compares with the ns-2 literature: throughput, TCP
timeouts, retry-limit failures by cause (all false link failures on a static chain), drops by
reason, max cwnd, mean smoothed RTT and RTO of the data connection, and the routing overhead.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shutil
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.rows import RunRecord
from experiments.spec import Point, Sweep, expand, label, load_sweep

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "results" / "data"
FIGURES = ROOT / "docs" / "results" / "figures"
RUNS_ROOT = ROOT / "results" / "multihop-runs"
"""Where the run folders go (``--out``); a folder is removed once its flow rows are written."""
DROP_COLUMNS = ("ifq_full", "link_failure", "send_buffer_full", "no_route", "salvage_limit")
"""Drop reasons with a column of their own; every reason is also in ``drops`` (JSON)."""


@dataclass(frozen=True, slots=True)
class RunRow:
    experiment: str
    point_id: str
    protocol: str
    hops: str
    window: str
    seed: int
    duration_s: float
    flow: str
    throughput_kbps: float
    tcp_timeouts: int
    retransmits: int
    max_cwnd: int
    srtt_mean_ms: float
    rto_mean_ms: float
    rto_max_ms: float
    link_failures: int
    collisions: int
    false_link_failure_pct: float
    routing_packets: int
    ifq_full: int
    link_failure: int
    send_buffer_full: int
    no_route: int
    salvage_limit: int
    drops: str
    run_dir: str


def _tcp_means(run_dir: Path, src: int, conn: str) -> tuple[float, float]:
    """Mean srtt and RTO (ms) of connection ``conn`` over the samples of the established phase."""
    path = run_dir / "tcp" / f"sta{src}.csv"
    srtt: list[float] = []
    rto: list[float] = []
    if path.exists():
        with path.open() as f:
            for r in csv.DictReader(f):
                if r["conn"] == conn and r["state"] == "ESTAB" and float(r["srtt_ms"]) > 0:
                    srtt.append(float(r["srtt_ms"]))
                    rto.append(float(r["rto_ms"]))
    return (statistics.fmean(srtt) if srtt else 0.0, statistics.fmean(rto) if rto else 0.0)


def rows_of_run(experiment: str, point: Point, run_dir: Path, summary: dict[str, Any]) -> list[RunRow]:
    """One row per TCP flow of a finished run."""
    net = summary.get("network", {})
    drops: dict[str, int] = net.get("drops", {})
    by_cause: dict[str, int] = net.get("link_failures_by_cause", {})
    out = []
    for f in summary["flows"]:
        if f.get("proto") != "tcp":
            continue
        tcp = f.get("tcp") or {}
        srtt, rto = _tcp_means(run_dir, int(f["src"]), str(tcp.get("conn", "")))
        out.append(
            RunRow(
                experiment=experiment,
                point_id=point.point_id,
                protocol=str(point.params.get("routing.protocol", "")),
                hops=label(point.params.get("hops", "")),
                window=label(point.params.get("window", "")),
                seed=point.seed,
                duration_s=float(f["duration_s"]),
                flow=f"{f['id']}:{f['src']}->{f['dst']}",
                throughput_kbps=round(float(f["throughput_bps"] or 0) / 1e3, 2),
                tcp_timeouts=int(f.get("tcp_timeouts") or 0),
                retransmits=int(f.get("retransmits") or 0),
                max_cwnd=int(tcp.get("max_cwnd") or 0),
                srtt_mean_ms=round(srtt, 1),
                rto_mean_ms=round(rto, 1),
                rto_max_ms=float(tcp.get("max_rto_ms") or 0),
                link_failures=int(net.get("link_failures") or 0),
                collisions=int(by_cause.get("collision", 0)),
                false_link_failure_pct=float(net.get("false_link_failure_pct") or 0),
                routing_packets=int(summary.get("routing_packets") or 0),
                ifq_full=int(drops.get("ifq_full", 0)),
                link_failure=int(drops.get("link_failure", 0)),
                send_buffer_full=int(drops.get("send_buffer_full", 0)),
                no_route=int(drops.get("no_route", 0)),
                salvage_limit=int(drops.get("salvage_limit", 0)),
                drops=json.dumps(drops, sort_keys=True, separators=(",", ":")),
                run_dir=str(run_dir),
            )
        )
    return out


def run_point(
    scenario: str, overrides: dict[str, Any], seed: int, experiment: str, out_root: Path
) -> tuple[Path, dict[str, Any]]:
    """One real run (root); returns its result folder and summary."""
    from testbed.run import Testbed

    with Testbed(
        scenario, seed=seed, experiment=experiment, out_root=out_root, overrides=overrides, quiet=True
    ) as tb:
        summary = tb.run()
        run_dir = tb.dir
    return run_dir, summary


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def append_rows(path: Path, rows: Sequence[RunRow]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    names = [f.name for f in dataclasses.fields(RunRow)]
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=names)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow(dataclasses.asdict(r))


def select(points: list[Point], axes: dict[str, list[str]], seeds: list[int] | None) -> list[Point]:
    """The points whose axis labels are among ``axes[axis]`` (an axis not given: all)."""
    out = []
    for p in points:
        if seeds is not None and p.seed not in seeds:
            continue
        if all(label(p.params.get(a)) in vals for a, vals in axes.items() if vals):
            out.append(p)
    return out


def cmd_run(args: argparse.Namespace) -> int:
    """Run the selected points through the sweep runner (``--parallel N|auto``, validity, re-runs of
    invalid runs; the run rows go to ``<experiment>.csv``) and keep a flow row per valid run."""
    from experiments.sweep import make_concurrency, run_points_here

    sweep = load_sweep(args.sweep)
    axes = {"hops": args.hops, "window": args.window, "routing.protocol": args.protocol}
    points = select(expand(sweep), axes, args.seeds)
    csv_path = DATA / f"{sweep.experiment}-flows.csv"  # the sweep runner's rows are <experiment>.csv
    out_root = Path(args.out or RUNS_ROOT)
    done = {r["point_id"] for r in read_rows(csv_path)}
    lost = recover_flow_rows(sweep, [p for p in points if p.point_id not in done], out_root, DATA, csv_path)
    for pid in lost:
        print(
            f"warning: point {pid} has a valid run row but no flow row and its run folder is gone; "
            f"remove its row from {DATA / sweep.experiment}.csv to run it again",
            file=sys.stderr,
        )
    done = {r["point_id"] for r in read_rows(csv_path)}
    todo = [with_duration(p, args.duration) for p in points if p.point_id not in done]
    print(f"{sweep.experiment}: {len(points)} points selected, {len(todo)} to run", flush=True)
    if not todo:
        return 0
    conc = make_concurrency(str(args.parallel), sweep, todo, DATA)

    def keep(point: Point, run_dir: Path, rec: RunRecord) -> None:
        rows = rows_of_run(
            sweep.experiment, point, run_dir, json.loads((run_dir / "summary.json").read_text())
        )
        append_rows(csv_path, rows)
        if not args.keep_runs:
            shutil.rmtree(run_dir, ignore_errors=True)

    report = run_points_here(
        sweep, todo, conc, out_root=out_root, data_dir=DATA, sweep_file=args.sweep, budget_s=args.budget,
        on_valid=keep,
    )  # fmt: skip
    print(
        f"{sweep.experiment}: ran {report.ran} ({report.completed} valid, {len(report.reruns)} invalid "
        f"and re-run, {len(report.failed)} not complete); flow rows in {csv_path}",
        flush=True,
    )
    return 0


def recover_flow_rows(
    sweep: Sweep, points: Sequence[Point], out_root: Path, data_dir: Path, csv_path: Path
) -> list[str]:
    """Write the flow rows of ``points`` that have a valid run row but no flow row (the study was
    stopped between the runner's row and ``on_valid``): the run folder is still under ``out_root``
    (it is removed only after its flow rows are written). Returns the ids whose folder is gone."""
    from experiments.sweep import valid_records

    by_id = {p.point_id: p for p in points}
    lost = []
    for rec in valid_records(sweep, data_dir):
        point = by_id.get(rec.point_id)
        if point is None:
            continue
        run_dir = out_root / sweep.experiment / rec.run_id
        summary = run_dir / "summary.json"
        if not summary.exists():
            lost.append(rec.point_id)
            continue
        append_rows(csv_path, rows_of_run(sweep.experiment, point, run_dir, json.loads(summary.read_text())))
        shutil.rmtree(run_dir, ignore_errors=True)
    return lost


def with_duration(point: Point, duration: float | None) -> Point:
    """The point with its flows shortened to ``duration`` seconds (same id: a study of one length)."""
    if not duration:
        return point
    overrides = dict(point.overrides)
    overrides["duration_s"] = duration + 2
    for k in [k for k in overrides if k.endswith(".duration_s") and k.startswith("traffic.")]:
        overrides[k] = duration
    return dataclasses.replace(point, overrides=overrides)


def cmd_report(args: argparse.Namespace) -> int:
    from experiments.multihop_report import main as report

    return report(DATA, FIGURES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.multihop", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a subset of a sweep file, one CSV row per run")
    r.add_argument("sweep")
    r.add_argument("--hops", nargs="*", default=[])
    r.add_argument("--window", nargs="*", default=[])
    r.add_argument("--protocol", nargs="*", default=[])
    r.add_argument("--seeds", nargs="*", type=int, default=None)
    r.add_argument("--duration", type=float, default=None, help="flow seconds (default: the sweep's)")
    r.add_argument("--out", default=None, help="root of the run folders (default: results/multihop-runs)")
    r.add_argument("--parallel", "-j", default="1", help="runs at a time: N or auto (experiments.capacity)")
    r.add_argument("--budget", type=float, default=None, help="seconds: start no run that would end later")
    r.add_argument("--keep-runs", action="store_true", help="keep each run's folder (pcaps, logs)")
    sub.add_parser("report", help="tables and figures of docs/results/multihop.md")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return cmd_run(args)
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
