"""The sweep runner without root: expansion, stable ids, resume, shards, retries, aggregation.

The run function is the seam: ``FakeRun`` writes a run directory the way ``testbed.run`` does
(``summary.json`` with ``complete``) with numbers derived from the point, so aggregation can be
checked exactly.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from experiments import aggregate as agg
from experiments import sweep as sw
from experiments.rows import RowStore, RunRecord
from experiments.rundirs import INDEX_FILE, POINT_FILE, read_json
from experiments.spec import Point, Sweep, SweepError, expand, label, load_sweep, parse_sweep, point_id
from experiments.stats import summarize, t_quantile

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "topologies/chain5.yaml"

SWEEP_YAML = f"""
experiment: fake
scenario: {SCENARIO}
seeds: {{first: 1, count: 3}}
set: {{duration_s: 30}}
grid:
  routing.extensions: [[], [abra]]
  traffic.tcp[0].max_window_pkts: [4, 8]
variants:
  cc:
    reno: {{tcp.cc: reno}}
    cubic: {{tcp.cc: cubic}}
exclude:
  - {{routing.extensions: [abra], cc: cubic}}
"""


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def make_sweep(text: str = SWEEP_YAML) -> Sweep:
    return parse_sweep(text, "test.yaml")


class FakeRun:
    """Writes ``<out>/<experiment>/<run-id>/summary.json``; throughput = 1000 * window + seed."""

    def __init__(
        self,
        incomplete: set[tuple[str, int]] | None = None,
        fail: set[tuple[str, int]] | None = None,
        interrupt_after: int | None = None,
        invalid: set[tuple[str, int]] | None = None,
        on_call: Callable[[], None] | None = None,
    ) -> None:
        self.on_call = on_call
        self.calls: list[sw.RunRequest] = []
        self.incomplete = incomplete or set()  # (point_id, attempt) that end with complete=false
        self.fail = fail or set()  # (point_id, attempt) that raise
        self.invalid = invalid or set()  # (point_id, attempt) whose real time did not hold
        self.interrupt_after = interrupt_after
        self._lock = threading.Lock()
        self._n = 0

    def __call__(self, req: sw.RunRequest) -> Path:
        with self._lock:
            self.calls.append(req)
            self._n += 1
            n = self._n
        if self.interrupt_after is not None and n > self.interrupt_after:
            raise KeyboardInterrupt
        if self.on_call is not None:
            self.on_call()
        if (req.point_id, req.attempt) in self.fail:
            raise RuntimeError("medium crashed")
        run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:6]  # a run never overwrites another
        run_dir.mkdir(parents=True)
        window = req.overrides.get("traffic.tcp[0].max_window_pkts", 0)
        complete = (req.point_id, req.attempt) not in self.incomplete
        invalid = (req.point_id, req.attempt) in self.invalid
        summary: dict[str, Any] = {
            "run_id": run_dir.name,
            "complete": complete,
            "valid": not invalid,
            "validity": {
                "reasons": ["medium lag max 480.00 ms > 20.00 ms"] if invalid else [],
                "medium_lag_p99_ms": 0.1,
                "run_cpu_s": 1.5,
            },
            "seed": req.seed,
            "duration_s": 10.0,
            "routing_packets": 10 * req.seed,
            "flows": [
                {
                    "id": "tcp0",
                    "proto": "tcp",
                    "src": 1,
                    "dst": 5,
                    "throughput_bps": 1000.0 * window + req.seed,
                    "tcp_timeouts": req.seed,
                    "retransmits": 2 * req.seed,
                    "bytes_received": 14600,
                },
                {"id": "udp0", "proto": "udp", "src": 2, "dst": 4, "throughput_bps": 5.0},
            ],
        }
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return run_dir


class VirtualClock:
    """The runner's clock in tests: time moves only when a fake run says so."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, s: float) -> None:
        with self._lock:
            self.now += s


# ---------------------------------------------------------------------------- expansion and ids


def test_expansion_is_the_product_minus_exclusions_with_seeds_innermost() -> None:
    points = expand(make_sweep())
    # 2 extensions x 2 windows x 2 cc = 8 combinations, minus 2 (abra with cubic), x 3 seeds
    assert len(points) == 6 * 3
    assert [p.index for p in points] == list(range(18))
    assert [p.seed for p in points[:4]] == [1, 2, 3, 1]
    first = points[0]
    assert first.params == {"routing.extensions": [], "traffic.tcp[0].max_window_pkts": 4, "cc": "reno"}
    assert first.overrides == {
        "duration_s": 30,
        "routing.extensions": [],
        "traffic.tcp[0].max_window_pkts": 4,
        "tcp.cc": "reno",
    }
    assert not any(p.params["routing.extensions"] == ["abra"] and p.params["cc"] == "cubic" for p in points)


def test_point_ids_are_stable_and_distinct() -> None:
    a, b = expand(make_sweep()), expand(make_sweep())
    assert [p.point_id for p in a] == [p.point_id for p in b]
    assert len({p.point_id for p in a}) == len(a)
    # key order does not matter; the seed and the scenario do
    assert point_id(SCENARIO, {"a": 1, "b": [2]}, 1) == point_id(SCENARIO, {"b": [2], "a": 1}, 1)
    assert point_id(SCENARIO, {"a": 1}, 1) != point_id(SCENARIO, {"a": 1}, 2)
    assert point_id(SCENARIO, {"a": 1}, 1) != point_id("topologies/grid9.yaml", {"a": 1}, 1)
    # adding a seed keeps the ids of the existing points
    more = expand(make_sweep(SWEEP_YAML.replace("count: 3", "count: 4")))
    assert {p.point_id for p in a} <= {p.point_id for p in more}


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("experiment: x\nscenario: s\nseeds: [1]\nbogus: 1\n", "bogus", "unknown key"),
        ("experiment: x\nscenario: s\nseeds: [1, 1]\n", "seeds", "seed 1 listed twice"),
        ("experiment: x\nscenario: s\nseeds: {count: 0}\n", "seeds.count", "greater than or equal to 1"),
        ("experiment: x\nscenario: s\nseeds: [1]\ngrid:\n  a.b: []\n", "grid.a.b", "non-empty list"),
        ("experiment: x\nscenario: s\nseeds: [1]\ngrid:\n  A-b: [1]\n", "grid.A-b", "dotted field path"),
        (
            "experiment: x\nscenario: s\nseeds: [1]\nset: {a: 1}\ngrid:\n  a: [1, 2]\n",
            "grid.a",
            "also in set",
        ),
        (
            "experiment: x\nscenario: s\nseeds: [1]\ngrid:\n  a: [1]\nexclude: [{b: 1}]\n",
            "exclude[0].b",
            "not an axis",
        ),
        (
            "experiment: x\nscenario: s\nseeds: [1]\ngrid:\n  a: [1]\nexclude: [{a: 3}]\n",
            "exclude[0].a",
            "not one of",
        ),
        ("scenario: s\nseeds: [1]\n", "experiment", "required field missing"),
        (  # the axis' column would shadow the rows file's per-flow column of the same name
            "experiment: x\nscenario: s\nseeds: [1]\nvariants:\n  flows:\n    one: {a.b: 1}\n",
            "variants.flows",
            "the name of a rows column",
        ),
        (
            "experiment: x\nscenario: s\nseeds: [1]\ngrid:\n  duration_s: [10, 20]\n",
            "grid.duration_s",
            "the name of a rows column",
        ),
    ],
)
def test_bad_sweep_files_name_file_field_and_reason(text: str, field: str, reason: str) -> None:
    with pytest.raises(SweepError) as info:
        parse_sweep(text, "bad.yaml", check_scenario=False)
    err = info.value
    assert err.file == "bad.yaml"
    assert any(p == field and reason in r for p, r in err.problems), err.problems
    assert str(err).startswith("bad.yaml:")


def test_missing_scenario_file_is_an_error_with_its_line() -> None:
    with pytest.raises(SweepError) as info:
        parse_sweep("experiment: x\nseeds: [1]\nscenario: topologies/nope.yaml\n", "s.yaml")
    assert "s.yaml:3: scenario:" in str(info.value)


def test_shipped_sweep_files_load_and_give_valid_scenarios() -> None:
    from experiments.spec import check_points

    files = sorted((ROOT / "experiments" / "sweeps").glob("*.yaml"))
    assert {f.stem for f in files} >= {"smoke", "yu2004", "ghanem2008", "klemm2004", "cohen", "liu2001"}
    for f in files:
        sweep = load_sweep(f.relative_to(ROOT))
        points = expand(sweep)
        assert points, f
        assert check_points(sweep, points) == [], f
    smoke = expand(load_sweep("experiments/sweeps/smoke.yaml"))
    assert 1 <= len(smoke) <= 2


# ---------------------------------------------------------------------------- running


def rows_of(data: Path, experiment: str = "fake") -> list[RunRecord]:
    return RowStore(experiment, data).load().records


def test_run_then_resume_skips_points_with_a_valid_row(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)
    fake = FakeRun()
    data = tmp_path / "data"
    report = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=fake, parallel=3)
    assert report.ran == len(points) and not report.failed and report.skipped == 0
    assert sorted(r.point_id for r in fake.calls) == sorted(p.point_id for p in points)
    rows = rows_of(data)
    assert sorted(r.point_id for r in rows) == sorted(p.point_id for p in points)
    assert all(r.valid and r.signals["run_cpu_s"] == 1.5 for r in rows)
    exp_dir = tmp_path / "fake"
    index = read_json(exp_dir / INDEX_FILE)
    entry = index["points"][points[0].point_id]
    assert entry["status"] == "complete" and not Path(entry["run_dir"]).is_absolute()
    point_file = read_json(exp_dir / entry["run_dir"] / POINT_FILE)
    assert point_file["params"] == points[0].params and point_file["seed"] == points[0].seed

    again = FakeRun()
    report2 = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=again, parallel=2)
    assert again.calls == [] and report2.skipped == len(points) and report2.ran == 0


def test_resume_needs_only_the_rows_not_the_results_tree(tmp_path: Path) -> None:
    """A new machine has the rows (git) but no results/: nothing is run twice."""
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    sw.run_points(sweep, points, out_root=tmp_path / "old", data_dir=data, run_fn=FakeRun())
    again = FakeRun()
    sw.run_points(sweep, points, out_root=tmp_path / "new", data_dir=data, run_fn=again)
    assert again.calls == []


def test_an_invalid_run_is_kept_as_a_row_never_counted_and_run_again(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)[:3]
    bad = points[1].point_id
    fake = FakeRun(invalid={(bad, 1), (bad, 2)})
    data = tmp_path / "data"
    report = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=fake)
    assert [r.attempt for r in fake.calls if r.point_id == bad] == [1, 2, 3]
    assert len(report.reruns) == 2 and report.completed == 3 and not report.failed
    rows = rows_of(data)
    assert [(r.attempt, r.valid) for r in rows if r.point_id == bad] == [(1, False), (2, False), (3, True)]
    assert "medium lag" in next(r for r in rows if not r.valid).invalid_reasons[0]
    loaded = agg.load_rows("fake", data)
    assert len(loaded.counted) == 3 and len(loaded.invalid) == 2
    assert all(r.valid for r in loaded.counted)


def test_on_valid_sees_each_valid_run_once_with_its_folder(tmp_path: Path) -> None:
    """experiments.multihop keeps a flow row per valid run: never one for an invalid attempt."""
    sweep = make_sweep()
    points = expand(sweep)[:3]
    bad = points[0].point_id
    seen: list[tuple[str, int, bool]] = []

    def keep(point: Point, run_dir: Path, rec: RunRecord) -> None:
        assert (run_dir / "summary.json").is_file() and rec.point_id == point.point_id
        seen.append((point.point_id, rec.attempt, rec.valid))

    sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=FakeRun(invalid={(bad, 1)}),
        parallel=2, on_valid=keep,
    )  # fmt: skip
    assert sorted(seen) == sorted([(bad, 2, True)] + [(p.point_id, 1, True) for p in points[1:]])


def test_a_point_that_stays_invalid_is_given_up_after_max_reruns(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)[:1]
    pid = points[0].point_id
    fake = FakeRun(invalid={(pid, n) for n in range(1, 10)})
    report = sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=fake, max_reruns=2
    )
    assert len(fake.calls) == 3 and report.completed == 0 and len(report.reruns) == 3


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 25])
def test_shards_partition_the_points(n: int) -> None:
    points = expand(make_sweep())
    shards = [sw.shard_points(points, (i, n)) for i in range(n)]
    ids = [p.point_id for s in shards for p in s]
    assert sorted(ids) == sorted(p.point_id for p in points)  # every point exactly once
    assert all(p.index % n == i for i, s in enumerate(shards) for p in s)


@pytest.mark.parametrize("bad", ["1/1", "-1/2", "2", "a/b", "0/0"])
def test_bad_shard_specs_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        sw.parse_shard(bad)


def test_sharded_runs_together_complete_the_sweep(tmp_path: Path) -> None:
    """Three hosts append to one rows file (as on a shared checkout): every point exactly once."""
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    for i in range(3):
        sw.run_points(
            sweep,
            sw.shard_points(points, (i, 3)),
            out_root=tmp_path / f"h{i}",
            data_dir=data,
            run_fn=FakeRun(),
        )
    loaded = agg.load_rows("fake", data)
    assert sorted(r.point_id for r in loaded.counted) == sorted(p.point_id for p in points)
    assert loaded.problems == []
    again = FakeRun()
    sw.run_points(sweep, points, out_root=tmp_path / "ctl", data_dir=data, run_fn=again)
    assert again.calls == []


def test_interrupted_and_failed_runs_are_retried_next_time(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)
    broken, crashed = points[1].point_id, points[2].point_id
    data = tmp_path / "data"
    fake = FakeRun(incomplete={(broken, 1)}, fail={(crashed, 1)})
    report = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=fake)
    assert {o.point.point_id: o.status for o in report.failed} == {broken: "incomplete", crashed: "failed"}
    index = read_json(tmp_path / "fake" / INDEX_FILE)["points"]
    assert index[broken]["status"] == "incomplete" and index[broken]["run_dir"]
    assert index[crashed]["status"] == "failed" and "medium crashed" in index[crashed]["error"]
    assert {broken, crashed}.isdisjoint(r.point_id for r in rows_of(data))  # no row without a run

    again = FakeRun()
    report2 = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=again)
    assert sorted(r.point_id for r in again.calls) == sorted([broken, crashed])
    assert not report2.failed
    assert read_json(tmp_path / "fake" / INDEX_FILE)["points"][broken]["status"] == "complete"


def test_retries_within_one_invocation(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)[:2]
    pid = points[0].point_id
    fake = FakeRun(fail={(pid, 1)}, incomplete={(pid, 2)})
    report = sw.run_points(sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=fake, retries=2)
    assert not report.failed
    assert [r.attempt for r in fake.calls if r.point_id == pid] == [1, 2, 3]


def test_keyboard_interrupt_loses_at_most_the_runs_in_flight(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    with pytest.raises(KeyboardInterrupt):
        sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=FakeRun(interrupt_after=5))
    done = {r.point_id for r in rows_of(data)}
    assert len(done) == 5
    again = FakeRun()
    sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=again)
    assert len(again.calls) == len(points) - len(done)
    assert {r.point_id for r in rows_of(data)} == {p.point_id for p in points}


def test_budget_starts_no_run_that_would_not_finish(tmp_path: Path) -> None:
    sweep = make_sweep()  # duration_s 30 -> expected 90 s per run before any row
    points = expand(sweep)
    clock = VirtualClock()
    fake = FakeRun(on_call=lambda: clock.advance(40.0))
    report = sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=fake, budget_s=200.0, clock=clock
    )
    # first run: 200 s left >= 90 expected; it takes 40 s; then the expected wall is the measured 40 s
    # starts at 0, 40, 80, 120, 160 (40 s left: just enough); at 200 nothing is left
    assert report.budget_exhausted and len(fake.calls) == 5
    assert sw.parse_duration("1h30m") == 5400 and sw.parse_duration("90m") == 5400
    assert sw.parse_duration("45s") == 45 and sw.parse_duration("3600") == 3600
    with pytest.raises(ValueError):
        sw.parse_duration("soon")


def test_t_quantiles_match_tables() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(0.95, 2) == pytest.approx(2.9200, abs=1e-4)
    assert t_quantile(0.975, 9) == pytest.approx(2.2622, abs=1e-4)
    assert t_quantile(0.95, 29) == pytest.approx(1.6991, abs=1e-4)
    assert t_quantile(0.975, 100000) == pytest.approx(1.95996, abs=1e-4)


def test_summarize_single_value_has_no_interval() -> None:
    s = summarize([5.0])
    assert s.n == 1 and s.mean == 5.0 and math.isnan(s.ci95)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_aggregate_csv_and_summary_math(tmp_path: Path) -> None:
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=FakeRun())
    exp_dir = tmp_path / "fake"
    written = agg.aggregate(agg.load_rows("fake", data), exp_dir)
    assert all(written.values())
    assert not any(agg.aggregate(agg.load_rows("fake", data), exp_dir).values())  # unchanged

    rows = _read_csv(exp_dir / "aggregate.csv")
    assert len(rows) == len(points)
    assert list(rows[0])[3:6] == ["routing.extensions", "traffic.tcp[0].max_window_pkts", "cc"]  # axis order
    r0 = rows[0]
    assert (
        r0["routing.extensions"] == "none"
        and r0["traffic.tcp[0].max_window_pkts"] == "4"
        and r0["cc"] == "reno"
    )
    assert r0["seed"] == "1" and r0["n_flows"] == "1"  # the UDP flow is not a TCP flow
    assert float(r0["throughput_total_bps"]) == 4001.0
    assert float(r0["flow1_throughput_bps"]) == 4001.0
    assert float(r0["tcp_timeouts_total"]) == 1.0 and float(r0["retransmits_total"]) == 2.0
    assert float(r0["routing_packets"]) == 10.0
    assert float(r0["rto_per_100_pkts"]) == pytest.approx(100 * 1 / 10)  # 14600 B / 1460 B = 10 packets

    summary = _read_csv(exp_dir / "summary.csv")
    assert len(summary) == 6
    s0 = summary[0]
    assert s0["n_runs"] == "3" and s0["seeds"] == "1 2 3"
    # throughput over seeds 1, 2, 3: 4001, 4002, 4003 -> mean 4002, sd 1, CI half-width t * 1/sqrt(3)
    assert float(s0["throughput_total_bps_mean"]) == pytest.approx(4002.0)
    assert float(s0["throughput_total_bps_std"]) == pytest.approx(1.0)
    assert float(s0["throughput_total_bps_ci95"]) == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert float(s0["throughput_total_bps_ci90"]) == pytest.approx(2.919986 / math.sqrt(3), rel=1e-5)
    assert float(s0["tcp_timeouts_per_flow_mean"]) == pytest.approx(2.0)


def test_run_metrics_counts_timeouts_once_per_source_and_handles_missing_values() -> None:
    summary = {
        "flows": [
            {
                "proto": "tcp",
                "src": 1,
                "throughput_bps": 100.0,
                "tcp_timeouts": 3,
                "retransmits": 1,
                "bytes_received": 1000,
            },
            {"proto": "tcp", "src": 1, "throughput_bps": 300.0, "tcp_timeouts": 3, "retransmits": None},
            {
                "proto": "tcp",
                "src": 2,
                "throughput_bps": None,
                "tcp_timeouts": 1,
                "error": "no iperf3 client output",
            },
        ],
        "routing_packets": None,
    }
    m, flows = agg.run_metrics(summary)
    assert m["throughput_total_bps"] == 400.0
    assert m["tcp_timeouts_total"] == 4.0  # station 1 counted once
    assert m["retransmits_total"] == 1.0
    assert math.isnan(m["routing_packets"])
    assert m["flows_failed"] == 1.0  # the flow without throughput, not the error string
    assert m["transfer_time_s"] == pytest.approx(1000 * 8 / 100.0)
    assert len(flows) == 3
    assert math.isnan(m["tcp_max_rto_ms"])  # no tcp_info samples
    assert math.isnan(m["tcp_aborts_total"])  # not recorded


def test_run_metrics_counts_aborts_once_per_source_station() -> None:
    flows = [
        {"src": 1, "throughput_bps": 1.0, "tcp_aborts": 1},
        {"src": 1, "throughput_bps": 1.0, "tcp_aborts": 1},
        {"src": 2, "throughput_bps": 1.0, "tcp_aborts": 0},
    ]
    m, _ = agg.run_metrics({"flows": flows})
    assert m["tcp_aborts_total"] == 1.0


def test_run_metrics_separates_spurious_rtos_once_per_source_station() -> None:
    flows = [
        {"src": 1, "throughput_bps": 1.0, "tcp_timeouts": 7, "tcp_spurious_rtos": 2},
        {"src": 1, "throughput_bps": 1.0, "tcp_timeouts": 7, "tcp_spurious_rtos": 2},
        {"src": 2, "throughput_bps": 1.0, "tcp_timeouts": 3, "tcp_spurious_rtos": 3},
    ]
    m, _ = agg.run_metrics({"flows": flows})
    assert (m["tcp_timeouts_total"], m["tcp_spurious_rtos_total"], m["tcp_real_timeouts_total"]) == (
        10.0,
        5.0,
        5.0,
    )
    old, _ = agg.run_metrics({"flows": [{"src": 1, "throughput_bps": 1.0, "tcp_timeouts": 4}]})
    assert math.isnan(old["tcp_spurious_rtos_total"]) and math.isnan(old["tcp_real_timeouts_total"])


def test_run_metrics_median_estimator_rto_over_the_flows() -> None:
    flows = [
        {"throughput_bps": 1.0, "tcp": {"p50_rto_ms": 300.0}},
        {"throughput_bps": 1.0, "tcp": {"p50_rto_ms": 900.0}},
        {"throughput_bps": 1.0, "tcp": {}},
    ]
    assert agg.run_metrics({"flows": flows})[0]["tcp_rto_p50_ms"] == 600.0
    assert math.isnan(agg.run_metrics({"flows": [{"throughput_bps": 1.0}]})[0]["tcp_rto_p50_ms"])


def test_run_metrics_takes_the_largest_kernel_rto_over_the_flows() -> None:
    flows = [
        {"throughput_bps": 1.0, "tcp": {"max_rto_ms": 1200.0}},
        {"throughput_bps": 1.0, "tcp": {"max_rto_ms": 35000.0}},
        {"throughput_bps": 1.0},
    ]
    m, _ = agg.run_metrics({"flows": flows})
    assert m["tcp_max_rto_ms"] == 35000.0


# ---------------------------------------------------------------------------- command line


def test_cli_runs_resumes_shards_and_aggregates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep_file = tmp_path / "s.yaml"
    sweep_file.write_text(SWEEP_YAML)
    out = str(tmp_path / "res")
    data = str(tmp_path / "data")
    fake = FakeRun()
    rc = sw.main(
        [str(sweep_file), "--out", out, "--data", data, "--shard", "1/2", "--json-report", "--parallel", "2"],
        run_fn=fake,
    )
    assert rc == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["ran"] == 9 and report["failed"] == 0
    assert (tmp_path / "res" / "fake" / "aggregate.csv").exists()
    assert (tmp_path / "res" / "fake" / "sweep.yaml").read_text() == SWEEP_YAML

    rc = sw.main([str(sweep_file), "--out", out, "--data", data, "--dry-run"], run_fn=fake)
    assert rc == 0
    assert "9 done, 9 to run" in capsys.readouterr().out

    rc = sw.main([str(sweep_file), "--out", out, "--data", data, "--json-report"], run_fn=fake)
    assert rc == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["skipped"] == 9


def test_cli_rejects_overrides_the_scenario_does_not_accept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_file = tmp_path / "s.yaml"
    sweep_file.write_text(
        f"experiment: x\nscenario: {SCENARIO}\nseeds: [1]\ngrid:\n  routing.protocl: [dsr]\n"
    )
    rc = sw.main([str(sweep_file), "--out", str(tmp_path), "--data", str(tmp_path)], run_fn=FakeRun())
    assert rc == 2
    assert "routing.protocl" in capsys.readouterr().err


def test_labels() -> None:
    assert label([]) == "none" and label(["elfn", "epln"]) == "elfn+epln"
    assert label(2.0) == "2" and label(2.5) == "2.5" and label(True) == "true"


def test_auto_sizes_by_one_scenario_per_station_and_flow_count() -> None:
    """``--parallel auto`` loads one scenario per distinct size, not per override set: multihop's
    480 points have 8 chain lengths; a window or protocol override does not change the size."""
    multihop = load_sweep(ROOT / "experiments" / "sweeps" / "multihop.yaml")
    points = expand(multihop)
    keys = {sw._size_key(p) for p in points}
    assert len(keys) == 8
    by_count = {p.overrides["stations.count"]: sw._size_key(p) for p in points}
    assert len(set(by_count.values())) == 8
    one = points[0]
    more_flows = dataclasses.replace(one, overrides={**one.overrides, "traffic.udp[2].src": 1})
    assert sw._size_key(more_flows) != sw._size_key(one)


def test_drain_lets_the_running_runs_finish_and_starts_no_more(tmp_path: Path) -> None:
    """SIGUSR1 (``sweep.DRAIN``) while two runs are in flight: both finish and write their rows,
    nothing else starts, and the next invocation resumes with the rest."""
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    started = threading.Barrier(2)

    def in_flight() -> None:
        started.wait(timeout=10)  # both runs are running when the drain comes
        sw.DRAIN.set()

    try:
        fake = FakeRun(on_call=in_flight)
        report = sw.run_points(
            sweep, points, out_root=tmp_path, data_dir=data, run_fn=fake, parallel=2, start_gap_s=0
        )
    finally:
        sw.DRAIN.clear()
    assert report.drained and not report.interrupted
    assert len(fake.calls) == 2 and report.ran == 2
    assert sorted(r.point_id for r in rows_of(data)) == sorted(c.point_id for c in fake.calls)
    rest = FakeRun()
    sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=rest, parallel=2)
    assert len(rest.calls) == len(points) - 2


def test_conn_summary_median_rto_skips_backed_off_samples() -> None:
    """The estimator's RTO: samples at backoff 0 only (a backed-off RTO is the timer's)."""
    from nodes.tcpctl.observe import conn_summary

    series = [
        {"rto_ms": 204.0, "backoff": 0},
        {"rto_ms": 408.0, "backoff": 1},
        {"rto_ms": 816.0, "backoff": 2},
        {"rto_ms": 240.0, "backoff": 0},
        {"rto_ms": 220.0},
    ]
    assert conn_summary(series)["p50_rto_ms"] == 220.0
    assert conn_summary([{"rto_ms": 408.0, "backoff": 1}])["p50_rto_ms"] is None


def test_rto_policy_share_sums_every_stations_abra_and_fixed_rto_counters() -> None:
    routers = [
        {"extensions": {"abra": {"counters": {"timeouts": 6, "mismatches": 3}}}},
        {"extensions": {"fixed_rto": {"counters": {"timeouts": 2, "mismatches": 0}}}},
        {"extensions": {"elfn": {"counters": {"timeouts": 50, "mismatches": 50}}}},
        {},
    ]
    assert agg.rto_policy_metrics(routers)["rto_policy_off_paper_pct"] == 37.5
    assert math.isnan(agg.rto_policy_metrics([{}])["rto_policy_off_paper_pct"])
