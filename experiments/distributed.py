"""Multi-host sweeps on Dask distributed: hosts pull runs as they free up (issue 17).

Issue 17, item 2: "hosts pull runs as they free up, a run is handed out again when its host
disappears, and each run's row is recorded exactly once (``docs/results/data/<experiment>.csv``).
Use an existing, well-kept engine for this rather than a queue of our own". The engine is Dask
distributed (docs/ansible.md says why): the controller's sweep (``python -m experiments.sweep
SWEEP --scheduler HOST:PORT``) starts a Dask scheduler; every host runs one Dask worker
(``python -m experiments.distributed worker tcp://HOST:PORT ...`` in its checkout, started by
``playbooks/sweep.yml`` or ``workers.yml``) with as many threads as its ``--parallel auto`` starts
with. The sweep's runner (``experiments.sweep.run_points``) is unchanged: its ``RunFunction`` here
(``DaskRuns``) submits one task per run and blocks its thread until the row comes back;
its ``Concurrency`` (``DaskSlots``) is the number of worker threads connected now, so a host
that joins gets work at once and a host that leaves takes its slots with it. Dask's scheduler
queues the tasks and hands one to a worker whenever one of its threads frees up; the tasks of a
worker that disappears are handed out again (Dask's ``allowed-failures`` times).

The task (``run_task``, on the worker, in the host's checkout) first checks the host: root, the
controller's git revision, and the sweep definition (the point id is one of the host's own sweep
file's points with the same seed). A host that fails is refused with ``HostRefused`` naming the
host and the cause; the controller reports it, retires that worker and hands the run to the
others. Then the task runs the point as the one-host sweep does (``experiments.sweep.
subprocess_run``: ``python -m experiments.worker`` in the host's checkout) and returns its
``RunRecord``. The controller checks the row again (revision, point id, seed) and only then
``run_points`` appends it, in one place, once: a run has one future, and a future one result.

Static ``--shard i/n`` (no scheduler) stays as the fallback that needs no engine.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from experiments.rows import RunRecord
from experiments.spec import Sweep, SweepError, expand, load_sweep
from experiments.sweep import RunFailed, RunRequest, record_of, subprocess_run

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

log = logging.getLogger(__name__)

#: Seconds a sweep waits with no worker connected before its runs fail (they run again on the
#: next invocation): long enough for Ansible to start the workers, short enough to notice.
DEFAULT_NO_WORKER_TIMEOUT_S: Final = 600.0
#: Where a host writes its run directories, relative to its checkout (``testbed_sweep_results``):
#: the controller's ``--out`` is a path on the controller.
HOST_RESULTS: Final = "results"
#: How often the controller looks at the scheduler's worker list (slots, new hosts).
WORKERS_POLL_S: Final = 1.0


class HostRefused(Exception):
    """A host that must not run this sweep's points: its message names the host and the cause;
    ``worker`` is its Dask worker's address when a task found out."""

    def __init__(self, message: str, worker: str = "") -> None:
        super().__init__(message, worker)
        self.message = message
        self.worker = worker

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------------
# What the controller asks of a host, and the host's checks


@dataclass(frozen=True, slots=True)
class PointTask:
    """One run, as the controller hands it to a worker."""

    sweep_file: str  # relative to the host's checkout
    experiment: str
    point_id: str
    seed: int
    attempt: int
    out_root: str  # relative to the host's checkout
    revision: str  # the controller's (12 hex digits)


def revision_of(repo: Path) -> tuple[str, bool]:
    """(12-hex git revision, dirty) of the checkout at ``repo``, as runs record it; ("", False) if
    it is not a git checkout."""
    from testbed.results import git_revision

    info = git_revision(repo)
    return str(info["rev"] or "")[:12], bool(info["dirty"])


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What a host's checks look at (gathered by ``host_facts``; a seam for the unit tests)."""

    name: str
    uid: int
    revision: str
    dirty: bool
    checkout: str


def host_facts(name: str, checkout: Path | None = None) -> HostFacts:
    repo = (checkout or Path.cwd()).resolve()
    rev, dirty = revision_of(repo)
    return HostFacts(name, os.geteuid(), rev, dirty, str(repo))


def check_host(facts: HostFacts, revision: str) -> None:
    """Raise ``HostRefused`` unless the host runs as root and has the controller's revision,
    without local changes."""
    where = f"host {facts.name} ({facts.checkout})"
    if facts.uid != 0:
        raise HostRefused(f"{where}: runs as uid {facts.uid}, not root (runs need network namespaces)")
    if not facts.revision:
        raise HostRefused(f"{where}: not a git checkout (run playbooks/provision.yml)")
    if revision and facts.revision != revision:
        raise HostRefused(
            f"{where}: git revision {facts.revision}, the controller's is {revision} "
            "(run playbooks/provision.yml to bring it to the controller's revision)"
        )
    if facts.dirty:
        raise HostRefused(f"{where}: revision {facts.revision} with local changes (git status)")


def check_definition(name: str, sweep: Sweep, point_id: str, seed: int) -> None:
    """Raise ``HostRefused`` unless the host's own sweep definition has this point with this seed."""
    for p in expand(sweep):
        if p.point_id == point_id:
            if p.seed != seed:
                raise HostRefused(f"host {name}: point {point_id} has seed {p.seed} there, {seed} here")
            return
    raise HostRefused(
        f"host {name}: point {point_id} (seed {seed}) is not in its sweep definition "
        f"{sweep.experiment!r}: the sweep file differs from the controller's"
    )


def load_host_sweep(name: str, sweep_file: str, experiment: str) -> Sweep:
    try:
        sweep = load_sweep(sweep_file)
    except (SweepError, OSError) as exc:
        raise HostRefused(f"host {name}: cannot load the sweep file: {exc}") from exc
    return sweep.model_copy(update={"experiment": experiment}) if experiment != sweep.experiment else sweep


# --------------------------------------------------------------------------------------------
# The task, on the worker

RunOne = Callable[[RunRequest], Path]


def this_worker() -> tuple[str, str]:
    """(name, address) of the Dask worker running the calling task: the name is the host's in
    rows and messages (its worker's ``--name``, the inventory name)."""
    from distributed import get_worker

    try:
        w = get_worker()
    except ValueError:  # not in a worker (tests call run_task directly)
        return socket.gethostname(), ""
    return str(w.name), str(w.address)


def run_task(task: PointTask, run_fn: RunOne = subprocess_run) -> RunRecord:
    """Run one point on this host (a worker thread; the working directory is the host's checkout)
    and return its row. Raises ``HostRefused`` when the host must not run it, ``RunFailed`` when
    the run gave no complete run directory."""
    name, address = this_worker()
    try:
        check_host(host_facts(name), task.revision)
        sweep = load_host_sweep(name, task.sweep_file, task.experiment)
        check_definition(name, sweep, task.point_id, task.seed)
    except HostRefused as exc:
        raise HostRefused(exc.message, address) from None
    point = next(p for p in expand(sweep) if p.point_id == task.point_id)
    req = RunRequest(
        sweep.scenario,
        point.seed,
        sweep.experiment,
        task.out_root,
        point.overrides,
        point.point_id,
        task.attempt,
    )
    t0 = time.monotonic()
    run_dir = Path(run_fn(req))
    from experiments.rundirs import is_complete

    if not is_complete(run_dir):
        raise RunFailed(f"host {name}: summary.json not complete", run_dir)
    rec = record_of(sweep, point, task.attempt, run_dir, time.monotonic() - t0)
    return dataclasses.replace(rec, host=name)


# --------------------------------------------------------------------------------------------
# The controller: a scheduler, the run function and the slots


def check_row(rec: RunRecord, task: PointTask) -> str | None:
    """Why the controller refuses a row a host sent back (None: accepted)."""
    if rec.point_id != task.point_id or rec.seed != task.seed:
        return f"row for point {rec.point_id} seed {rec.seed}, asked for {task.point_id} seed {task.seed}"
    if rec.experiment != task.experiment:
        return f"row of experiment {rec.experiment!r}, not {task.experiment!r}"
    if task.revision and rec.revision != task.revision:
        return f"row made at revision {rec.revision or '?'}, the controller's is {task.revision}"
    return None


class Scheduler:
    """A Dask scheduler on the controller (``LocalCluster`` with no local workers) and a client."""

    def __init__(self, address: str) -> None:
        from distributed import Client, LocalCluster

        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"scheduler address {address!r}: expected HOST:PORT, e.g. 10.0.0.1:8786")
        self.cluster: LocalCluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=0,
            host=host.strip("[]"),
            scheduler_port=int(port),
            dashboard_address=None,
            processes=False,
        )
        self.client: Client = Client(self.cluster)  # type: ignore[no-untyped-call]
        self.address: str = self.cluster.scheduler_address

    def close(self, stop_workers: bool = True) -> None:
        """Close the scheduler; ``stop_workers`` tells the connected workers to exit first."""
        try:
            if stop_workers:
                workers = list(self.client.scheduler_info(n_workers=-1).get("workers", {}))
                if workers:
                    self.client.retire_workers(workers=workers, close_workers=True)
        except Exception as exc:  # noqa: BLE001 - closing anyway
            log.warning("could not retire the workers: %s", exc)
        self.client.close()  # type: ignore[no-untyped-call]
        self.cluster.close()


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    address: str
    name: str
    nthreads: int


def workers_of(client: Client) -> list[WorkerInfo]:
    info = client.scheduler_info(n_workers=-1).get("workers", {})
    return [WorkerInfo(addr, str(w.get("name", addr)), int(w.get("nthreads", 1))) for addr, w in info.items()]


class DaskSlots:
    """The sweep's ``Concurrency``: one slot per worker thread connected now (at least one, so
    that a run waits in the scheduler's queue for the first worker)."""

    def __init__(self, client: Client, note: Callable[[str], None] = lambda _t: None) -> None:
        self.client = client
        self.note = note
        self._lock = threading.Lock()
        self._at = -1e9
        self._workers: dict[str, WorkerInfo] = {}
        self.last_worker_at = time.monotonic()

    def refresh(self, force: bool = False) -> dict[str, WorkerInfo]:
        with self._lock:
            if force or time.monotonic() - self._at >= WORKERS_POLL_S:
                self._at = time.monotonic()
                try:
                    now = {w.address: w for w in workers_of(self.client)}
                except Exception as exc:  # noqa: BLE001 - scheduler busy: keep the last list
                    log.debug("scheduler_info failed: %s", exc)
                    return self._workers
                for addr in now.keys() - self._workers.keys():
                    w = now[addr]
                    self.note(f"host {w.name} joined ({w.nthreads} runs at a time, {addr})")
                for addr in self._workers.keys() - now.keys():
                    self.note(f"host {self._workers[addr].name} left ({addr}): its runs are handed out again")
                self._workers = now
                if now:
                    self.last_worker_at = time.monotonic()
            return self._workers

    def limit(self) -> int:
        return max(1, sum(w.nthreads for w in self.refresh().values()))

    def observe(self, rec: RunRecord, host_busy: float) -> str | None:
        return None  # each host's worker has its own number of threads

    def describe(self) -> str:
        ws = self.refresh(force=True)
        hosts = ", ".join(f"{w.name} x{w.nthreads}" for w in ws.values()) or "none yet"
        return f"distributed: {sum(w.nthreads for w in ws.values())} slots on {len(ws)} hosts ({hosts})"


class DaskRuns:
    """The sweep's ``RunFunction`` on Dask: submit the point, wait for its row.

    A ``HostRefused`` from a host is reported (naming the host and the cause), that worker is
    retired, and the run is submitted again for the others; so is a row the controller refuses.
    """

    def __init__(
        self,
        client: Client,
        sweep_file: str,
        revision: str,
        slots: DaskSlots,
        note: Callable[[str], None] = lambda _t: None,
        no_worker_timeout_s: float = DEFAULT_NO_WORKER_TIMEOUT_S,
        task_fn: Callable[[PointTask], RunRecord] = run_task,
    ) -> None:
        self.client = client
        self.sweep_file = sweep_file
        self.revision = revision
        self.slots = slots
        self.note = note
        self.no_worker_timeout_s = no_worker_timeout_s
        self.task_fn = task_fn
        self.refused: dict[str, str] = {}  # worker address -> why
        self._lock = threading.Lock()

    def _refuse(self, worker: str | None, why: str) -> None:
        """Report a refused host once and retire its worker (its queued runs go to the others)."""
        with self._lock:
            first = worker not in self.refused if worker else why not in self.refused.values()
            self.refused[worker or why] = why
        if first:
            self.note(f"refused: {why}")
        if first and worker:
            try:
                self.client.retire_workers(workers=[worker], close_workers=True)
            except Exception as exc:  # noqa: BLE001 - it may be gone already
                log.debug("retire %s: %s", worker, exc)

    def _wait(self, fut: Future[RunRecord]) -> RunRecord:
        from distributed import TimeoutError as DaskTimeout

        while True:
            try:
                result: RunRecord = fut.result(timeout=WORKERS_POLL_S)
                return result
            except (DaskTimeout, TimeoutError):
                if self.slots.refresh() or fut.status != "pending":
                    continue
                idle = time.monotonic() - self.slots.last_worker_at
                if idle > self.no_worker_timeout_s:
                    fut.cancel()  # type: ignore[no-untyped-call]
                    raise RunFailed(f"no host connected to the scheduler for {idle:.0f} s") from None

    def __call__(self, request: RunRequest) -> RunRecord:
        task = PointTask(
            self.sweep_file,
            request.experiment,
            request.point_id,
            request.seed,
            request.attempt,
            HOST_RESULTS,
            self.revision,
        )
        while True:
            fut = self.client.submit(
                self.task_fn,
                task,
                pure=False,
                key=f"{request.point_id}-{request.attempt}-{time.monotonic_ns()}",
            )
            try:
                rec = self._wait(fut)
            except HostRefused as exc:
                self._refuse(exc.worker or None, exc.message)
                continue
            finally:
                fut.release()  # type: ignore[no-untyped-call]  # the row lives on here only
            why = check_row(rec, task)
            if why is not None:
                addr = next(
                    (a for a, w in self.slots.refresh(force=True).items() if w.name == rec.host), None
                )
                self._refuse(addr, f"host {rec.host}: {why}")
                continue
            return rec


@dataclass
class Controller:
    """What ``python -m experiments.sweep --scheduler`` runs the sweep with."""

    scheduler: Scheduler
    slots: DaskSlots
    runs: DaskRuns
    revision: str
    warnings: list[str]

    def close(self) -> None:
        self.scheduler.close(stop_workers=True)


def start_controller(
    address: str,
    sweep_file: str,
    note: Callable[[str], None],
    no_worker_timeout_s: float = DEFAULT_NO_WORKER_TIMEOUT_S,
    repo: Path | None = None,
) -> Controller:
    """Start the scheduler at ``address`` (HOST:PORT; port 0 picks one) for the sweep in
    ``sweep_file`` (a path inside the checkout, as the hosts find it in theirs)."""
    root = (repo or Path.cwd()).resolve()
    path = Path(sweep_file)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root)
        except ValueError:
            raise ValueError(
                f"{sweep_file}: not inside the checkout {root}, so the hosts do not have it"
            ) from None
    rev, dirty = revision_of(root)
    if not rev:
        raise ValueError(f"{root}: not a git checkout: hosts are checked against the controller's revision")
    warnings = []
    if dirty:
        warnings.append(
            f"the controller's checkout has uncommitted changes: the hosts run revision {rev} as committed"
        )
    sched = Scheduler(address)
    slots = DaskSlots(sched.client, note)
    runs = DaskRuns(sched.client, str(path), rev, slots, note, no_worker_timeout_s)
    return Controller(sched, slots, runs, rev, warnings)


# --------------------------------------------------------------------------------------------
# Static shards: the hosts' own rows files, merged on the controller


def merge_rows(sweep: Sweep, data_dir: str | Path, files: list[Path], revision: str) -> tuple[int, list[str]]:
    """Append to the controller's ``<data_dir>/<experiment>.csv`` the rows of the hosts' files
    (static shards write rows on each host) that it does not have yet (by point id and run id).
    A row is taken only if it is a point of this sweep definition and was made at ``revision``
    (when given). Returns (rows appended, what was skipped and why)."""
    from experiments.aggregate import METRICS
    from experiments.rows import RowStore

    store = RowStore(sweep.experiment, data_dir)
    ids = {p.point_id: p.index for p in expand(sweep)}
    have = {(r.point_id, r.run_id) for r in store.load(ids).records}
    axes = list(sweep.axes())
    added, notes = 0, []
    for f in files:
        if f.name != f"{sweep.experiment}.csv":
            notes.append(f"{f}: not a rows file of {sweep.experiment!r}: skipped")
            continue
        loaded = RowStore(sweep.experiment, f.parent).load(ids)
        notes.extend(loaded.problems)
        for rec in loaded.records:
            if (rec.point_id, rec.run_id) in have:
                continue
            if revision and rec.revision != revision:
                notes.append(
                    f"{f}: point {rec.point_id} (seed {rec.seed}, host {rec.host}) made at revision "
                    f"{rec.revision or '?'}, the controller's is {revision}: skipped"
                )
                continue
            store.append(rec, axes, list(METRICS))
            have.add((rec.point_id, rec.run_id))
            added += 1
    return added, notes


def merge_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.distributed merge",
        description="Merge the rows files brought from static-shard hosts into the controller's.",
    )
    ap.add_argument("sweep", help="the sweep file")
    ap.add_argument("files", nargs="*", type=Path, help="the hosts' <experiment>.csv files")
    ap.add_argument("--experiment", default=None, help="as the sweep's --experiment")
    ap.add_argument("--data", default="docs/results/data", help="the controller's rows folder")
    ap.add_argument("--any-revision", action="store_true", help="take rows made at any revision")
    args = ap.parse_intermixed_args(argv)
    try:
        sweep = load_sweep(args.sweep)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.experiment:
        sweep = sweep.model_copy(update={"experiment": args.experiment})
    revision = "" if args.any_revision else revision_of(Path.cwd())[0]
    added, notes = merge_rows(sweep, args.data, list(args.files), revision)
    for n in notes:
        print(f"  {n}", file=sys.stderr)
    print(f"{sweep.experiment}: {added} rows merged from {len(args.files)} host file(s)")
    return 0


# --------------------------------------------------------------------------------------------
# The worker launcher: ``python -m experiments.distributed worker``


def worker_threads(parallel: str, sweep: Sweep, data_dir: str) -> int:
    """Runs at a time on this host: ``N`` or the start value of its ``--parallel auto``."""
    from experiments.capacity import AutoParallel
    from experiments.sweep import make_concurrency

    conc = make_concurrency(parallel, sweep, expand(sweep), data_dir)
    return conc.start if isinstance(conc, AutoParallel) else conc.limit()


def worker_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.distributed worker",
        description="Run this host's Dask worker for a multi-host sweep (in the host's checkout).",
    )
    ap.add_argument("scheduler", help="the controller's scheduler, tcp://HOST:PORT")
    ap.add_argument("--sweep", required=True, help="the sweep file, relative to the checkout")
    ap.add_argument("--experiment", default=None, help="as the controller's --experiment")
    ap.add_argument("--name", default=socket.gethostname(), help="this host's name (its inventory name)")
    ap.add_argument("--parallel", default="auto", help="runs at a time: N or auto (default auto)")
    ap.add_argument("--revision", default="", help="the controller's revision: refuse to start on another")
    ap.add_argument("--data", default="docs/results/data", help="this host's rows (for --parallel auto)")
    ap.add_argument(
        "--death-timeout", type=float, default=120.0, help="exit after this long without the scheduler (s)"
    )
    ap.add_argument(
        "--check-only", action="store_true", help="check the host (root, revision, sweep file) and exit"
    )
    args = ap.parse_args(argv)
    name = args.name
    try:
        check_host(host_facts(name), args.revision)
        sweep = load_host_sweep(name, args.sweep, args.experiment or "")
        if args.experiment:
            sweep = sweep.model_copy(update={"experiment": args.experiment})
        nthreads = worker_threads(str(args.parallel), sweep, args.data)
    except (HostRefused, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"host {name}: {nthreads} runs at a time, scheduler {args.scheduler}", file=sys.stderr, flush=True)
    if args.check_only:
        return 0
    return _serve(args.scheduler, name, nthreads, args.death_timeout)


def _serve(scheduler: str, name: str, nthreads: int, death_timeout: float) -> int:
    """Run a Dask worker in this process until the scheduler retires it or goes away."""
    import asyncio

    from distributed import Worker

    async def serve() -> None:
        async with Worker(
            scheduler, nthreads=nthreads, name=name, death_timeout=death_timeout, dashboard=False
        ) as worker:
            await worker.finished()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    except (OSError, TimeoutError) as exc:
        print(f"error: host {name}: scheduler {scheduler}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["merge"]:
        return merge_main(args[1:])
    if args[:1] != ["worker"]:
        print(
            "usage: python -m experiments.distributed worker tcp://HOST:PORT --sweep FILE ...\n"
            "       python -m experiments.distributed merge SWEEP HOST_ROWS.csv ...",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return worker_main(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
