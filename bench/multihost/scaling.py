"""Benchmark ``multihost_scaling`` (issue 17, item 3): the sweep rate with 1, 2 and 3 hosts of
the host bed, and the scheduler's overhead per run.

1. **Overhead per run**: the same 200-point sweep through ``experiments.sweep.run_points`` with a
   trivial task (it makes the row and returns), once through Dask (a scheduler in this process,
   one worker process over TCP with 2 threads: ``DaskRuns``/``DaskSlots``) and once in-process
   with ``--parallel 2``; the difference per run is what distribution costs.
2. **Sweep rate on the bed**: a 3-host bed (``testbed.hostbed``) provisioned by
   ``playbooks/provision.yml`` over SSH; then ``experiments/sweeps/multihost-bench.yaml`` (6 real
   runs of 10 s) with workers (``playbooks/workers.yml``) on the first 1, 2 and 3 hosts, one run at
   a time each. The hosts share this machine's 2 cores, so this measures the overhead of spreading
   a sweep (and how far the cores carry parallel runs), not a speed-up from more machines.

Writes ``results/bench/multihost_scaling.json`` and ``multihost_overhead.json``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from experiments.capacity import FixedParallel  # noqa: E402
from experiments.distributed import DaskRuns, DaskSlots, PointTask  # noqa: E402
from experiments.rows import RowStore, RunRecord  # noqa: E402
from experiments.spec import Sweep, expand, load_sweep  # noqa: E402
from experiments.sweep import RunRequest, run_points  # noqa: E402
from testbed.hostbed import HostBed  # noqa: E402

BENCH_SWEEP = "experiments/sweeps/multihost-bench.yaml"
OVERHEAD_POINTS = 200


def synthetic(n: int) -> Sweep:
    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "smoke.yaml")
    return sweep.model_copy(
        update={"grid": {"traffic.tcp[0].max_window_pkts": list(range(1, n + 1))}, "experiment": "overhead"}
    )


def row(experiment: str, point_id: str, index: int, seed: int, attempt: int, revision: str) -> RunRecord:
    return RunRecord(
        experiment=experiment,
        point_id=point_id,
        index=index,
        params={},
        seed=seed,
        attempt=attempt,
        valid=True,
        invalid_reasons=(),
        metrics={},
        signals={},
        flows=(),
        duration_s=0.0,
        wall_s=0.0,
        run_id="",
        revision=revision,
        host="bench",
        finished_at="",
    )


def trivial_task(task: PointTask) -> RunRecord:
    """On the worker: the row without the run (the index is not checked by the controller)."""
    return row(task.experiment, task.point_id, 0, task.seed, task.attempt, task.revision)


def overhead(tmp: Path) -> dict[str, float]:
    from distributed import Client, LocalCluster

    sweep = synthetic(OVERHEAD_POINTS)
    points = expand(sweep)
    by_id = {p.point_id: p for p in points}

    def local(req: RunRequest) -> RunRecord:
        p = by_id[req.point_id]
        return row(sweep.experiment, p.point_id, p.index, p.seed, req.attempt, "r")

    t0 = time.monotonic()
    run_points(sweep, points, out_root=tmp / "a", data_dir=tmp / "a", run_fn=local, parallel=FixedParallel(2))
    local_s = time.monotonic() - t0
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            client.wait_for_workers(1)
            slots = DaskSlots(client)
            runs = DaskRuns(client, "x.yaml", "r", slots, task_fn=trivial_task)
            t0 = time.monotonic()
            report = run_points(
                sweep, points, out_root=tmp / "b", data_dir=tmp / "b", run_fn=runs, parallel=slots
            )
            dask_s = time.monotonic() - t0
    assert report.completed == len(points), report.as_dict()
    n_rows = len(RowStore(sweep.experiment, tmp / "b").load().counted())
    assert n_rows == len(points), n_rows
    return {
        "runs": len(points),
        "local_ms_per_run": 1000 * local_s / len(points),
        "dask_ms_per_run": 1000 * dask_s / len(points),
        "overhead_ms_per_run": 1000 * (dask_s - local_s) / len(points),
    }


def playbook(inv: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "playbooks" / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    res = subprocess.run(
        ["ansible-playbook", "-i", str(inv), name, *extra],
        cwd=ROOT / "playbooks",
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if res.returncode != 0:
        raise SystemExit(f"{name} failed:\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}")
    return res


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        port: int = s.getsockname()[1]
        return port


def sweep_rate(bed: HostBed, inv: Path, n_hosts: int, tmp: Path) -> dict[str, float]:
    """Runs per minute of the bench sweep with workers on the first ``n_hosts`` hosts."""
    exp = f"multihost-bench-{n_hosts}"
    addr = f"{bed.controller_address}:{free_port(bed.controller_address)}"
    ctl = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "experiments.sweep",
            BENCH_SWEEP,
            "--experiment",
            exp,
            "--scheduler",
            addr,
            "--out",
            str(tmp / "results"),
            "--data",
            str(tmp / "data"),
            "--json-report",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    t0 = time.monotonic()
    limit = ",".join(h.name for h in bed.hosts[:n_hosts])
    playbook(
        inv,
        "workers.yml",
        "--limit",
        limit,
        "-e",
        f"manet_sweep={BENCH_SWEEP}",
        "-e",
        f"testbed_sweep_scheduler={addr}",
    )
    out, err = ctl.communicate(timeout=900)
    wall = time.monotonic() - t0
    if ctl.returncode != 0:
        raise SystemExit(f"sweep with {n_hosts} hosts failed:\n{err[-3000:]}")
    report = json.loads(out.strip().splitlines()[-1])
    rows = RowStore(exp, tmp / "data").load().records
    return {
        "hosts": n_hosts,
        "runs": report["ran"],
        "valid": report["completed"],
        "wall_s": wall,
        "runs_per_min": 60.0 * report["ran"] / wall,
        "mean_run_wall_s": sum(r.wall_s for r in rows) / max(1, len(rows)),
        "invalid": sum(not r.valid for r in rows),
    }


def main() -> int:
    out_dir = ROOT / "results" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mh-bench-") as tmp_s:
        tmp = Path(tmp_s)
        ov = overhead(tmp / "overhead")
        print(f"scheduler overhead: {ov}", flush=True)
        (out_dir / "multihost_overhead.json").write_text(
            json.dumps(
                {
                    "name": "multihost_overhead",
                    "value": round(ov["overhead_ms_per_run"], 2),
                    "unit": "ms per run",
                    "target": "< 1000 ms per run (a run is >= 10 s)",
                    "meets_target": ov["overhead_ms_per_run"] < 1000,
                    "command": "bench/multihost/run.sh",
                    "details": ov,
                },
                indent=1,
            )
        )
        rates = []
        with HostBed(3) as bed:
            inv = bed.inventory(tmp / "hosts.yml", host_vars=bed.shared_machine_vars())
            t0 = time.monotonic()
            playbook(inv, "provision.yml")
            provision_s = time.monotonic() - t0
            for n in (1, 2, 3):
                rates.append(sweep_rate(bed, inv, n, tmp))
                print(f"{n} host(s): {rates[-1]}", flush=True)
        (out_dir / "multihost_scaling.json").write_text(
            json.dumps(
                {
                    "name": "multihost_scaling",
                    "value": round(rates[-1]["runs_per_min"], 2),
                    "unit": "runs/min with 3 hosts on one 2-core machine",
                    "target": "no run lost; rate with 3 hosts >= rate with 1 (one machine: overhead, not speed-up)",
                    "meets_target": all(r["runs"] >= 6 for r in rates)
                    and rates[-1]["runs_per_min"] >= rates[0]["runs_per_min"],
                    "command": "bench/multihost/run.sh",
                    "details": {"provision_s": provision_s, "by_hosts": rates},
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
