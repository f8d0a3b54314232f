"""Sequential paired sweeps, the rows kept in git, and ``--parallel auto``, in virtual time.

The runner's seams: a fake run function (``FakeRun`` from test_sweep writes run directories), a
virtual clock, and the plan fed with synthetic rows. Nothing here needs root.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from pathlib import Path

import numpy as np
import pytest

from experiments import sweep as sw
from experiments.capacity import AutoParallel, CapacityModel, measured_cost
from experiments.plan import Plan
from experiments.rows import RowStore, RunRecord
from experiments.spec import SweepError, expand, parse_sweep
from experiments.stats import Verdict, decide, paired_change

ROOT = Path(__file__).resolve().parents[2]

SEQ_YAML = """
experiment: seq
scenario: topologies/chain5.yaml
seeds: {first: 1, min: 4, max: 30, until: {metric: throughput_total_bps, axis: routing.extensions, baseline: []}}
grid:
  traffic.tcp[0].max_window_pkts: [4, 8]
  routing.extensions: [[], [abra]]
"""


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def level(seed: int) -> float:
    """A seed's topology: throughputs 10x apart between seeds, the same for every variant."""
    return 1e4 * (1 + 9 * random.Random(seed).random())


class EffectRun:
    """Fake run: window 4 -> abra +15 %; window 8 -> no effect; 5 % per-run noise."""

    def __init__(self) -> None:
        self.calls: list[sw.RunRequest] = []

    def __call__(self, req: sw.RunRequest) -> Path:
        self.calls.append(req)
        abra = req.overrides["routing.extensions"] == ["abra"]
        window = req.overrides["traffic.tcp[0].max_window_pkts"]
        factor = 1.15 if abra and window == 4 else 1.0
        noise = random.Random(f"{req.seed}-{abra}-{window}").gauss(0.0, 0.05)
        run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:8]
        run_dir.mkdir(parents=True)
        flow = {"proto": "tcp", "src": 1, "throughput_bps": level(req.seed) * factor * (1 + noise)}
        summary = {"complete": True, "valid": True, "validity": {"reasons": []}, "flows": [flow]}
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return run_dir


def test_a_known_effect_is_decided_early_and_no_effect_runs_to_max(tmp_path: Path) -> None:
    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    assert len(points) == 4 * 30  # every seed a block may use
    fake = EffectRun()
    report = sw.run_points(sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=fake, parallel=3)
    by_window = {dict(c.block)["traffic.tcp[0].max_window_pkts"]: c for c in report.comparisons}
    effect, none = by_window["4"], by_window["8"]
    assert effect.verdict is Verdict.HIGHER and 4 <= effect.change.n < 12
    assert effect.change.low < 15.0 < effect.change.high
    assert none.verdict is Verdict.INCONCLUSIVE and none.change.n == 30
    assert none.change.low < 0.0 < none.change.high
    seeds_run = {
        w: {r.seed for r in fake.calls if r.overrides["traffic.tcp[0].max_window_pkts"] == w} for w in (4, 8)
    }
    assert len(seeds_run[8]) == 30 and len(seeds_run[4]) < 15  # a decided block gets no more seeds
    # paired: the verdicts are computed on the seeds both variants ran; a block decided while
    # some of its runs were in flight can have a few unpaired rows (at most parallel - 1)
    rows = RowStore("seq", tmp_path / "d").load().counted()
    for w, comp in (("4", effect), ("8", none)):
        by_ext: dict[str, set[int]] = {}
        for r in rows:
            if r.params["traffic.tcp[0].max_window_pkts"] == w:
                by_ext.setdefault(r.params["routing.extensions"], set()).add(r.seed)
        assert comp.change.n == len(by_ext["none"] & by_ext["abra"])
        assert len(by_ext["none"] ^ by_ext["abra"]) <= 2
    # resuming finds every verdict from the rows alone and runs nothing
    again = EffectRun()
    report2 = sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=again, parallel=3
    )
    assert again.calls == []
    assert [c.verdict for c in report2.comparisons] == [c.verdict for c in report.comparisons]


def _record(point_id: str, seed: int, value: float) -> RunRecord:
    return RunRecord(
        "seq",
        point_id,
        0,
        {},
        seed,
        1,
        True,
        (),
        {"throughput_total_bps": value},
        {},
        (),
        10.0,
        10.0,
        "",
        "",
        "",
        "",
    )


def _simulate(effect: float, replicate: int, design: str = "repeated") -> tuple[Verdict, int]:
    """One sequential sweep of one block fed straight into the plan (no files)."""
    text = SEQ_YAML.replace("[4, 8]", "[4]")
    if design != "repeated":
        text = text.replace("min: 4, max: 30,", f"min: 4, max: 30, step: 2, design: {design},")
    sweep = parse_sweep(text, "seq.yaml")
    plan = Plan(sweep, expand(sweep))
    rng = random.Random(replicate)
    while (p := plan.next_point(set())) is not None:
        abra = p.params["routing.extensions"] == ["abra"]
        value = level(p.seed + 1000 * replicate) * (1 + effect if abra else 1.0) * (1 + rng.gauss(0, 0.05))
        plan.add(_record(p.point_id, p.seed, value))
    (c,) = plan.comparisons()
    return c.verdict, c.change.n


def test_sequential_rule_over_many_sweeps() -> None:
    """The stopping rule's behaviour over replicated sweeps: a +15 % effect is found (and found
    early); with no effect, the nominal 95 % intervals looked at after every seed declare a
    false effect in a bounded share of sweeps (repeated looks inflate it above 5 %)."""
    found = [_simulate(0.15, r) for r in range(12)]
    assert sum(v is Verdict.HIGHER for v, _ in found) >= 11
    assert float(np.median([n for _, n in found])) <= 8
    null = [_simulate(0.0, r) for r in range(12)]
    false_effects = sum(v in (Verdict.HIGHER, Verdict.LOWER) for v, _ in null)
    assert false_effects <= 4
    assert all(n == 30 for v, n in null if v is Verdict.INCONCLUSIVE)


def test_group_sequential_plan_decides_only_at_its_looks() -> None:
    """With ``design: group-sequential`` the plan judges at 4, 6, ..., 30 paired seeds only:
    a +15 % effect (5 % noise) stops at a look, a null runs to the last look."""
    found = [_simulate(0.15, r, "group-sequential") for r in range(6)]
    assert all(v is Verdict.HIGHER for v, _ in found)
    assert all(n in range(4, 31, 2) for _, n in found)
    v, n = _simulate(0.0, 0, "group-sequential")
    assert (v, n) == (Verdict.INCONCLUSIVE, 30)


def test_paired_change_sees_through_the_seed_spread_and_covers() -> None:
    rng = np.random.default_rng(1)
    base = 1e4 * (1 + 9 * rng.random(20))
    treat = base * 1.2 * (1 + rng.normal(0, 0.03, 20))
    one = paired_change([(treat, base)])
    assert one.method == "fieller" and 15.0 < one.low < 20.0 < one.high < 25.0
    # unpaired, the same numbers say nothing: the seed spread (10x) swamps a 20 % effect
    unpaired = paired_change([(treat, rng.permutation(base))])
    assert unpaired.high - unpaired.low > 10 * (one.high - one.low)
    # two blocks sharing seeds: the delta-method interval of the mean change (+20 % and +10 %)
    treat2 = base * 1.1 * (1 + rng.normal(0, 0.03, 20))
    two = paired_change([(treat, base), (treat2, base)])
    assert two.method == "delta" and two.low < 15.0 < two.high and two.high - two.low < 6.0
    assert math.isnan(paired_change([([1.0], [2.0])]).low)  # one pair: no interval
    # coverage of the nominal 95 % at 5 seeds (the smallest sweeps): 400 replicates
    hits = 0
    for i in range(400):
        r = np.random.default_rng(100 + i)
        b = 1e4 * (1 + 9 * r.random(5))
        c = paired_change([(b * 1.15 * (1 + r.normal(0, 0.05, 5)), b * (1 + r.normal(0, 0.05, 5)))])
        hits += c.low <= 15.0 <= c.high
    assert 0.90 <= hits / 400 <= 0.99


def test_a_ratio_of_non_negative_counts_is_not_below_minus_100_percent() -> None:
    # Cohen, SACK at 2 % and 2.5 m/s, RTOs per seed (2026-11-29): one baseline of 54 beside 0-15
    rc = [3.0, 1.0, 2.0, 3.0, 2.0, 0.0, 30.0, 2.0, 3.0]
    none = [15.0, 0.0, 5.0, 13.0, 14.0, 0.0, 54.0, 12.0, 2.0]
    c = paired_change([(rc, none)])
    assert c.method == "fieller" and c.low == -100.0 and -45.0 < c.high < -35.0
    assert decide(c, 20.0, 5, 20) is Verdict.LOWER
    two = paired_change([(rc, none), (rc, none)])  # the delta method over points: the same floor
    assert two.method == "delta" and two.low >= -100.0
    # values that can be negative keep the unclipped set
    neg = paired_change([([x - 10.0 for x in rc], none)])
    assert neg.low < -100.0


def test_decide_states() -> None:
    from experiments.stats import Change

    def ch(n: int, lo: float, hi: float) -> Change:
        return Change(n, (lo + hi) / 2, lo, hi, 0.95, "t")

    assert decide(ch(5, 2.0, 9.0), None, 5, 50) is Verdict.HIGHER
    assert decide(ch(5, -9.0, -2.0), None, 5, 50) is Verdict.LOWER
    assert decide(ch(4, 2.0, 9.0), None, 5, 50) is Verdict.UNDECIDED  # below min
    assert decide(ch(9, -2.0, 2.0), 3.0, 5, 50) is Verdict.PRECISE
    assert decide(ch(9, -5.0, 5.0), 3.0, 5, 50) is Verdict.UNDECIDED
    assert decide(ch(50, -5.0, 5.0), 3.0, 5, 50) is Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    ("until", "field", "reason"),
    [
        (
            "{metric: goodput, axis: routing.extensions, baseline: []}",
            "seeds.until.metric",
            "unknown metric 'goodput'",
        ),
        (
            "{metric: throughput_total_bps, axis: speed, baseline: []}",
            "seeds.until.axis",
            "'speed' is not an axis",
        ),
        (
            "{metric: throughput_total_bps, axis: routing.extensions, baseline: [elfn]}",
            "seeds.until.baseline",
            "not one of",
        ),
        (
            "{metric: throughput_total_bps, axis: routing.extensions, baseline: [], half_width_pct: -1}",
            "seeds.until.half_width_pct",
            "must be in (0, 1000)",
        ),
        (
            "{metric: throughput_total_bps, axis: routing.extensions, baseline: [], confidence: 1.5}",
            "seeds.until.confidence",
            "must be in [0.5, 1)",
        ),
    ],
)
def test_bad_until_is_a_load_error_with_file_line_and_field(until: str, field: str, reason: str) -> None:
    text = SEQ_YAML.replace(
        "until: {metric: throughput_total_bps, axis: routing.extensions, baseline: []}", f"until: {until}"
    )
    with pytest.raises(SweepError) as err:
        parse_sweep(text, "seq.yaml")
    msg = str(err.value)
    assert f"seq.yaml:4: {field}: " in msg and reason in msg, msg


@pytest.mark.parametrize(
    ("seeds", "field", "reason"),
    [("min: 40, max: 30", "seeds.max", "below min 40"), ("min: 1, max: 30", "seeds.min", "at least 2")],
)
def test_impossible_seed_bounds_are_load_errors(seeds: str, field: str, reason: str) -> None:
    with pytest.raises(SweepError) as err:
        parse_sweep(SEQ_YAML.replace("min: 4, max: 30", seeds), "seq.yaml")
    assert f"seq.yaml:4: {field}: " in str(err.value) and reason in str(err.value)


# ---------------------------------------------------------------------------- the rows file


def test_cut_duplicate_and_foreign_rows_are_reported_and_skipped(tmp_path: Path) -> None:
    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    data = tmp_path / "d"
    sw.run_points(sweep, points[:8], out_root=tmp_path, data_dir=data, run_fn=EffectRun())
    store = RowStore("seq", data)
    path = store.path
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 9  # header + 8 rows
    # a duplicate of line 3, an altered copy of line 4, and a row cut short at the end
    altered = lines[3].replace(",true,", ",false,", 1)
    path.write_text("".join(lines) + lines[2] + altered + lines[4][:40])
    ids = {p.point_id: p.index for p in points}
    loaded = store.load(ids)
    assert len(loaded.counted()) == 8
    problems = "\n".join(loaded.problems)
    assert f"{path}:10: duplicate of the valid row at line 3" in problems
    assert f"{path}:11: row cut short or altered" in problems
    assert f"{path}:12: row cut short (no end of line)" in problems
    # the next append ends the cut line first: the new row is whole and counts
    sw.run_points(sweep, points[8:9], out_root=tmp_path, data_dir=data, run_fn=EffectRun())
    assert len(store.load(ids).counted()) == 9
    # rows of another sweep definition (point ids it does not have) are skipped, never averaged in
    other = {pid: i for pid, i in ids.items() if pid != points[0].point_id}
    again = store.load(other)
    assert len(again.counted()) == 8 and any(
        "not a point of this sweep definition" in p for p in again.problems
    )


# ---------------------------------------------------------------------------- --parallel auto


def _run(
    valid: bool = True, lag: float = 0.1, rlag: float = 2.0, psi: float = 0.0, cpu: float = math.nan
) -> RunRecord:
    signals = {
        "medium_lag_p99_ms": lag,
        "router_lag_p99_ms": rlag,
        "cpu_pressure_share": psi,
        "run_cpu_s": cpu,
    }
    return RunRecord(
        "x", "p", 0, {}, 1, 1, valid, () if valid else ("medium lag max 300 ms > 20 ms",), {},
        signals, (), 60.0, 70.0, "", "", "", "",
    )  # fmt: skip


def test_auto_parallel_starts_from_the_cost_and_backs_off_like_aimd() -> None:
    model = CapacityModel()
    cost = model.estimate(stations=20, flows=11)
    auto = AutoParallel(cores=2, cost_cores=cost, mem_available_mb=20000, stations=20, model=model)
    assert auto.limit() == int(2 * model.target_cpu_share / cost) >= 2
    start = auto.limit()
    for _ in range(start):  # `limit` healthy runs in a row, host not saturated: one more
        auto.observe(_run(), host_busy=0.3)
    assert auto.limit() == start + 1
    for _ in range(start + 1):  # healthy, but the host is saturated: no growth
        auto.observe(_run(), host_busy=0.95)
    assert auto.limit() == start + 1
    assert auto.observe(_run(psi=0.57), host_busy=0.95) is None  # CPU pressure alone: recorded, not judged
    assert auto.observe(_run(lag=0.9), host_busy=0.95) is None  # under the band (1 ms): healthy
    assert auto.observe(_run(lag=1.5), host_busy=0.3) is not None  # warning band, still valid: one less
    assert auto.limit() == start
    assert auto.observe(_run(rlag=17.0), host_busy=0.95) is None  # sweep_capacity's valid runs: healthy
    msg = auto.observe(_run(rlag=30.0), host_busy=0.3)  # a lagging router loop: one less again
    assert msg is not None and "router loop lag" in msg and auto.limit() == start - 1
    auto._limit = start  # (back where the rest of the test expects it)
    msg = auto.observe(_run(valid=False), host_busy=0.3)  # invalid: halve
    assert auto.limit() == max(1, start // 2) and msg is not None and "invalid run" in msg
    assert AutoParallel(cores=2, cost_cores=cost, mem_available_mb=1000, stations=20).cap == 1  # memory


def test_auto_parallel_caps_the_stations_a_flood_wakes_at_once() -> None:
    """A cheap run of many stations (Cohen: 100 routers, 0.25 cores on average) starts alone on 2
    cores, however low its mean cost; Klemm's 52 stations (50 mobile, 2 static end points) run two
    at a time; 20-station runs are
    held by their cost, not by this cap."""
    cohen = AutoParallel(cores=2, cost_cores=0.253, mem_available_mb=20000, stations=100)
    assert cohen.cap == 1 and cohen.limit() == 1
    for _ in range(5):
        cohen.observe(_run(), host_busy=0.3)
    assert cohen.limit() == 1  # healthy runs do not grow it past the cap
    assert AutoParallel(cores=2, cost_cores=0.2, mem_available_mb=20000, stations=52).limit() == 2
    ghanem = AutoParallel(cores=2, cost_cores=0.4, mem_available_mb=20000, stations=20)
    assert ghanem.cap == 5 and ghanem.limit() == 3
    assert AutoParallel(cores=8, cost_cores=0.253, mem_available_mb=20000, stations=100).cap == 4


def test_measured_cost_is_the_median_cores_per_run() -> None:
    rows = [_run(cpu=c) for c in (7.0, 14.0, 700.0)] + [_run(), _run(valid=False, cpu=1.0)]
    assert measured_cost(rows) == pytest.approx(14.0 / 70.0)  # the starved invalid run left out
    assert measured_cost([_run()]) is None


def test_merging_hosts_rows_records_each_run_once(tmp_path: Path) -> None:
    from experiments.distributed import merge_rows

    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    for i in range(2):  # two hosts, each with its shard's rows
        shard = sw.shard_points(points[:16], (i, 2), sweep)
        sw.run_points(
            sweep, shard, out_root=tmp_path / f"h{i}", data_dir=tmp_path / f"h{i}", run_fn=EffectRun()
        )
    srcs = [tmp_path / "h0" / "seq.csv", tmp_path / "h1" / "seq.csv"]
    srcs = [p for p in srcs if p.exists()]
    added, notes = merge_rows(sweep, tmp_path / "ctl", srcs, revision="")
    assert added == 16 and notes == []
    assert merge_rows(sweep, tmp_path / "ctl", srcs, revision="") == (0, [])
    counted = RowStore("seq", tmp_path / "ctl").load({p.point_id: p.index for p in points}).counted()
    assert sorted(r.point_id for r in counted) == sorted(p.point_id for p in points[:16])


def test_where_runs_one_blocks_points_with_the_full_sweeps_ids(tmp_path: Path) -> None:
    """``--where`` keeps a block's points (every variant, every seed) and their ids: a later run of
    the whole sweep finds those rows and pays for nothing twice."""
    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    where = sw.parse_where(["traffic.tcp[0].max_window_pkts=4"])
    kept = sw.where_points(points, where, sweep)
    assert kept and all(p.params["traffic.tcp[0].max_window_pkts"] == 4 for p in kept)
    assert {p.point_id for p in kept} == {
        p.point_id for p in points if p.params["traffic.tcp[0].max_window_pkts"] == 4
    }
    run = EffectRun()
    sw.run_points(sweep, kept, out_root=tmp_path, data_dir=tmp_path, run_fn=run)
    first = len(run.calls)
    assert first > 0 and all("max_window_pkts" in str(c.overrides) for c in run.calls)
    again = EffectRun()
    sw.run_points(sweep, points, out_root=tmp_path, data_dir=tmp_path, run_fn=again)
    assert {c.point_id for c in again.calls}.isdisjoint({c.point_id for c in run.calls})
    with pytest.raises(ValueError, match="paired axis"):
        sw.where_points(points, sw.parse_where(["routing.extensions=abra"]), sweep)
    with pytest.raises(ValueError, match="no axis 'speed'"):
        sw.where_points(points, sw.parse_where(["speed=4"]), sweep)
    with pytest.raises(ValueError, match=r"no such value \(values: 4, 8\)"):
        sw.where_points(points, sw.parse_where(["traffic.tcp[0].max_window_pkts=5"]), sweep)
    with pytest.raises(ValueError, match="expected AXIS=VALUE"):
        sw.parse_where(["speed"])


def test_max_seeds_runs_every_blocks_minimum_and_a_later_run_grows_them(tmp_path: Path) -> None:
    """``--max-seeds``: an undecided block stops at the cap in this invocation (the sweep's other
    claims get their minimum first); the next invocation without it goes on from the rows."""
    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    capped = EffectRun()
    report = sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=capped, seed_cap=6
    )
    seeds = {
        w: {r.seed for r in capped.calls if r.overrides["traffic.tcp[0].max_window_pkts"] == w}
        for w in (4, 8)
    }
    assert seeds[8] == set(range(1, 7))  # no effect: undecided, stopped at the cap, not at max 30
    assert len(seeds[4]) <= 6
    assert all(c.change.n <= 6 for c in report.comparisons)
    later = EffectRun()
    sw.run_points(sweep, points, out_root=tmp_path, data_dir=tmp_path / "d", run_fn=later)
    again = {r.seed for r in later.calls if r.overrides["traffic.tcp[0].max_window_pkts"] == 8}
    assert again == set(range(7, 31))  # the undecided block grows to max, nothing is run twice
    assert sw.main(["experiments/sweeps/smoke.yaml", "--max-seeds", "0", "--dry-run"]) == 2


def test_mean_over_points_does_not_credit_a_chance_negative_covariance() -> None:
    """Cohen at 1 % loss, seeds 1-4: RTO counts at 2.5 m/s (-60 %) and 25 m/s (-4 %), whose seed
    influences happen to cancel. Their mean change (-32 %) is no surer than either point."""
    low_speed = ([1.0, 0.0, 0.0, 1.0], [4.0, 0.0, 0.0, 1.0])
    high_speed = ([8.0, 0.0, 3.0, 13.0], [5.0, 0.0, 3.0, 17.0])
    two = paired_change([low_speed, high_speed])
    assert math.isclose(two.value, -32.0, abs_tol=0.01)
    assert two.low < 0.0 < two.high  # was [-34.9, -29.1]: "reproduced" from two undecided points
    # at least as wide as two independent points' mean would be
    assert two.high - two.low > 2 * 40.0
    # correlated blocks (the usual case: a seed fixes the topology for every point) still decide
    rng = np.random.default_rng(7)
    base = 1e4 * (1 + 9 * rng.random(10))
    a = paired_change(
        [
            (base * 0.8 * (1 + rng.normal(0, 0.03, 10)), base),
            (base * 0.7 * (1 + rng.normal(0, 0.03, 10)), base),
        ]
    )
    assert a.high < 0.0 and a.low < -25.0 < a.high


def test_plan_says_which_points_it_adds_no_more_seeds_to() -> None:
    """Window 4 gets a clear +30 % and is decided; window 8's +-30 % around 0 is not, so its points
    still get seeds while window 4's do not (experiments.compare reads this for claims on other
    metrics than the one the seeds follow)."""
    sweep = parse_sweep(SEQ_YAML, "seq.yaml")
    points = expand(sweep)
    plan = Plan(sweep, points)
    for p in points:
        if p.seed > 4:
            continue
        abra = p.params["routing.extensions"] == ["abra"]
        w4 = p.params["traffic.tcp[0].max_window_pkts"] == 4
        rng = random.Random(f"{p.seed}-{abra}-{w4}")
        swing = (0.3 if p.seed % 2 else -0.3) if abra else 0.0  # window 8: +-30 %, mean 0
        gain = (1.3 if abra else 1.0) * (1 + rng.gauss(0.0, 0.02)) if w4 else 1 + swing
        plan.add(_record(p.point_id, p.seed, 1e4 * gain))
    w4 = [p for p in points if p.params["traffic.tcp[0].max_window_pkts"] == 4]
    w8 = [p for p in points if p.params["traffic.tcp[0].max_window_pkts"] == 8]
    assert all(plan.stopped(p.point_id) for p in w4)  # every seed of the block, run or not
    assert not any(plan.stopped(p.point_id) for p in w8)
    assert not plan.stopped("not-a-point")
