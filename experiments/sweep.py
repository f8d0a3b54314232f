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
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Final, Protocol

from experiments.aggregate import METRICS, rto_policy_metrics, run_metrics
from experiments.behaviour import run_key, sweep_key
from experiments.capacity import (
    DEFAULT_MODEL,
    AutoParallel,
    Concurrency,
    FixedParallel,
    SweepHostSampler,
    cores,
    measured_cost,
    mem_available_mb,
)
from experiments.plan import Comparison, Plan, block_key
from experiments.rows import (
    DATA_DIR,
    DIRTY_SUFFIX,
    LEGACY_PROFILE,
    SIGNAL_COLS,
    FlowRow,
    RowStore,
    RunRecord,
    cc_fault_reason,
)
from experiments.rundirs import (
    POINT_FILE,
    SWEEP_COPY,
    SweepIndex,
    is_complete,
    read_json,
    read_summary,
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
    """The seam: run one point and return its run directory, or raise (``RunFailed`` or any).
    A run function that ran the point on another host returns its row instead
    (``experiments.distributed``)."""

    def __call__(self, request: RunRequest) -> Path | RunRecord: ...


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
# A finished run as a row


def _revision(run_dir: Path) -> str:
    run = read_json(run_dir / "run.json")
    git = run.get("git") if isinstance(run, dict) else None
    if not isinstance(git, dict) or not git.get("rev"):
        return ""
    return str(git["rev"])[:12] + (DIRTY_SUFFIX if git.get("dirty") else "")


def _float(x: Any) -> float:
    try:
        return math.nan if x is None or isinstance(x, bool) else float(x)
    except (TypeError, ValueError):
        return math.nan


def record_of(
    sweep: Sweep, point: Point, attempt: int, run_dir: Path, wall_s: float, sweep_file: str | None = None
) -> RunRecord:
    """The row of a finished run: the point, its validity (``summary.json`` ``valid``; a summary
    from before validity was recorded counts as valid), its metrics and its behaviour key
    (``experiments.behaviour.run_key``)."""
    summary = read_summary(run_dir) or {}
    metrics, flows = run_metrics(summary, read_json(run_dir / "scenario.json"))
    routers = [
        c
        for f in sorted((run_dir / "routers").glob("sta*.counters.json"))
        if isinstance(c := read_json(f), dict)
    ]
    metrics.update(rto_policy_metrics(routers))
    validity = summary.get("validity") if isinstance(summary.get("validity"), dict) else {}
    assert isinstance(validity, dict)
    reasons = tuple(str(r) for r in validity.get("reasons") or [])
    tcp = summary.get("tcp_profile") if isinstance(summary.get("tcp_profile"), dict) else {}
    assert isinstance(tcp, dict)
    routing = summary.get("routing_profile") if isinstance(summary.get("routing_profile"), dict) else {}
    assert isinstance(routing, dict)
    if (fault := cc_fault_reason(metrics)) is not None:
        reasons = (*reasons, fault)
    revision = _revision(run_dir)
    run_id = str(summary.get("run_id", run_dir.name))
    return RunRecord(
        experiment=sweep.experiment,
        point_id=point.point_id,
        index=point.index,
        params={k: label(v) for k, v in point.params.items()},
        seed=point.seed,
        attempt=attempt,
        valid=bool(summary.get("valid", True)) and not reasons,
        invalid_reasons=reasons,
        metrics=metrics,
        signals={k: _float(validity.get(k)) for k in SIGNAL_COLS},
        flows=tuple(FlowRow(f["throughput_bps"], f["tcp_timeouts"], f["retransmits"]) for f in flows),
        duration_s=_float(summary.get("duration_s")),
        wall_s=wall_s,
        run_id=run_id,
        revision=revision,
        host=socket.gethostname(),
        finished_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        tcp_profile=str(tcp.get("profile") or LEGACY_PROFILE),
        tcp_digest=str(tcp.get("digest") or ""),
        routing_profile=str(routing.get("profile") or ""),
        routing_digest=str(routing.get("digest") or ""),
        behaviour=run_key(sweep, revision, run_id, sweep_file),
    )


# --------------------------------------------------------------------------------------------
# The runner


@dataclass
class Outcome:
    point: Point
    status: str  # complete | invalid | incomplete | failed
    run_dir: Path | None = None
    error: str | None = None
    attempts: int = 1
    record: RunRecord | None = None


@dataclass
class SweepReport:
    experiment: str
    exp_dir: Path
    rows_file: Path
    selected: int = 0
    skipped: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    drained: bool = False
    budget_exhausted: bool = False
    comparisons: list[Comparison] = field(default_factory=list)
    parallel: str = ""

    @property
    def ran(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        """Runs that gave no row (they raised or ended incomplete)."""
        return [o for o in self.outcomes if o.status in ("failed", "incomplete")]

    @property
    def reruns(self) -> list[Outcome]:
        """Runs that gave an invalid row and were run again."""
        return [o for o in self.outcomes if o.status == "invalid"]

    @property
    def completed(self) -> int:
        return sum(o.status == "complete" for o in self.outcomes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "exp_dir": str(self.exp_dir),
            "rows_file": str(self.rows_file),
            "selected": self.selected,
            "skipped": self.skipped,
            "ran": self.ran,
            "completed": self.completed,
            "failed": len(self.failed),
            "invalid_reruns": len(self.reruns),
            "interrupted": self.interrupted,
            "budget_exhausted": self.budget_exhausted,
            "parallel": self.parallel,
            "verdicts": [
                {
                    "block": dict(c.block),
                    "treatment": c.treatment,
                    "baseline": c.baseline,
                    "metric": c.metric,
                    "seeds": c.change.n,
                    "change_pct": c.change.value,
                    "low_pct": c.change.low,
                    "high_pct": c.change.high,
                    "verdict": c.verdict.value,
                }
                for c in self.comparisons
            ],
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


def shard_points(
    points: Sequence[Point], shard: tuple[int, int] | None, sweep: Sweep | None = None
) -> list[Point]:
    """The points of shard ``i/n``: those whose index % n == i (every point is in exactly one shard).

    A sequential sweep is sharded by block (all seeds and values of a block on one host), so that
    its stopping rule sees every pair."""
    if shard is None:
        return list(points)
    i, n = shard
    seq = sweep.sequential if sweep is not None else None
    if seq is not None:
        order: dict[tuple[tuple[str, str], ...], int] = {}
        for p in points:
            order.setdefault(block_key(p, seq.until.axis), len(order))
        return [p for p in points if order[block_key(p, seq.until.axis)] % n == i]
    return [p for p in points if p.index % n == i]


def parse_where(texts: Sequence[str]) -> list[tuple[str, str]]:
    """``--where AXIS=VALUE`` arguments -> (axis, value) pairs."""
    out = []
    for text in texts:
        axis, sep, value = text.partition("=")
        if not sep or not axis.strip() or not value.strip():
            raise ValueError(f"--where {text!r}: expected AXIS=VALUE, e.g. mobility.max_speed_mps=20")
        out.append((axis.strip(), value.strip()))
    return out


def where_points(points: Sequence[Point], where: Sequence[tuple[str, str]], sweep: Sweep) -> list[Point]:
    """The points whose axis ``a`` has the value (label) ``v`` for every ``(a, v)`` in ``where``:
    a claim's points first, e.g. the highest speed of a paper whose claims are made there.

    Rows are the same as the full sweep's (point ids do not depend on the filter), so the rest
    runs later with nothing paid twice. A sequential sweep cannot be filtered on its paired axis
    (``until.axis``): its stopping rule needs every variant of a block."""
    axes = {k for p in points for k in p.params}
    seq = sweep.sequential
    for axis, value in where:
        if axis not in axes:
            raise ValueError(f"--where {axis}={value}: no axis {axis!r} (axes: {', '.join(sorted(axes))})")
        if seq is not None and axis == seq.until.axis:
            raise ValueError(
                f"--where {axis}={value}: {axis!r} is the paired axis of the stopping rule; "
                "filter on the others"
            )
        values = sorted({label(p.params[axis]) for p in points})
        if value not in values:
            raise ValueError(f"--where {axis}={value}: no such value (values: {', '.join(values)})")
    return [p for p in points if all(label(p.params[a]) == v for a, v in where)]


def parse_duration(text: str) -> float:
    """``2h``, ``90m``, ``1h30m``, ``45s`` or a number of seconds -> seconds."""
    m = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or m is None or not any(m.groups()):
        raise ValueError(f"duration {text!r}: expected e.g. 2h, 90m, 1h30m or 3600s")
    h, mi, se = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + se


def _params_text(point: Point) -> str:
    return " ".join(f"{k}={label(v)}" for k, v in point.params.items()) + f" seed={point.seed}"


class Progress(Protocol):
    def started(self, point: Point, running: int, limit: int) -> None: ...
    def finished(self, outcome: Outcome, report: SweepReport, plan: Plan, left_s: float | None) -> None: ...
    def note(self, text: str) -> None: ...


class _NoProgress:
    def started(self, point: Point, running: int, limit: int) -> None:
        pass

    def finished(self, outcome: Outcome, report: SweepReport, plan: Plan, left_s: float | None) -> None:
        pass

    def note(self, text: str) -> None:
        pass


#: Times an invalid run of one point is run again within one invocation (then the next
#: invocation tries again): a host too loaded for even one run must not loop forever.
MAX_INVALID_RERUNS: Final = 3


def run_points(
    sweep: Sweep,
    points: Sequence[Point],
    *,
    out_root: str | Path = "results",
    data_dir: str | Path = DATA_DIR,
    run_fn: RunFunction = subprocess_run,
    parallel: int | Concurrency = 1,
    retries: int = 0,
    max_reruns: int = MAX_INVALID_RERUNS,
    progress: Progress | None = None,
    sweep_file: str | None = None,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    host_busy: Callable[[], float] = lambda: 0.0,
    start_gap_s: float = 0.0,
    on_valid: Callable[[Point, Path, RunRecord], None] | None = None,
    seed_cap: int | None = None,
) -> SweepReport:
    """Run the points that have no valid row yet, as the plan hands them out; return what happened.

    A point is done when ``<data_dir>/<experiment>.csv`` has a valid row for its id. Each finished
    run appends its row (valid or not). An invalid run is run again (``max_reruns`` times), a run
    that raised or ended incomplete ``retries`` times; anything left is run by the next invocation.
    ``budget_s``: no run starts that would not end before the budget (its expected wall time is the
    mean of this experiment's rows, else the scenario's duration plus a minute).
    KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) stops the running runs (SIGTERM: they tear down,
    their rows are not written) and re-raises. ``DRAIN`` set (SIGUSR1 to the sweep process) stops
    starting runs and lets the running ones finish and write their rows; then the sweep returns
    with ``drained`` (the way to stop a long sweep without losing the runs in flight).
    ``on_valid(point, run_dir, record)`` is called (in this thread) after the row of each valid run
    that left a run folder here: a study that keeps more per run than the row (experiments.multihop).
    """
    exp_dir = Path(out_root) / sweep.experiment
    exp_dir.mkdir(parents=True, exist_ok=True)
    store = RowStore(sweep.experiment, data_dir)
    store.add_columns(list(METRICS))  # a metric added since the file was begun gets its column
    all_ids = {p.point_id: p.index for p in expand(sweep)}
    loaded = store.load(all_ids)
    # issue 48, item 5: only the rows of the code and scenario files on disk now are pooled
    current = sweep_key(sweep, sweep_file)
    counted = loaded.counted(behaviour=current)
    plan = Plan(sweep, points, counted, seed_cap=seed_cap)
    index = SweepIndex(exp_dir)
    report = SweepReport(sweep.experiment, exp_dir, store.path, selected=len(points))
    ids = {p.point_id for p in points}
    report.skipped = sum(r.point_id in ids for r in counted)
    prog = progress or _NoProgress()
    for problem in loaded.problems:
        prog.note(f"skipped row: {problem}")
    other = [r for r in loaded.records if r.valid and r.behaviour != current and r.point_id in all_ids]
    if other:
        keys = sorted({r.behaviour or "none" for r in other})
        prog.note(
            f"not pooled: {len(other)} valid rows ran other code or scenario files (behaviour "
            f"{', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}; now {current}; docs/experiments.md "
            "'Behaviour keys')"
        )
    conc: Concurrency = FixedParallel(parallel) if isinstance(parallel, int) else parallel
    report.parallel = conc.describe()
    axes = list(sweep.axes())
    walls = [r.wall_s for r in counted if r.wall_s > 0]
    started_at = clock()

    def expected_wall() -> float:
        if walls:
            return sum(walls) / len(walls)
        return _scenario_duration(sweep) + 60.0

    def attempt(point: Point, n: int) -> Outcome:
        req = RunRequest(
            sweep.scenario, point.seed, sweep.experiment, str(out_root), point.overrides, point.point_id, n
        )
        t0 = clock()
        try:
            result = run_fn(req)
        except RunFailed as exc:
            return Outcome(point, "failed", exc.run_dir, str(exc), n)
        except Exception as exc:  # noqa: BLE001 - one failed run must not stop the sweep
            return Outcome(point, "failed", None, f"{type(exc).__name__}: {exc}", n)
        if isinstance(result, RunRecord):  # run elsewhere (experiments.distributed): the row came back
            if not result.behaviour:  # the engine checked that it ran at the controller's revision
                result = dataclasses.replace(result, behaviour=current)
            status = "complete" if result.valid else "invalid"
            return Outcome(point, status, None, "; ".join(result.invalid_reasons) or None, n, result)
        run_dir = Path(result)
        if not is_complete(run_dir):
            return Outcome(point, "incomplete", run_dir, "summary.json not complete", n)
        rec = record_of(sweep, point, n, run_dir, clock() - t0, sweep_file)
        status = "complete" if rec.valid else "invalid"
        return Outcome(point, status, run_dir, "; ".join(rec.invalid_reasons) or None, n, rec)

    def record(o: Outcome) -> None:
        if o.record is not None:
            store.append(o.record, axes, list(METRICS))
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
                    "axes": list(o.point.params),
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
        if on_valid is not None and o.record is not None and o.record.valid and o.run_dir is not None:
            if o.run_dir.is_dir():  # last: the callback may remove the folder once it has read it
                on_valid(o.point, o.run_dir, o.record)

    pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="sweep")
    running: dict[Future[Outcome], Point] = {}
    again: list[tuple[Point, int]] = []  # (point, next attempt): re-runs go first
    last_start = -math.inf

    def busy() -> set[str]:
        return {p.point_id for p in running.values()} | {p.point_id for p, _ in again}

    def left() -> float | None:
        return None if budget_s is None else budget_s - (clock() - started_at)

    try:
        while True:
            if DRAIN.is_set() and not report.drained:
                report.drained = True
                prog.note(f"draining: no more runs start; waiting for the {len(running)} running")
            while not report.drained and len(running) < conc.limit() and clock() - last_start >= start_gap_s:
                remaining = left()
                if remaining is not None and remaining < expected_wall():
                    report.budget_exhausted = True
                    break
                if again:
                    point, n = again.pop(0)
                else:
                    nxt = plan.next_point(busy())
                    if nxt is None:
                        break
                    point, n = nxt, 1
                running[pool.submit(attempt, point, n)] = point
                last_start = clock()
                prog.started(point, len(running), conc.limit())
            if not running:
                if again and not report.budget_exhausted and not report.drained:
                    continue
                break
            finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                running.pop(fut)
                outcome = fut.result()
                record(outcome)
                if outcome.record is not None and outcome.record.behaviour != current:
                    # the code or a scenario file changed under the sweep: its row is kept, not
                    # pooled; start nothing more (the next invocation plans under the new key)
                    prog.note(
                        f"behaviour changed under the sweep ({current} -> {outcome.record.behaviour}): "
                        "draining; run the sweep again"
                    )
                    DRAIN.set()
                    report.outcomes.append(outcome)
                    prog.finished(outcome, report, plan, left())
                    continue
                if outcome.record is not None:
                    if outcome.record.wall_s > 0:
                        walls.append(outcome.record.wall_s)
                    plan.add(outcome.record)
                    change = conc.observe(outcome.record, host_busy())
                    if change:
                        prog.note(change)
                retried = outcome.status in ("failed", "incomplete") and outcome.attempts <= retries
                if not retried:  # a run retried after a failure counts once, as its last attempt
                    report.outcomes.append(outcome)
                if outcome.status == "invalid":
                    if outcome.attempts <= max_reruns:
                        prog.note(
                            f"re-run {_params_text(outcome.point)} (attempt {outcome.attempts + 1}): "
                            f"invalid: {outcome.error}"
                        )
                        again.append((outcome.point, outcome.attempts + 1))
                    else:
                        plan.give_up(outcome.point)
                elif outcome.status != "complete":
                    if outcome.attempts <= retries:
                        again.append((outcome.point, outcome.attempts + 1))
                    else:
                        plan.give_up(outcome.point)
                prog.finished(outcome, report, plan, left())
    except KeyboardInterrupt:
        report.interrupted = True
        CHILDREN.signal_all(signal.SIGTERM)
        for fut in running:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        for fut in running:
            if fut.done() and not fut.cancelled():
                record(fut.result())
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        report.comparisons = plan.comparisons()
    return report


def _scenario_duration(sweep: Sweep) -> float:
    dur = sweep.set.get("duration_s")
    if isinstance(dur, int | float):
        return float(dur)
    try:
        from topologies.scenario import load_scenario

        return float(load_scenario(sweep.scenario).duration_s)
    except Exception:  # noqa: BLE001 - only an estimate
        return 60.0


# --------------------------------------------------------------------------------------------
# Progress


class PrintProgress:
    """One line per finished run and per change of the limit on stderr: runs done, re-runs,
    verdicts so far, time left."""

    def __init__(self, sweep: Sweep, total: int, skipped: int, print_fn: Callable[[str], None]) -> None:
        self.sweep = sweep
        self.total = total
        self.done = skipped
        self.print = print_fn
        self.started_at = time.monotonic()
        self._lock = threading.Lock()

    def started(self, point: Point, running: int, limit: int) -> None:
        with self._lock:
            self.print(f"  start {_params_text(point)} ({running} running, limit {limit})")

    def note(self, text: str) -> None:
        with self._lock:
            self.print(f"  {text}")

    def finished(self, outcome: Outcome, report: SweepReport, plan: Plan, left_s: float | None) -> None:
        with self._lock:
            if outcome.status == "complete":
                self.done += 1
            rec = outcome.record
            thr = rec.metric("throughput_total_bps") if rec else math.nan
            verdicts = plan.verdict_counts()
            vtext = ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items())) or "-"
            elapsed = time.monotonic() - self.started_at
            tleft = "" if left_s is None else f", budget left {max(0.0, left_s) / 60:.0f} min"
            self.print(
                f"[{self.sweep.experiment}] {outcome.status} {_params_text(outcome.point)}"
                f"{'' if math.isnan(thr) else f' {thr / 1e3:.1f} kbit/s'}"
                f"{f' ({outcome.error})' if outcome.error else ''} | done {self.done}, "
                f"re-runs {len(report.reruns)}, failed {len(report.failed)}, still wanted "
                f"{plan.remaining_estimate()}, verdicts: {vtext} | {elapsed / 60:.1f} min{tleft}"
            )


# --------------------------------------------------------------------------------------------
# Command line


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


DRAIN: Final = threading.Event()
"""Set by SIGUSR1 (``kill -USR1 <sweep pid>``): start no more runs, let the running ones finish."""


def _drain(signum: int, frame: FrameType | None) -> None:
    DRAIN.set()


def copy_sweep_file(sweep_path: str | Path, exp_dir: Path) -> None:
    """Keep the sweep file with its results (analysis reads only ``results/``)."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    dst = exp_dir / SWEEP_COPY
    src = Path(sweep_path)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        tmp = dst.with_name(f".{dst.name}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)


def valid_records(sweep: Sweep, data_dir: str | Path) -> list[RunRecord]:
    """The first valid row of each point of ``sweep`` in ``<data_dir>/<experiment>.csv``."""
    all_ids = {p.point_id: p.index for p in expand(sweep)}
    return RowStore(sweep.experiment, data_dir).load(all_ids).counted()


def _done_ids(sweep: Sweep, data_dir: str | Path) -> set[str]:
    return {r.point_id for r in valid_records(sweep, data_dir)}


def _dry_run(
    sweep: Sweep, points: list[Point], data_dir: str | Path, print_fn: Callable[[str], None]
) -> None:
    from rich.console import Console
    from rich.table import Table

    done = _done_ids(sweep, data_dir)
    seq = sweep.sequential
    shown = points if seq is None else [p for p in points if p.seed < seq.first + seq.min]
    title = f"{sweep.experiment}: {len(points)} points ({sweep.scenario})"
    if seq is not None:
        title += f"; sequential: {seq.min}..{seq.max} seeds per block, the first {seq.min} shown"
    table = Table(title=title)
    for col in ("#", "point id", *sweep.axes(), "seed", "status"):
        table.add_column(col)
    for p in shown:
        status = "done" if p.point_id in done else "to run"
        table.add_row(str(p.index), p.point_id, *(label(v) for v in p.params.values()), str(p.seed), status)
    Console().print(table)
    print_fn(
        f"{sum(p.point_id in done for p in points)} done, "
        f"{sum(p.point_id not in done for p in shown)} to run{'' if seq is None else ' at least'}"
    )


def _scenario_size(sweep: Sweep, point: Point) -> tuple[int, int]:
    """(stations, flows) of a point's scenario, for the cost estimate."""
    from topologies.scenario import load_scenario

    sc = load_scenario(sweep.scenario, point.overrides)
    flows = len(sc.traffic.tcp) + len(sc.traffic.udp)
    return sc.stations.count, flows


_SIZE_OVERRIDE = re.compile(r"^(stations\b.*|traffic(\.\w+)?(\[\d+\])?)$")
"""Overrides that can change a scenario's station or flow count (what ``--parallel auto`` sizes by)."""
_FLOW_INDEX = re.compile(r"^traffic\.(\w+)\[(\d+)\]")


def _size_key(point: Point) -> str:
    """Points with equal keys have the same station and flow counts: only one is loaded."""
    keep: dict[str, object] = {k: v for k, v in point.overrides.items() if _SIZE_OVERRIDE.match(k)}
    for k in point.overrides:
        m = _FLOW_INDEX.match(k)
        if m:  # an override of flow i implies at least i + 1 flows of that kind
            keep[f"#{m[1]}"] = max(int(m[2]), int(str(keep.get(f"#{m[1]}", 0))))
    return json.dumps(keep, sort_keys=True, default=str)


def make_concurrency(text: str, sweep: Sweep, points: Sequence[Point], data_dir: str | Path) -> Concurrency:
    """``--parallel N`` or ``auto`` (``experiments.capacity``)."""
    if text != "auto":
        n = int(text)
        if n < 1:
            raise ValueError("--parallel must be >= 1 or auto")
        return FixedParallel(n)
    # the largest scenario of the selection (a sweep may vary the station count: experiments.multihop)
    sizes = {_size_key(p): p for p in points}
    stations, flows = max((_scenario_size(sweep, p) for p in sizes.values()), default=(1, 1))
    rows = RowStore(sweep.experiment, data_dir).load().records
    cost = measured_cost(rows) or DEFAULT_MODEL.estimate(stations, flows)
    return AutoParallel(cores(), cost, mem_available_mb(), stations)


def run_points_here(
    sweep: Sweep,
    points: Sequence[Point],
    conc: Concurrency,
    *,
    skipped: int = 0,
    out_root: str | Path = "results",
    data_dir: str | Path = DATA_DIR,
    run_fn: RunFunction = subprocess_run,
    retries: int = 0,
    max_reruns: int = MAX_INVALID_RERUNS,
    sweep_file: str | None = None,
    budget_s: float | None = None,
    on_valid: Callable[[Point, Path, RunRecord], None] | None = None,
    seed_cap: int | None = None,
) -> SweepReport:
    """``run_points`` as a command runs it on this host: progress on stderr, the host's CPU sampled
    for the validity signals, and ``--parallel auto``'s gap between starts."""
    prog = PrintProgress(sweep, len(points), skipped, lambda t: print(t, file=sys.stderr, flush=True))
    with SweepHostSampler() as sampler:
        return run_points(
            sweep,
            points,
            out_root=out_root,
            data_dir=data_dir,
            run_fn=run_fn,
            parallel=conc,
            retries=retries,
            max_reruns=max_reruns,
            progress=prog,
            sweep_file=sweep_file,
            budget_s=budget_s,
            host_busy=sampler.busy,
            start_gap_s=DEFAULT_MODEL.start_gap_s if isinstance(conc, AutoParallel) else 0.0,
            on_valid=on_valid,
            seed_cap=seed_cap,
        )


def main(argv: list[str] | None = None, run_fn: RunFunction = subprocess_run) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("sweep", help="sweep file (YAML), e.g. experiments/sweeps/smoke.yaml")
    ap.add_argument(
        "--parallel", "-j", default="1", help="runs at a time: N, or auto (docs/experiments.md; default 1)"
    )
    ap.add_argument("--shard", default=None, help="run only points with index %% n == i, as i/n (0-based)")
    ap.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="AXIS=VALUE",
        help="run only the points with this axis value, e.g. mobility.max_speed_mps=20 (repeatable)",
    )
    ap.add_argument(
        "--scheduler",
        default=None,
        metavar="HOST:PORT",
        help="spread the runs over hosts: start a Dask scheduler here for their workers "
        "(experiments.distributed, docs/ansible.md)",
    )
    ap.add_argument(
        "--no-worker-timeout",
        type=float,
        default=None,
        help="with --scheduler: fail the waiting runs after this long with no host connected (s)",
    )
    ap.add_argument("--out", default="results", help="results root for run directories (default results)")
    ap.add_argument("--data", default=str(DATA_DIR), help=f"rows folder, kept in git (default {DATA_DIR})")
    ap.add_argument("--experiment", default=None, help="override the sweep file's experiment name")
    ap.add_argument(
        "--retries", type=int, default=0, help="run a failed point again up to N times (default 0)"
    )
    ap.add_argument(
        "--max-reruns",
        type=int,
        default=MAX_INVALID_RERUNS,
        help=f"run an invalid run again up to N times (default {MAX_INVALID_RERUNS})",
    )
    ap.add_argument("--budget", default=None, help="start no run that would end after this, e.g. 2h, 90m")
    ap.add_argument(
        "--max-seeds",
        type=int,
        default=None,
        metavar="N",
        help="sequential sweeps: grow no block beyond N seeds in this invocation (e.g. every "
        "claim's minimum first; a later invocation without it goes on towards seeds.max)",
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
        where = parse_where(args.where)
        budget_s = parse_duration(args.budget) if args.budget else None
    except (SweepError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.experiment:
        sweep = sweep.model_copy(update={"experiment": args.experiment})
    if args.max_seeds is not None and args.max_seeds < 1:
        print("error: --max-seeds must be >= 1", file=sys.stderr)
        return 2
    if args.retries < 0 or args.max_reruns < 0:
        print("error: --retries and --max-reruns must be >= 0", file=sys.stderr)
        return 2
    all_points = expand(sweep)
    try:
        points = shard_points(where_points(all_points, where, sweep), shard, sweep)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
    try:
        conc = make_concurrency(str(args.parallel), sweep, points, args.data)
    except ValueError as exc:
        print(f"error: --parallel {args.parallel}: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        _dry_run(sweep, points, args.data, print)
        print(conc.describe())
        return 0

    if args.scheduler and shard is not None:
        print(
            "error: --scheduler hands runs out to hosts as they free up: no --shard with it", file=sys.stderr
        )
        return 2
    controller = None
    if args.scheduler:
        from experiments.distributed import DEFAULT_NO_WORKER_TIMEOUT_S, start_controller

        try:
            controller = start_controller(
                args.scheduler,
                args.sweep,
                lambda t: print(f"  {t}", file=sys.stderr, flush=True),
                args.no_worker_timeout or DEFAULT_NO_WORKER_TIMEOUT_S,
            )
        except (ValueError, OSError) as exc:
            print(f"error: --scheduler {args.scheduler}: {exc}", file=sys.stderr)
            return 2
        for w in controller.warnings:
            print(f"warning: {w}", file=sys.stderr)
        print(f"scheduler {controller.scheduler.address} (revision {controller.revision})", file=sys.stderr)
        conc, run_fn = controller.slots, controller.runs
    copy_sweep_file(args.sweep, exp_dir)
    done_before = _done_ids(sweep, args.data)
    skipped = sum(p.point_id in done_before for p in points)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    signal.signal(signal.SIGUSR1, _drain)
    started = time.monotonic()
    shard_txt = f" shard {args.shard}" if args.shard else ""
    seq = sweep.sequential
    print(
        f"sweep {sweep.experiment}{shard_txt}: {len(points)} of {len(all_points)} points"
        f"{f' (sequential, {seq.min}..{seq.max} seeds per block)' if seq else ''}, "
        f"{skipped} already have a valid row in {RowStore(sweep.experiment, args.data).path}; "
        f"{conc.describe()}",
        file=sys.stderr,
    )
    try:
        report = run_points_here(
            sweep,
            points,
            conc,
            skipped=skipped,
            out_root=args.out,
            data_dir=args.data,
            run_fn=run_fn,
            retries=args.retries,
            max_reruns=args.max_reruns,
            sweep_file=args.sweep,
            budget_s=budget_s,
            seed_cap=args.max_seeds,
        )
    except KeyboardInterrupt:
        print("interrupted: run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        if controller is not None:
            controller.close()
    elapsed = time.monotonic() - started
    print(
        f"sweep {sweep.experiment}{shard_txt}: ran {report.ran} ({report.completed} valid, "
        f"{len(report.reruns)} invalid and re-run, {len(report.failed)} not complete), skipped "
        f"{report.skipped}, {elapsed:.0f} s{'; budget reached' if report.budget_exhausted else ''}; "
        f"rows in {report.rows_file}",
        file=sys.stderr,
    )
    for o in report.failed:
        print(f"  {o.status}: {_params_text(o.point)}: {o.error}", file=sys.stderr)
    if report.drained:
        print(
            "drained (SIGUSR1): the runs in flight finished; run the same command again to resume",
            file=sys.stderr,
        )
    for c in report.comparisons:
        block = ", ".join(f"{k}={v}" for k, v in c.block)
        print(
            f"  {c.treatment} vs {c.baseline} [{block}]: {c.change.value:+.1f} % "
            f"[{c.change.low:+.1f}, {c.change.high:+.1f}] over {c.change.n} seeds: {c.verdict.value}",
            file=sys.stderr,
        )
    if not args.no_aggregate:
        from experiments.aggregate import aggregate, load_rows

        written = aggregate(
            load_rows(sweep.experiment, args.data, {p.point_id: p.index for p in all_points}), exp_dir
        )
        for path, changed in written.items():
            print(f"{path}: {'written' if changed else 'unchanged'}", file=sys.stderr)
    if args.json_report:
        print(json.dumps(report.as_dict(), sort_keys=True))
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
