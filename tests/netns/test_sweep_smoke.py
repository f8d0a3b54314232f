"""The smoke sweep end to end, for real: ``python -m experiments.sweep experiments/sweeps/smoke.yaml``
runs both points (real namespaces, kernel TCP, the medium), writes their rows (with validity),
aggregates them, and a second invocation skips both (resume from the rows). About 25 s per
invocation pair on 2 cores."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.netns, pytest.mark.timeout(180)]


def sweep(out: Path) -> dict[str, object]:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.sweep",
            "experiments/sweeps/smoke.yaml",
            "--out",
            str(out),
            "--data",
            str(out / "data"),
            "--json-report",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    report: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return report


def test_smoke_sweep_runs_aggregates_and_resumes(tmp_path: Path) -> None:
    first = sweep(tmp_path)
    assert first["ran"] == first["completed"] + first["invalid_reruns"] and first["completed"] == 2
    assert first["skipped"] == 0
    with open(tmp_path / "data" / "smoke.csv", newline="") as fh:
        kept = list(csv.DictReader(fh))
    assert sum(r["valid"] == "true" for r in kept) == 2 and all(r["revision"] for r in kept)
    # the medium's RTS attempts histogram (ns-2 radio: RTS before every unicast) -> the rows
    assert all(0.0 < float(r["rts_one_attempt_pct"]) <= 100.0 for r in kept), kept
    with open(tmp_path / "smoke" / "aggregate.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    for row in rows:
        assert float(row["throughput_total_bps"]) > 0, row
        assert row["tcp_timeouts_total"] != ""  # read from nstat
        # network-layer totals from the routers' counters (summary.json -> aggregate.csv)
        assert 0.0 <= float(row["packet_loss_pct"]) < 50.0, row
        summ = json.loads((tmp_path / "smoke" / row["run_id"] / "summary.json").read_text())
        net = summ["network"]
        assert net["data_originated"] > 100 and net["data_forwarded"] > 100, net
        assert net["data_delivered"] <= net["data_originated"], net
    with open(tmp_path / "smoke" / "summary.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 2

    second = sweep(tmp_path)
    assert second["ran"] == 0 and second["skipped"] == 2
