"""Rows files grow a column for a metric added later, and its cells are filled from run folders
(experiments.rows add_columns / fill, experiments.backfill); testbed.metrics.rts_one_attempt_pct."""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from pathlib import Path

import pytest

from experiments import backfill as bf
from experiments.rows import RowsError, RowStore, RunRecord, header
from testbed.metrics import medium_summary, rts_one_attempt_pct


def _record(run_id: str, seed: int, metrics: dict[str, float]) -> RunRecord:
    return RunRecord(
        experiment="exp",
        point_id=f"p{seed}",
        index=seed,
        params={"speed": "20"},
        seed=seed,
        attempt=1,
        valid=True,
        invalid_reasons=(),
        metrics=metrics,
        signals={"medium_lag_p99_ms": 0.3},
        flows=(),
        duration_s=600.0,
        wall_s=610.0,
        run_id=run_id,
        revision="abc",
        host="vm",
        finished_at="2026-11-26T07:00:00Z",
    )


def test_rts_share_counts_only_frames_sent_with_rts() -> None:
    # 76 of 100 RTS-protected frames needed one attempt; 50 frames went without RTS (attempts 0)
    assert rts_one_attempt_pct({"0": 50, "1": 76, "2": 4, "4": 20}) == 76.0
    assert rts_one_attempt_pct({"0": 9}) is None
    assert rts_one_attempt_pct(None) is None
    assert rts_one_attempt_pct({"x": 3, "1": 1, "2": "bad"}) == 100.0  # unreadable entries ignored
    assert medium_summary(None) == {"rts_one_attempt_pct": None}


def test_add_columns_keeps_rows_loadable_and_old_writers_append_to_the_new_header(tmp_path: Path) -> None:
    store = RowStore("exp", tmp_path)
    store.append(_record("r1", 1, {"tput": 5.0}), ["speed"], ["tput"])
    store.append(_record("r2", 2, {"tput": 7.0}), ["speed"], ["tput"])
    with open(store.path, "a", encoding="utf-8") as fh:
        fh.write("exp,p3,3,20,3,1,true,,9")  # a row cut short by a killed writer
    assert store.add_columns(["tput", "rts"]) == ["rts"]
    assert store.add_columns(["tput", "rts"]) == []
    cols = store.columns()
    assert cols is not None and cols.index("rts") == cols.index("tput") + 1
    # a sweep still running with the old metric list appends with the file's (new) header
    store.append(_record("r4", 4, {"tput": 1.0}), ["speed"], ["tput"])
    loaded = store.load()
    assert [r.run_id for r in loaded.records] == ["r1", "r2", "r4"]
    assert [r.metrics["tput"] for r in loaded.records] == [5.0, 7.0, 1.0]
    assert all(math.isnan(r.metrics["rts"]) for r in loaded.records)
    assert len(loaded.problems) == 1 and "cut" in loaded.problems[0]


def test_fill_sets_only_empty_cells_of_the_named_runs(tmp_path: Path) -> None:
    store = RowStore("exp", tmp_path)
    store.append(_record("r1", 1, {"tput": 5.0}), ["speed"], ["tput", "rts"])
    store.append(_record("r2", 2, {"tput": 7.0, "rts": 80.0}), ["speed"], ["tput", "rts"])
    before = store.path.read_text().splitlines()
    n = store.fill({"r1": {"rts": 76.5, "tput": 99.0}, "r2": {"rts": 10.0}, "r9": {"rts": 1.0}})
    assert n == 1  # r1's rts; r1's tput and r2's rts had values
    after = store.path.read_text().splitlines()
    assert after[2] == before[2]  # an untouched row is kept byte for byte
    recs = {r.run_id: r for r in store.load().records}
    assert recs["r1"].metrics == {"tput": 5.0, "rts": 76.5}
    assert recs["r2"].metrics["rts"] == 80.0
    assert store.fill({"r1": {"rts": math.nan}}) == 0


def test_concurrent_appends_during_add_columns_lose_no_row(tmp_path: Path) -> None:
    store = RowStore("exp", tmp_path)
    store.append(_record("r0", 0, {"tput": 1.0}), ["speed"], ["tput"])

    def writer(k: int) -> None:
        for i in range(20):
            RowStore("exp", tmp_path).append(
                _record(f"w{k}-{i}", 100 * (k + 1) + i, {"tput": 2.0}), ["speed"], ["tput"]
            )

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for m in ("a", "b", "c"):
        store.add_columns(["tput", m])
    for t in threads:
        t.join()
    loaded = store.load()
    assert loaded.problems == [] and len(loaded.records) == 61
    assert header(["speed"], ["tput", "a", "b", "c"]) == store.columns()


def _one_row_and_its_folder(tmp_path: Path, sub: str) -> tuple[RowStore, Path]:
    """A rows file with one row (run1) written before the new metrics, and run1's folder."""
    store = RowStore("exp", tmp_path / "data")
    store.append(_record("run1", 1, {"throughput_total_bps": 5.0}), ["speed"], ["throughput_total_bps"])
    run = tmp_path / "results" / "exp" / "run1"
    (run / sub).mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"complete": True, "flows": []}))
    return store, run


def test_backfill_computes_the_new_metric_from_the_run_folder(tmp_path: Path) -> None:
    store, run = _one_row_and_its_folder(tmp_path, "medium")
    data = tmp_path / "data"
    (run / "medium" / "counters.json").write_text(json.dumps({"rts_attempts_histogram": {"1": 3, "4": 1}}))
    assert bf.main(["exp", "--results", str(tmp_path / "results"), "--data", str(data)]) == 0
    rec = store.load().records[0]
    assert rec.metrics["rts_one_attempt_pct"] == 75.0
    assert rec.metrics["throughput_total_bps"] == 5.0  # kept, although the empty summary says otherwise
    assert bf.main(["nope", "--data", str(data)]) == 2


def test_out_of_range_episodes_per_connection() -> None:
    from nodes.tcpctl.observe import out_of_range, out_of_range_episodes

    ok = {"conn": "a", "cwnd": 10, "ssthresh": 2147483647}  # infinite ssthresh is in range
    bad = {"conn": "a", "cwnd": 7, "ssthresh": 0x81104110}
    burst = {"conn": "b", "cwnd": 309332306, "ssthresh": 6}
    assert not out_of_range(ok) and out_of_range(bad) and out_of_range(burst)
    assert not out_of_range({"conn": "a", "cwnd": "x"})
    # ABRA's "ssthresh/4" of a never-reduced ssthresh (0x7fffffff / 4) is the paper's algorithm
    assert not out_of_range({"conn": "a", "cwnd": 5, "ssthresh": 0x1FFFFFFF})
    # a, a, b interleaved: a's fault lasts 2 samples (1 episode), then again (2nd); b once
    seq = [ok, bad, burst, bad, ok, bad, {**ok, "conn": "b"}]
    assert out_of_range_episodes(seq) == 3


def test_a_row_with_a_tcp_fault_is_not_counted_and_its_point_runs_again(tmp_path: Path) -> None:
    from experiments.rows import cc_fault_reason

    store = RowStore("exp", tmp_path)
    store.append(_record("r1", 1, {"tput": 5.0, "tcp_cc_faults": 1.0}), ["speed"], ["tput", "tcp_cc_faults"])
    store.append(_record("r2", 1, {"tput": 6.0, "tcp_cc_faults": 0.0}), ["speed"], ["tput", "tcp_cc_faults"])
    loaded = store.load()
    assert loaded.problems == []  # the re-run's valid row is not a duplicate of the faulted one
    assert [r.run_id for r in loaded.counted()] == ["r2"]
    bad = loaded.invalid()[0]
    assert bad.run_id == "r1" and "out of range" in bad.invalid_reasons[-1]
    assert cc_fault_reason({"tcp_cc_faults": math.nan}) is None
    # a fault the BPF repair put back between two samples makes the run not count either
    repaired = cc_fault_reason({"tcp_cc_faults": 0.0, "tcp_cc_repairs": 2.0})
    assert repaired is not None and "repaired 2" in repaired
    assert cc_fault_reason({"tcp_cc_faults": 0.0, "tcp_cc_repairs": 0.0}) is None
    cols = ["tput", "tcp_cc_faults", "tcp_cc_repairs"]
    other = RowStore("exp", tmp_path / "other")
    other.append(
        _record("r3", 2, {"tput": 7.0, "tcp_cc_faults": 0.0, "tcp_cc_repairs": 1.0}), ["speed"], cols
    )
    other.append(
        _record("r4", 3, {"tput": 7.0, "tcp_cc_faults": 0.0, "tcp_cc_repairs": 0.0}), ["speed"], cols
    )
    assert [r.run_id for r in other.load().counted()] == ["r4"]


def test_backfill_counts_faults_in_the_sampled_tcp_state(tmp_path: Path) -> None:
    store, run = _one_row_and_its_folder(tmp_path, "tcp")
    data = tmp_path / "data"
    (run / "tcp" / "sta1.csv").write_text(
        "t_s,conn,cwnd,ssthresh\n1,c,7,6\n2,c,309332306,2165326096\n3,c,1546661503,2165326096\n4,c,3,2\n"
    )
    bf.main(["exp", "--results", str(tmp_path / "results"), "--data", str(data)])
    rec = store.load().records[0]
    assert rec.metrics["tcp_cc_faults"] == 1.0 and not rec.valid


def test_capacity_does_not_back_off_for_a_tcp_fault() -> None:
    from experiments.capacity import AutoParallel
    from experiments.rows import cc_fault_reason

    auto = AutoParallel(cores=2, cost_cores=0.2, mem_available_mb=20000, stations=20)
    start = auto.limit()
    m = {"tcp_cc_faults": 1.0}
    rec = dataclasses.replace(_record("r", 1, m), valid=False, invalid_reasons=(str(cc_fault_reason(m)),))
    assert start == 5  # 2 cores x 0.7 / 0.2, capped at 55 stations per core
    auto.observe(rec, host_busy=0.2)
    assert auto.limit() == start
    lag = dataclasses.replace(rec, invalid_reasons=("router loop lag p99 60 ms > 50 ms",))
    auto.observe(lag, host_busy=0.2)
    assert auto.limit() == start // 2


def test_an_axis_named_like_a_column_is_refused_not_shadowed() -> None:
    # an axis "flows" would be a second "flows" column: reading the row back, the per-flow JSON
    # took the axis' place (the first yu2004 rows, 27 Nov 2026)
    with pytest.raises(RowsError, match="'flows' twice"):
        header(["scheme", "flows"], ["tput"])
    assert header(["scheme", "tcp_flows"], ["tput"]).count("flows") == 1
