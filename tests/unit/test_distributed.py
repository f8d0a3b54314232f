"""experiments.distributed without emulation runs: a real Dask scheduler and workers in this
process, a task function that makes a row instead of running the point. Checks: every point gets
exactly one row, written by the controller; a host that refuses is retired with its cause and its
run goes to the others; a row with the wrong revision is refused; the host checks (root,
revision, local changes, sweep definition) give errors naming the host and the cause."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from distributed import LocalCluster, Worker, get_worker  # noqa: E402

from experiments.distributed import (  # noqa: E402
    DaskRuns,
    DaskSlots,
    HostFacts,
    HostRefused,
    PointTask,
    check_definition,
    check_host,
    check_row,
    worker_threads,
)
from experiments.rows import RowStore, RunRecord  # noqa: E402
from experiments.spec import Sweep, expand, load_sweep  # noqa: E402
from experiments.sweep import run_points  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REV = "0123456789ab"


def smoke() -> Sweep:
    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "smoke.yaml")
    grid = dict(sweep.grid)
    grid["traffic.tcp[0].max_window_pkts"] = [2, 4, 8, 16, 32, 64]
    return sweep.model_copy(update={"grid": grid, "experiment": "dist"})


SWEEP = smoke()
POINTS = {p.point_id: p for p in expand(SWEEP)}
RAN: list[tuple[str, str]] = []  # (host, point id) of every task that ran
LOCK = threading.Lock()


def fake_row(task: PointTask, host: str, revision: str = REV) -> RunRecord:
    p = POINTS[task.point_id]
    return RunRecord(
        experiment=task.experiment,
        point_id=p.point_id,
        index=p.index,
        params={k: str(v) for k, v in p.params.items()},
        seed=p.seed,
        attempt=task.attempt,
        valid=True,
        invalid_reasons=(),
        metrics={"throughput_total_bps": 1000.0 * p.index},
        signals={},
        flows=(),
        duration_s=1.0,
        wall_s=0.05,
        run_id=f"r{p.index}",
        revision=revision,
        host=host,
        finished_at="2026-01-01T00:00:00Z",
    )


def fake_task(task: PointTask) -> RunRecord:
    """What ``run_task`` does, minus the run: the worker 'bad' refuses, 'liar' sends a row of
    another revision."""
    w = get_worker()
    name = str(w.name)
    if name == "bad":
        raise HostRefused(
            f"host bad: git revision fedcba987654, the controller's is {task.revision}", w.address
        )
    time.sleep(0.05)
    with LOCK:
        RAN.append((name, task.point_id))
    return fake_row(task, name, "fedcba987654" if name == "liar" else task.revision)


WORKERS: list[Worker] = []


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    RAN.clear()
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c:
        yield c
        for w in WORKERS:  # before the scheduler, so that no worker waits on it
            if w.status.name not in ("closed", "closing", "closing_gracefully"):
                c.sync(w.close, timeout=10)
        WORKERS.clear()


def add_worker(cluster: LocalCluster, name: str, nthreads: int) -> Worker:
    async def start() -> Worker:
        return await Worker(cluster.scheduler_address, nthreads=nthreads, name=name, dashboard=False)

    w: Worker = cluster.sync(start)
    WORKERS.append(w)
    return w


def sweep_on(cluster: LocalCluster, tmp: Path, workers: dict[str, int]) -> tuple[list[str], list[RunRecord]]:
    from distributed import Client

    for name, n in workers.items():
        add_worker(cluster, name, n)
    notes: list[str] = []
    with Client(cluster) as client:
        slots = DaskSlots(client, notes.append)
        runs = DaskRuns(client, "experiments/sweeps/smoke.yaml", REV, slots, notes.append, task_fn=fake_task)
        report = run_points(
            SWEEP, expand(SWEEP), out_root=tmp, data_dir=tmp / "data", run_fn=runs, parallel=slots
        )
    assert report.completed == len(POINTS) and not report.failed, report.as_dict()
    return notes, RowStore("dist", tmp / "data").load(POINTS and {p: POINTS[p].index for p in POINTS}).records


def test_each_point_one_row_spread_over_hosts(cluster: LocalCluster, tmp_path: Path) -> None:
    notes, rows = sweep_on(cluster, tmp_path, {"h1": 2, "h2": 1})
    assert sorted(r.point_id for r in rows) == sorted(POINTS)  # exactly once each
    assert {r.host for r in rows} == {"h1", "h2"}  # both hosts pulled work
    assert len(RAN) == len(POINTS)
    assert any("host h1 joined (2 runs at a time" in n for n in notes), notes


def test_refusing_host_is_retired_and_its_run_goes_elsewhere(cluster: LocalCluster, tmp_path: Path) -> None:
    notes, rows = sweep_on(cluster, tmp_path, {"bad": 1, "good": 1})
    assert sorted(r.point_id for r in rows) == sorted(POINTS)
    assert {r.host for r in rows} == {"good"}
    refused = [n for n in notes if n.startswith("refused:")]
    assert len(refused) == 1 and "host bad: git revision fedcba987654" in refused[0], notes


def test_row_of_another_revision_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    notes, rows = sweep_on(cluster, tmp_path, {"liar": 1, "good": 1})
    assert sorted(r.point_id for r in rows) == sorted(POINTS)
    assert {r.host for r in rows} == {"good"} and {r.revision for r in rows} == {REV}
    assert any("host liar: row made at revision fedcba987654, the controller's is" in n for n in notes), notes


def facts(**kw: object) -> HostFacts:
    base: dict[str, object] = {
        "name": "node2",
        "uid": 0,
        "revision": REV,
        "dirty": False,
        "checkout": "/opt/x",
    }
    base.update(kw)
    return HostFacts(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"uid": 1000}, "host node2 (/opt/x): runs as uid 1000, not root"),
        (
            {"revision": "fedcba987654"},
            "host node2 (/opt/x): git revision fedcba987654, the controller's is " + REV,
        ),
        ({"revision": ""}, "host node2 (/opt/x): not a git checkout"),
        ({"dirty": True}, "host node2 (/opt/x): revision 0123456789ab with local changes"),
    ],
)
def test_host_checks_name_host_and_cause(kw: dict[str, object], message: str) -> None:
    with pytest.raises(HostRefused) as err:
        check_host(facts(**kw), REV)
    assert str(err.value).startswith(message)


def test_host_check_passes() -> None:
    check_host(facts(), REV)


def test_definition_check() -> None:
    p = next(iter(POINTS.values()))
    check_definition("node2", SWEEP, p.point_id, p.seed)
    with pytest.raises(HostRefused, match="host node2: point abc .* is not in its sweep definition"):
        check_definition("node2", SWEEP, "abc", 1)
    with pytest.raises(HostRefused, match=f"host node2: point {p.point_id} has seed {p.seed} there, 99 here"):
        check_definition("node2", SWEEP, p.point_id, 99)


def test_row_check() -> None:
    p = next(iter(POINTS.values()))
    task = PointTask("s.yaml", "dist", p.point_id, p.seed, 1, "results", REV)
    assert check_row(fake_row(task, "h1"), task) is None
    assert "revision 0123456789ab-dirty" in (check_row(fake_row(task, "h1", REV + "-dirty"), task) or "")
    other = PointTask("s.yaml", "dist", p.point_id, p.seed + 1, 1, "results", REV)
    assert "asked for" in (check_row(fake_row(task, "h1"), other) or "")


def test_worker_threads_from_parallel(tmp_path: Path) -> None:
    """A host's worker runs N at a time, or as many as its --parallel auto starts with."""
    from experiments.capacity import AutoParallel
    from experiments.sweep import make_concurrency

    assert worker_threads("3", SWEEP, str(tmp_path)) == 3
    auto = make_concurrency("auto", SWEEP, expand(SWEEP), tmp_path)
    assert isinstance(auto, AutoParallel) and auto.start > 1  # chain5 is light: several per host
    assert worker_threads("auto", SWEEP, str(tmp_path)) == auto.start


def test_merge_rows_from_static_shards(tmp_path: Path) -> None:
    """Static shards: each host's rows file is merged into the controller's; rows already there,
    rows of another revision and rows of another sweep definition are not taken."""
    from experiments.aggregate import METRICS
    from experiments.distributed import merge_rows

    pts = list(POINTS.values())
    axes = list(SWEEP.axes())

    def task(i: int) -> PointTask:
        return PointTask("s.yaml", "dist", pts[i].point_id, pts[i].seed, 1, "results", REV)

    ctl = RowStore("dist", tmp_path / "ctl")
    ctl.append(fake_row(task(0), "h1"), axes, list(METRICS))
    h1, h2 = RowStore("dist", tmp_path / "h1"), RowStore("dist", tmp_path / "h2")
    h1.append(fake_row(task(0), "h1"), axes, list(METRICS))  # already on the controller
    h1.append(fake_row(task(1), "h1"), axes, list(METRICS))
    h2.append(fake_row(task(2), "h2"), axes, list(METRICS))
    h2.append(fake_row(task(3), "h2", "fedcba987654"), axes, list(METRICS))  # another revision
    added, notes = merge_rows(SWEEP, tmp_path / "ctl", [h1.path, h2.path], REV)
    assert added == 2
    assert [n for n in notes if "fedcba987654" in n and "host h2" in n], notes
    got = ctl.load({p.point_id: p.index for p in pts}).counted()
    assert sorted(r.point_id for r in got) == sorted(pts[i].point_id for i in (0, 1, 2))
    again, _ = merge_rows(SWEEP, tmp_path / "ctl", [h1.path, h2.path], REV)
    assert again == 0  # idempotent
