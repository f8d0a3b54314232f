"""A sweep re-runs an invalid run, for real (issue 10, "Done when": a test forces lag and shows the
run marked invalid and re-run): one point of the smoke sweep (chain5, 10 s) run through
``experiments.sweep.run_points`` with a run function that stalls the medium (SIGSTOP 0.6 s) during
the first attempt only. The first attempt's row is invalid with the medium's lag as its reason and
is not counted; the sweep runs the point again, and the second row is valid and counted. About 25 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from netns_helpers import medium_pid, stall_medium

from experiments import sweep as sw
from experiments.aggregate import load_rows
from experiments.rows import RowStore
from experiments.spec import expand, load_sweep
from testbed import run as tbrun

ROOT = Path(__file__).resolve().parents[2]
STALL_S = 0.6

pytestmark = [pytest.mark.netns, pytest.mark.timeout(240)]


def stalls_first_attempt(req: sw.RunRequest) -> Path:
    """The sweep's run-function seam: the real testbed, in this process, with a stalled medium on
    the first attempt."""
    with tbrun.Testbed(req.scenario, req.seed, req.experiment, req.out_root, req.overrides, quiet=True) as tb:
        th = stall_medium(medium_pid(tb), 3.0, STALL_S, tb) if req.attempt == 1 else None
        tb.run()
        if th is not None:
            th.join(5)
    return tb.dir


def test_an_invalid_run_is_kept_as_a_row_and_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    sweep = load_sweep("experiments/sweeps/smoke.yaml")
    point = expand(sweep)[:1]
    data = tmp_path / "data"
    report = sw.run_points(sweep, point, out_root=tmp_path, data_dir=data, run_fn=stalls_first_attempt)
    assert len(report.reruns) == 1 and report.completed == 1 and not report.failed
    rows = RowStore("smoke", data).load().records
    assert [(r.attempt, r.valid) for r in rows] == [(1, False), (2, True)]
    assert any(reason.startswith("medium lag max") for reason in rows[0].invalid_reasons), rows[0]
    assert rows[0].signals["medium_lag_max_ms"] >= 1000 * STALL_S - 100
    assert rows[1].metric("throughput_total_bps") > 0
    counted = load_rows("smoke", data).counted
    assert [r.attempt for r in counted] == [2]  # the invalid run is never averaged in
