"""Run a sweep: ``python -m experiments.sweep SWEEP.yaml [--parallel N] [--shard i/n] [--out results]``.

Issue 2, item 5: "a grid of parameters x seeds declared as data, N runs in parallel, resumable
(completed runs are skipped), a progress bar, an aggregated CSV". The sweep file (``experiments.spec``)
expands into run points; the points of this shard (``index % n == i``) that have no complete run
under ``results/<experiment>/`` are run, ``--parallel`` at a time, each through a ``RunFunction``.
The default one starts ``python -m experiments.worker`` (one process per run, which calls
``testbed.run.run_scenario``); tests inject a fake one (the seam). Each finished run gets a
``sweep-point.json`` and an entry in ``sweep-index.json`` (``experiments.rundirs``). A run that
failed, or was interrupted, is simply run again by the next invocation. At the end the experiment
is aggregated (``experiments.aggregate``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from experiments.rundirs import (
    POINT_FILE,
    SWEEP_COPY,
    SweepIndex,
    completed_runs,
    is_complete,
    read_json,
    write_json_atomic,
)
from experiments.spec import Point, Sweep, SweepError, check_points, expand, label, load_sweep


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What one run needs; the arguments of ``testbed.run.run_scenario``."""

    scenario: str
    seed: int
    experiment: str
    out_root: str
    overrides: dict[str, Any]
    point_id: str = ""
    attempt: int = 1


class RunFailed(Exception):
    """A run that did not produce a run directory (``run_dir`` is set if it got that far)."""

    def __init__(self, message: str, run_dir: Path | None = None) -> None:
        super().__init__(message)
        self.run_dir = run_dir


class RunFunction(Protocol):
    """The seam: run one point and return its run directory, or raise (``RunFailed`` or any)."""

    def __call__(self, request: RunRequest) -> Path: ...


# --------------------------------------------------------------------------------------------
# The default run function: one worker process per run


class _Children:
    """The worker processes this sweep started, so that a SIGTERM to the sweep reaches them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def signal_all(self, signum: int) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:  # by pid, only our own children
            if proc.poll() is None:
                try:
                    proc.send_signal(signum)
                except ProcessLookupError:
                    pass


CHILDREN = _Children()


def subprocess_run(request: RunRequest) -> Path:
    """Run one point in ``python -m experiments.worker``; its output goes to a log file in
    ``<out>/<experiment>/sweep-logs/``, its answer to a JSON file beside it."""
    logs = Path(request.out_root) / request.experiment / "sweep-logs"
    logs.mkdir(parents=True, exist_ok=True)
    stem = f"{request.point_id or 'run'}-{request.attempt}"
    req_file, res_file, log_file = (
        logs / f"{stem}.request.json",
        logs / f"{stem}.result.json",
        logs / f"{stem}.log",
    )
    res_file.unlink(missing_ok=True)
    write_json_atomic(
        req_file,
        {
            "scenario": request.scenario,
            "seed": request.seed,
            "experiment": request.experiment,
            "out_root": request.out_root,
            "overrides": request.overrides,
        },
    )
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "experiments.worker", str(req_file), str(res_file)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        CHILDREN.add(proc)
        try:
            rc = proc.wait()
        finally:
            CHILDREN.discard(proc)
    result = read_json(res_file)
    if isinstance(result, dict) and result.get("run_dir"):
        return Path(result["run_dir"])
    reason = result.get("error") if isinstance(result, dict) else None
    raise RunFailed(f"{reason or f'worker exited with {rc}'} (log: {log_file})")


# --------------------------------------------------------------------------------------------
# The runner


@dataclass
class Outcome:
    point: Point
    status: str  # complete | incomplete | failed
    run_dir: Path | None = None
    error: str | None = None
    attempts: int = 1


@dataclass
class SweepReport:
    experiment: str
    exp_dir: Path
    selected: int = 0
    skipped: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ran(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status != "complete"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "exp_dir": str(self.exp_dir),
            "selected": self.selected,
            "skipped": self.skipped,
            "ran": self.ran,
            "completed": self.ran - len(self.failed),
            "failed": len(self.failed),
            "interrupted": self.interrupted,
        }


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` with 0 <= i < n."""
    i_s, sep, n_s = text.partition("/")
    try:
        i, n = int(i_s), int(n_s)
    except ValueError:
        i, n = -1, 0
    if not sep or n < 1 or not 0 <= i < n:
        raise ValueError(f"shard {text!r}: expected i/n with 0 <= i < n, e.g. 0/4")
    return i, n


def shard_points(points: Sequence[Point], shard: tuple[int, int] | None) -> list[Point]:
    """The points of shard ``i/n``: those whose index % n == i (every point is in exactly one shard)."""
    if shard is None:
        return list(points)
    i, n = shard
    return [p for p in points if p.index % n == i]


def _params_text(point: Point) -> str:
    return " ".join(f"{k}={label(v)}" for k, v in point.params.items()) + f" seed={point.seed}"


class _Progress(Protocol):
    def started(self, point: Point) -> None: ...
    def finished(self, outcome: Outcome) -> None: ...


class _NoProgress:
    def started(self, point: Point) -> None:
        pass

    def finished(self, outcome: Outcome) -> None:
        pass


def run_points(
    sweep: Sweep,
    points: Sequence[Point],
    *,
    out_root: str | Path = "results",
    run_fn: RunFunction = subprocess_run,
    parallel: int = 1,
    retries: int = 0,
    progress: _Progress | None = None,
    sweep_file: str | None = None,
) -> SweepReport:
    """Run the given points that are not complete yet; return what happened.

    Completed points (a run directory with a complete ``summary.json`` and a ``sweep-point.json``
    for the point id) are skipped. A run that raises or returns an incomplete run is tried up to
    ``retries`` more times in this invocation, and again by the next one. KeyboardInterrupt stops
    starting new runs, waits for the running ones (they tear down on their own), and re-raises.
    """
    exp_dir = Path(out_root) / sweep.experiment
    exp_dir.mkdir(parents=True, exist_ok=True)
    index = SweepIndex(exp_dir)
    done = completed_runs(exp_dir)
    report = SweepReport(sweep.experiment, exp_dir, selected=len(points))
    todo = [p for p in points if p.point_id not in done]
    report.skipped = len(points) - len(todo)
    prog = progress or _NoProgress()

    def attempt(point: Point, n: int) -> Outcome:
        req = RunRequest(
            sweep.scenario, point.seed, sweep.experiment, str(out_root), point.overrides, point.point_id, n
        )
        prog.started(point)
        try:
            run_dir = Path(run_fn(req))
        except RunFailed as exc:
            return Outcome(point, "failed", exc.run_dir, str(exc), n)
        except Exception as exc:  # noqa: BLE001 - one failed run must not stop the sweep
            return Outcome(point, "failed", None, f"{type(exc).__name__}: {exc}", n)
        status = "complete" if is_complete(run_dir) else "incomplete"
        return Outcome(
            point, status, run_dir, None if status == "complete" else "summary.json not complete", n
        )

    def record(o: Outcome) -> None:
        if o.run_dir is not None and o.run_dir.is_dir():
            write_json_atomic(
                o.run_dir / POINT_FILE,
                {
                    "point_id": o.point.point_id,
                    "index": o.point.index,
                    "experiment": sweep.experiment,
                    "scenario": sweep.scenario,
                    "sweep_file": sweep_file,
                    "params": o.point.params,
                    "axes": list(o.point.params),  # the axis order (JSON objects are written sorted)
                    "overrides": o.point.overrides,
                    "seed": o.point.seed,
                    "attempt": o.attempts,
                    "status": o.status,
                },
            )
        index.update(
            o.point.point_id,
            {
                "index": o.point.index,
                "seed": o.point.seed,
                "params": o.point.params,
                "status": o.status,
                "run_dir": index.rel(o.run_dir) if o.run_dir is not None else None,
                "error": o.error,
                "attempts": o.attempts,
            },
        )

    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="sweep")
    running: dict[Future[Outcome], Point] = {}
    queue = list(todo)
    try:
        while queue or running:
            while queue and len(running) < max(1, parallel):
                point = queue.pop(0)
                running[pool.submit(attempt, point, 1)] = point
            finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                running.pop(fut)
                outcome = fut.result()
                record(outcome)
                if outcome.status != "complete" and outcome.attempts <= retries:
                    running[pool.submit(attempt, outcome.point, outcome.attempts + 1)] = outcome.point
                    continue
                report.outcomes.append(outcome)
                prog.finished(outcome)
    except KeyboardInterrupt:
        report.interrupted = True
        CHILDREN.signal_all(signal.SIGTERM)
        for fut in running:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        for fut, _point in running.items():
            if fut.done() and not fut.cancelled():
                record(fut.result())
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return report


# --------------------------------------------------------------------------------------------
# Progress bar


class RichProgress:
    """A rich progress bar over this invocation's runs (skipped points are counted as done)."""

    def __init__(self, sweep: Sweep, total: int, skipped: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[current]}"),
            console=self.console,
        )
        self.task = self.progress.add_task(
            sweep.experiment, total=total, completed=skipped, failed=0, current=""
        )
        self.failed = 0
        self._lock = threading.Lock()
        self._current: dict[str, str] = {}

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _update(self) -> None:
        current = "; ".join(list(self._current.values())[:2])
        self.progress.update(self.task, failed=self.failed, current=current)

    def started(self, point: Point) -> None:
        with self._lock:
            self._current[point.point_id] = _params_text(point)
            self._update()

    def finished(self, outcome: Outcome) -> None:
        with self._lock:
            self._current.pop(outcome.point.point_id, None)
            if outcome.status != "complete":
                self.failed += 1
                self.progress.console.print(
                    f"[red]{outcome.status}[/red] {_params_text(outcome.point)}: {outcome.error}"
                )
            self.progress.advance(self.task)
            self._update()


# --------------------------------------------------------------------------------------------
# Command line


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def copy_sweep_file(sweep_path: str | Path, exp_dir: Path) -> None:
    """Keep the sweep file with its results (analysis reads only ``results/``)."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    dst = exp_dir / SWEEP_COPY
    src = Path(sweep_path)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        tmp = dst.with_name(f".{dst.name}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)


def _dry_run(sweep: Sweep, points: list[Point], exp_dir: Path, print_fn: Callable[[str], None]) -> None:
    from rich.console import Console
    from rich.table import Table

    done = completed_runs(exp_dir)
    table = Table(title=f"{sweep.experiment}: {len(points)} points ({sweep.scenario})")
    for col in ("#", "point id", *sweep.axes(), "seed", "status"):
        table.add_column(col)
    for p in points:
        status = "done" if p.point_id in done else "to run"
        table.add_row(str(p.index), p.point_id, *(label(v) for v in p.params.values()), str(p.seed), status)
    Console().print(table)
    print_fn(
        f"{sum(p.point_id in done for p in points)} done, {sum(p.point_id not in done for p in points)} to run"
    )


def main(argv: list[str] | None = None, run_fn: RunFunction = subprocess_run) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", help="sweep file (YAML), e.g. experiments/sweeps/smoke.yaml")
    ap.add_argument("--parallel", "-j", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--shard", default=None, help="run only points with index %% n == i, as i/n (0-based)")
    ap.add_argument("--out", default="results", help="results root (default results)")
    ap.add_argument("--experiment", default=None, help="override the sweep file's experiment name")
    ap.add_argument(
        "--retries", type=int, default=0, help="run a failed point again up to N times (default 0)"
    )
    ap.add_argument("--dry-run", action="store_true", help="list the points and their status; run nothing")
    ap.add_argument(
        "--no-check", action="store_true", help="skip loading the scenario with every set of overrides"
    )
    ap.add_argument(
        "--no-aggregate", action="store_true", help="do not write aggregate.csv/summary.csv at the end"
    )
    ap.add_argument(
        "--json-report", action="store_true", help="print a JSON report as the last line of stdout"
    )
    args = ap.parse_args(argv)

    try:
        sweep = load_sweep(args.sweep)
        shard = parse_shard(args.shard) if args.shard else None
    except (SweepError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.experiment:
        sweep = sweep.model_copy(update={"experiment": args.experiment})
    if args.parallel < 1 or args.retries < 0:
        print("error: --parallel must be >= 1 and --retries >= 0", file=sys.stderr)
        return 2
    all_points = expand(sweep)
    points = shard_points(all_points, shard)
    exp_dir = Path(args.out) / sweep.experiment
    if not args.no_check:
        errors = check_points(sweep, points)
        if errors:
            print(
                f"error: {args.sweep}: {len(errors)} override set(s) do not give a valid scenario:",
                file=sys.stderr,
            )
            for e in errors:
                print(e, file=sys.stderr)
            return 2
    if args.dry_run:
        _dry_run(sweep, points, exp_dir, print)
        return 0

    copy_sweep_file(args.sweep, exp_dir)
    done_before = completed_runs(exp_dir)
    skipped = sum(p.point_id in done_before for p in points)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    started = time.monotonic()
    shard_txt = f" shard {args.shard}" if args.shard else ""
    print(
        f"sweep {sweep.experiment}{shard_txt}: {len(points)} of {len(all_points)} points, "
        f"{skipped} already complete, parallel {args.parallel}",
        file=sys.stderr,
    )
    try:
        with RichProgress(sweep, total=len(points), skipped=skipped) as prog:
            report = run_points(
                sweep,
                points,
                out_root=args.out,
                run_fn=run_fn,
                parallel=args.parallel,
                retries=args.retries,
                progress=prog,
                sweep_file=args.sweep,
            )
    except KeyboardInterrupt:
        print("interrupted: run the same command again to resume", file=sys.stderr)
        return 130
    elapsed = time.monotonic() - started
    print(
        f"sweep {sweep.experiment}{shard_txt}: ran {report.ran} ({len(report.failed)} not complete), "
        f"skipped {report.skipped}, {elapsed:.0f} s; results in {exp_dir}",
        file=sys.stderr,
    )
    for o in report.failed:
        print(f"  {o.status}: {_params_text(o.point)}: {o.error}", file=sys.stderr)
    if not args.no_aggregate:
        from experiments.aggregate import aggregate

        written = aggregate(exp_dir)
        for path, changed in written.items():
            print(f"{path}: {'written' if changed else 'unchanged'}", file=sys.stderr)
    if args.json_report:
        print(json.dumps(report.as_dict(), sort_keys=True))
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
