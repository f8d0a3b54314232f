"""experiments.compare and experiments.papers: every claim finds its points; the numbers are right."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import shutil
import uuid
from pathlib import Path

import pytest

from experiments import sweep as sw
from experiments.aggregate import group_runs, load_rows
from experiments.compare import compare, evaluate, main
from experiments.papers import PAPERS
from experiments.rows import RunRecord
from experiments.spec import SequentialSeeds, Sweep, SweepError, expand, label, load_sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _paper_sweeps(key: str) -> list[Sweep]:
    out = []
    for f in sorted(Path("experiments/sweeps").glob("*.yaml")):
        sweep = load_sweep(f)
        if sweep.paper == key:
            out.append(sweep)
    return out


@pytest.mark.parametrize("key", sorted(PAPERS))
def test_every_claim_finds_points_and_baselines_in_a_sweep_of_its_paper(key: str) -> None:
    """Every headline number can be measured by some shipped sweep of its part (the full-size one,
    or the reduced one for points the full sweep leaves out, e.g. Yu's 10 flows), and the
    full-size sweep of each part (``<paper>.yaml``, ``<paper>-<part>.yaml``) draws its figures."""
    paper = PAPERS[key]
    sweeps = _paper_sweeps(key)
    for part in paper.parts:
        assert str(paper.sweep_file(part)) in {f"experiments/sweeps/{s.experiment}.yaml" for s in sweeps}
    param_sets = []
    for sweep in sweeps:
        groups = {tuple((k, label(v)) for k, v in p.params.items()) for p in expand(sweep)}
        param_sets.append((sweep.part, [dict(g) for g in groups]))
    for claim in paper.claims:
        found = False
        for part, params in param_sets:
            if part != claim.part:
                continue
            treated = [p for p in params if all(k in p and p[k] == label(v) for k, v in claim.where.items())]
            bases = [{**p, **{k: label(v) for k, v in claim.baseline.items()}} for p in treated]
            if treated and (claim.kind != "change_pct" or all(b in params for b in bases)):
                found = True
        assert found, (
            f"{claim.key}: no sweep of {key} part {claim.part!r} has points (and baselines) for {claim.where}"
        )
    for fig in paper.figures:
        full = next(s for s in sweeps if s.experiment == paper.sweep_file(fig.part).stem)
        axes = full.axes()
        assert all(a in axes for a in (fig.x, *fig.series, *fig.panels)), fig.name


def test_a_sweeps_part_must_be_one_of_its_papers(tmp_path: Path) -> None:
    text = (
        Path("experiments/sweeps/liu2001-partition.yaml").read_text().replace("part: partition", "part: typo")
    )
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(
        SweepError, match="part: 'typo' is not a part of liu2001 \\(parts: congestion, partition\\)"
    ):
        load_sweep(f)


def test_liu_reports_compare_only_their_parts_claims(tmp_path: Path) -> None:
    """The congestion sweep's report lists the congestion claims, links the other parts, and
    make reproduce's list of sweep files has all three."""
    from experiments.papers import main as papers_main

    sweep = load_sweep("experiments/sweeps/liu2001-congestion.yaml")
    (tmp_path / "data").mkdir()
    path, _ = compare(sweep, data_dir=tmp_path / "data", reports_dir=tmp_path)
    md = path.read_text()
    assert "BER and congestion, d = 10 ms: 460 s vs 1200 s, -62 % (Fig. 13)" in md
    claim_rows = [line for line in md.splitlines() if line.startswith("| ATCP")]
    assert len(claim_rows) == 4 and all("congestion" in line for line in claim_rows), claim_rows
    assert "[liu2001](liu2001.md)" in md and "[liu2001-partition](liu2001-partition.md)" in md
    assert papers_main(["sweeps", "liu2001"]) == 0


def fake_ghanem(req: sw.RunRequest) -> Path:
    """Throughput: a per-seed topology level (10x apart across seeds, as real random placements are)
    times +10 % with abra, -20 % with fixed_rto, times a small per-run noise; timeouts = seed."""
    ext = req.overrides["routing.extensions"]
    factor = 1.1 if ext == ["abra"] else 0.8 if ext == ["fixed_rto"] else 1.0
    rng = random.Random(f"{req.seed}-{ext}-{req.overrides.get('mobility.max_speed_mps')}")
    level = 1e4 * (1 + 9 * random.Random(req.seed).random())
    run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:6]
    run_dir.mkdir(parents=True)
    flow = {
        "proto": "tcp",
        "src": 1,
        "dst": 20,
        "throughput_bps": level * factor * (1 + rng.uniform(-0.02, 0.02)),
        "tcp_timeouts": req.seed,
    }
    summary = {"complete": True, "valid": True, "routing_packets": 100, "flows": [flow]}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_compare_ghanem_with_fake_runs(tmp_path: Path) -> None:
    sweep = load_sweep("experiments/sweeps/ghanem2008.yaml")
    sweep = sweep.model_copy(update={"seeds": [1, 2, 3, 4, 5, 6]})
    data, reports = tmp_path / "data", tmp_path / "reports"
    sw.run_points(
        sweep, expand(sweep), out_root=tmp_path / "results", data_dir=data, run_fn=fake_ghanem, parallel=4
    )
    groups = group_runs(load_rows(sweep.experiment, data).counted)
    by_key = {c.key: evaluate(c, groups) for c in PAPERS["ghanem2008"].claims}
    abra = by_key["aodv-abra-10"]
    # paired: the 10x spread between seeds cancels; the +10 % is found within the 2 % noise
    assert abra.value == pytest.approx(10.0, abs=1.5)
    assert 5.0 < abra.change.low < abra.value < abra.change.high < 15.0
    # +10 % whose interval lies below the paper's +26.6 %: the direction, smaller
    assert abra.verdict == "reproduced in direction, smaller" and abra.pairs == 1 and abra.change.n == 6
    assert abra.within_factor.startswith("no")  # 0.38x
    avg = by_key["dsr-abra-avg"]
    assert avg.pairs == 3 and avg.verdict in ("reproduced", "reproduced in direction, smaller")
    assert by_key["dsr-fixed_rto-2"].verdict == "contradicted"  # ours -20 %, the paper's +5.1 %
    assert by_key["dsr-abra-20"].verdict == "contradicted"  # the paper's -1.0 (no effect), ours +10 %

    md = compare(sweep, data_dir=data, reports_dir=reports)[0].read_text()
    assert compare(sweep, data_dir=data, reports_dir=reports)[1] is False  # unchanged the second time
    assert "| AODV abra vs NewReno, max speed 10 m/s (Table 1) | +26.6 % | +10." in md
    assert (reports / "ghanem2008-throughput.png").stat().st_size > 1000
    assert (reports / "ghanem2008-claims.png").exists()

    # The report comes from the rows alone: without results/, the same report.
    shutil.rmtree(tmp_path / "results")
    (reports / "ghanem2008.md").unlink()
    assert compare(sweep, data_dir=data, reports_dir=reports)[0].read_text() == md
    sweep_file = tmp_path / "ghanem2008.yaml"
    sweep_file.write_text(Path("experiments/sweeps/ghanem2008.yaml").read_text())
    args = [
        "ghanem2008",
        "--sweep",
        str(sweep_file),
        "--data",
        str(data),
        "--reports",
        str(reports),
        "--quiet",
    ]
    assert main(args) == 0


def test_claim_without_points_is_reported_not_raised(tmp_path: Path) -> None:
    claim = PAPERS["yu2004"].claims[0]
    res = evaluate(claim, [])
    assert res.pairs == 0 and res.verdict == "inconclusive" and res.note == "no runs yet"
    other = group_runs(
        [_record({"scheme": "elfn", "speed": "10", "tcp_flows": "5"}, 1, throughput_total_bps=1.0)]
    )
    assert evaluate(claim, other).note == "no matching points in this sweep"
    # the sweep defines the claim's points but none has run yet (a scheme added to a sweep)
    defined = [{"speed": "10", **{k: str(v) for k, v in claim.where.items()}}]
    assert evaluate(claim, other, defined).note == "the sweep has these points; no runs of them yet"
    assert evaluate(claim, other, [{"scheme": "elfn", "speed": "10", "tcp_flows": "1"}]).note == (
        "no matching points in this sweep"
    )


def test_claim_note_counts_the_sweeps_points_not_run_yet() -> None:
    """An "up to" claim over speeds with runs at one speed of two says so in its note."""
    claim = next(c for c in PAPERS["yu2004"].claims if c.key == "epln_bead-throughput")
    runs = [
        _record({"scheme": s, "speed": "10", "tcp_flows": "1"}, seed, throughput_total_bps=v)
        for seed in (1, 2, 3)
        for s, v in (("elfn", 400.0 + seed), ("epln_bead", 460.0 + 2 * seed))
    ]
    groups = group_runs(runs)
    defined = [
        {"scheme": s, "speed": v, "tcp_flows": "1"} for s in ("elfn", "epln_bead") for v in ("10", "20")
    ]
    res = evaluate(claim, groups, defined)
    assert res.pairs == 1 and res.note.endswith("; 1 of the sweep's 2 points run")
    assert "points run" not in evaluate(claim, groups, defined[:1] + defined[2:3]).note


def test_up_to_claim_leaves_out_blocks_below_the_minimum_seeds() -> None:
    """An "up to" over speeds takes its extreme among blocks with the sweep's minimum of seeds:
    one seed at 20 m/s (+40 %) does not replace 10 m/s's three (+10 %) until it has three."""
    claim = next(c for c in PAPERS["yu2004"].claims if c.key == "epln_bead-throughput")

    def runs(speed: str, seeds: range, gain: float) -> list[RunRecord]:
        return [
            _record({"scheme": s, "speed": speed, "tcp_flows": "1"}, seed, throughput_total_bps=v)
            for seed in seeds
            for s, v in (("elfn", 400.0 + seed), ("epln_bead", (400.0 + seed) * gain))
        ]

    groups = group_runs(runs("10", range(1, 4), 1.10) + runs("20", range(1, 2), 1.40))
    res = evaluate(claim, groups, min_seeds=3)
    assert res.value == pytest.approx(10.0) and res.change.n == 3
    assert res.note == "max at speed=10 (1 of 2 points below 3 seeds, left out until they have them)"
    assert evaluate(claim, groups).value == pytest.approx(40.0)  # no minimum known: every block
    assert evaluate(claim, groups, min_seeds=5).value == pytest.approx(40.0)  # none has it: all


def test_up_to_claim_with_one_block_names_no_extreme() -> None:
    """Yu 2004's 100-node claims fix the speed: their one block is no "max at" anything."""
    claim = next(c for c in PAPERS["yu2004"].claims if c.key == "epln_bead-throughput-100")
    runs = [
        _record({"scheme": s, "speed": "20", "tcp_flows": "1"}, seed, throughput_total_bps=v)
        for seed in (1, 2, 3)
        for s, v in (("elfn", 100.0 + seed), ("epln_bead", 130.0 + 2 * seed))
    ]
    res = evaluate(claim, group_runs(runs), min_seeds=3)
    assert res.change.n == 3 and res.value > 0
    assert res.note == ""


def test_value_claim_says_when_its_runs_lack_the_metric() -> None:
    """Klemm's single-RTS share at 4 m/s: a run made before the metric existed gives no value,
    and the note says why the row is empty instead of leaving it blank."""
    claim = next(c for c in PAPERS["klemm2004"].claims if c.key == "original-rts-one")
    params = {"mobility.max_speed_mps": "4", "lm": "original"}
    old = group_runs([_record(params, 1, throughput_total_bps=1.0)])
    res = evaluate(claim, old)
    assert (
        res.change.n == 0 and res.note == "rts_one_attempt_pct not recorded by the 1 run(s) of these points"
    )
    new = group_runs([_record(params, s, rts_one_attempt_pct=70.0 + s) for s in (1, 2)])
    assert evaluate(claim, new).note == "" and evaluate(claim, new).value == pytest.approx(71.5)


def test_reproduce_runs_every_part_within_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """make reproduce PAPER=liu2001: the three sweeps in turn, each with what is left of the
    budget, each followed by its report; a sweep name runs that sweep only."""
    from experiments import reproduce

    calls: list[tuple[str, list[str]]] = []
    clock = iter([0.0, 0.0, 1000.0, 3599.5])  # the start, then before each sweep

    def fake_sweep(argv: list[str]) -> int:
        calls.append(("sweep", argv))
        return 1 if "liu2001-congestion" in argv[0] else 0  # runs not complete: go on

    monkeypatch.setattr(reproduce.sweep, "main", fake_sweep)
    monkeypatch.setattr(reproduce.compare, "main", lambda argv: calls.append(("compare", argv)) or 0)
    monkeypatch.setattr(reproduce.time, "monotonic", lambda: next(clock))
    assert reproduce.main(["liu2001", "--budget", "1h"]) == 1
    assert [(k, a[0]) for k, a in calls] == [
        ("sweep", "experiments/sweeps/liu2001.yaml"),
        ("compare", "liu2001"),
        ("sweep", "experiments/sweeps/liu2001-congestion.yaml"),
        ("compare", "liu2001-congestion"),
        ("compare", "liu2001-partition"),  # 0.5 s left: not started, its report still written
    ]
    assert calls[0][1][-2:] == ["--budget", "3600s"] and calls[2][1][-2:] == ["--budget", "2600s"]
    calls.clear()
    assert reproduce.main(["yu2004-100"]) == 0
    assert [(k, a[0]) for k, a in calls] == [
        ("sweep", "experiments/sweeps/yu2004-100.yaml"),
        ("compare", "yu2004-100"),
    ]


def fake_liu(req: sw.RunRequest) -> Path:
    """1 MB file: TCP 900 s (+-1 %); ATCP 450 s, except seed 4, whose file never arrives within the
    3000 s run (half of it got there)."""
    atcp = req.overrides["routing.extensions"] == ["atcp"]
    rng = random.Random(f"{req.seed}-{atcp}-{req.overrides.get('p2p.delay_ms')}")
    delivered = not (atcp and req.seed == 4)
    t = (450.0 if atcp else 900.0) * (1 + rng.uniform(-0.01, 0.01))
    flow = {
        "proto": "tcp",
        "src": 1,
        "dst": 5,
        "throughput_bps": 8e6 / t if delivered else 4e6 / 3000,
        "tcp_timeouts": 0,
        "bytes_received": 1_000_000 if delivered else 500_000,
        "file_delivered": delivered,
        "transfer_time_s": t if delivered else None,
    }
    run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:6]
    run_dir.mkdir(parents=True)
    summary = {"complete": True, "valid": True, "duration_s": t if delivered else 3000.0, "flows": [flow]}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_an_undelivered_file_counts_at_the_runs_limit_not_as_missing(tmp_path: Path) -> None:
    """Dropping the run whose file never arrived would report ATCP at -50 %; counted at its 3000 s
    limit (a lower bound) the four seeds give about (3 x 450 + 3000) / 4 / 900 - 1 = +21 %, and the
    report says that one run is a bound."""
    sweep = load_sweep("experiments/sweeps/liu2001.yaml")
    assert isinstance(sweep.seeds, SequentialSeeds) and sweep.seeds.until.metric == "transfer_time_lb_s"
    sweep = sweep.model_copy(update={"seeds": [1, 2, 3, 4]})
    data = tmp_path / "data"
    sw.run_points(
        sweep, expand(sweep), out_root=tmp_path / "results", data_dir=data, run_fn=fake_liu, parallel=4
    )
    runs = load_rows(sweep.experiment, data).counted
    stuck = [r for r in runs if r.params["routing.extensions"] == "atcp" and r.seed == 4]
    assert len(stuck) == 3  # one per delay
    assert all(math.isnan(r.metric("transfer_time_s")) for r in stuck)
    assert all(r.metric("transfer_time_lb_s") == 3000.0 and r.censored("transfer_time_lb_s") for r in stuck)
    done = next(r for r in runs if r.seed == 1)
    assert done.metric("transfer_time_lb_s") == done.metric("transfer_time_s") and not done.censored(
        "transfer_time_lb_s"
    )
    groups = group_runs(runs)
    res = evaluate(next(c for c in PAPERS["liu2001"].claims if c.key == "atcp-time-10"), groups)
    assert res.change.n == 4
    assert res.value == pytest.approx(100 * ((3 * 450 + 3000) / 4 / 900 - 1), abs=1.5)
    assert "1 run without the whole file" in res.note


def test_until_accepts_derived_metrics_and_still_refuses_unknown_ones(tmp_path: Path) -> None:
    text = Path("experiments/sweeps/liu2001.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("metric: transfer_time_lb_s", "metric: transfer_time_ub_s"))
    with pytest.raises(SweepError, match="transfer_time_ub_s"):
        load_sweep(bad)
    good = tmp_path / "good.yaml"
    good.write_text(text)
    assert isinstance(load_sweep(good).seeds, SequentialSeeds)


def test_verdict_waits_for_the_minimum_and_is_one_of_the_vocabulary() -> None:
    from experiments.compare import Result
    from experiments.stats import Change

    claim = PAPERS["klemm2004"].claims[0]  # +75 % goodput, a relative claim
    decided = Change(3, 40.0, 10.0, 70.0, 0.95, "fieller")
    spans = Change(12, 10.0, -5.0, 25.0, 0.95, "fieller")
    pending = Result(claim, decided, 1, 6, min_seeds=10, max_seeds=30)
    assert pending.verdict == "inconclusive" and pending.pending
    assert Result(claim, decided, 1, 6).verdict == "reproduced in direction, smaller"  # 70 < 75
    assert Result(claim, spans, 1, 24, min_seeds=10, max_seeds=30).verdict == "inconclusive"
    narrow = Change(12, 1.0, -2.0, 2.5, 0.95, "fieller")  # within Klemm's +-3 points
    assert Result(claim, narrow, 1, 24, min_seeds=10, max_seeds=30).verdict == "no effect"
    assert (
        Result(
            claim, dataclasses.replace(decided, n=10, high=90.0), 1, 20, min_seeds=10, max_seeds=30
        ).verdict
        == "reproduced"
    )


def test_size_is_compared_for_values_and_reproduced_directions_only() -> None:
    from experiments.compare import Result
    from experiments.stats import Change

    by_key = {c.key: c for c in PAPERS["klemm2004"].claims}
    goodput = by_key["combined-goodput"]  # +75 %
    reproduced = Change(10, 30.0, 10.0, 50.0, 0.95, "fieller")
    assert Result(goodput, reproduced, 1, 20, min_seeds=10, max_seeds=30).within_factor == "no (0.4x)"
    big = dataclasses.replace(reproduced, value=100.0, low=80.0, high=120.0)
    assert Result(goodput, big, 1, 20, min_seeds=10, max_seeds=30).within_factor == "yes (1.3x)"
    opposite = Change(10, -30.0, -50.0, -10.0, 0.95, "fieller")
    res = Result(goodput, opposite, 1, 20, min_seeds=10, max_seeds=30)
    assert res.verdict == "contradicted" and res.within_factor == "-"
    rto = by_key["original-rto"]  # about 6 RTOs per 100 packets: an absolute value
    measured = Change(10, 0.7, 0.6, 0.8, 0.95, "student-t")
    res = Result(rto, measured, 1, 10, min_seeds=10, max_seeds=30)
    assert res.verdict == "contradicted" and res.within_factor == "no (0.12x)"


def test_a_paper_number_near_zero_follows_the_direction_rule_once_zero_is_excluded() -> None:
    from experiments.compare import Result
    from experiments.stats import Change

    claim = next(c for c in PAPERS["ghanem2008"].claims if c.key == "dsr-fixed_rto-20")  # +0.6 %
    up = Change(20, 12.5, 4.5, 21.9, 0.95, "fieller")
    # the paper's +0.6 % is within its margin (+-2.5 points): the paper says no change, so a
    # change either way contradicts it, and an interval within the margin is "no effect"
    res = Result(claim, up, 1, 40, min_seeds=20, max_seeds=50)
    assert res.verdict == "contradicted" and res.within_factor == "-"
    down = Change(20, -12.5, -21.9, -4.5, 0.95, "fieller")
    assert Result(claim, down, 1, 40, min_seeds=20, max_seeds=50).verdict == "contradicted"
    flat = Change(20, 0.5, -2.0, 2.4, 0.95, "fieller")
    res = Result(claim, flat, 1, 40, min_seeds=20, max_seeds=50)
    assert res.verdict == "no effect" and res.within_factor == "-"
    wide = Change(20, 0.5, -3.0, 4.0, 0.95, "fieller")
    assert Result(claim, wide, 1, 40, min_seeds=20, max_seeds=50).verdict == "inconclusive"


def test_a_report_links_only_the_figures_it_draws(tmp_path: Path) -> None:
    """Liu's partition part has absolute claims only: no claims figure, and no link to one."""
    sweep = load_sweep("experiments/sweeps/liu2001-partition.yaml")
    reports = tmp_path / "reports"
    path, _ = compare(sweep, data_dir=tmp_path / "data", reports_dir=reports)
    md = path.read_text()
    assert "claims.png" not in md and not (reports / "liu2001-partition-claims.png").exists()
    # no rows yet: no transfer-time figure either, and no link to one
    assert "transfer-time.png" not in md and not (reports / "liu2001-partition-transfer-time.png").exists()
    assert "Sweep `experiments/sweeps/liu2001-partition.yaml`" in md


def test_a_variant_sweep_names_the_report_it_varies() -> None:
    """liu2001-ifq50 (the first BER-only sweep, 50-packet queue) is not the paper's main part."""
    from experiments.aggregate import Rows
    from experiments.compare import comparison_markdown

    sweep = load_sweep("experiments/sweeps/liu2001-ifq50.yaml")
    md = comparison_markdown(
        sweep.experiment, PAPERS["liu2001"], [], Rows(sweep.experiment, [], [], [], []), sweep, ""
    )
    assert "a variant of the main part" in md and "[liu2001](liu2001.md)" in md
    assert "This is the main part" not in md


def test_an_unbounded_ratio_interval_is_named_not_left_blank() -> None:
    from experiments.compare import _interval
    from experiments.stats import fieller

    # the baseline's mean is not clearly above zero: Fieller's set is not an interval
    c = fieller([1.0, 3.0, 2.0, 8.0], [0.1, -0.2, 0.3, 0.0])
    assert c.n == 4 and math.isnan(c.low)
    assert _interval(c, "%").startswith("unbounded")
    assert _interval(fieller([1.0], [2.0]), "%") == "n/a"  # one pair: no interval at all


def _record(params: dict[str, str], seed: int, **metrics: float) -> RunRecord:
    return RunRecord(
        "x",
        f"{seed}-{sorted(params.items())}",
        0,
        params,
        seed,
        1,
        True,
        (),
        dict(metrics),
        {},
        (),
        600.0,
        610.0,
        "r",
        "rev",
        "h",
        "t",
        behaviour="aaaaaaaaaaaa",  # one code for every run (the pairing needs a shared key)
    )


def test_the_papers_numbers_are_placed_on_our_figures(tmp_path: Path) -> None:
    """Klemm's goodput figure: the paper's +75 % lands on our original AODV's mean at 20 m/s; the
    RTO figure: the paper's absolute 6 and 2 RTOs per 100 packets (the number wins over the
    change at one point); Cohen's SRTT figure: the change -78 % applies to the paper's own 0.9."""
    from experiments.compare import draw_figure, paper_points

    rows = [
        _record(
            {"mobility.max_speed_mps": "20", "lm": lm}, seed, throughput_total_bps=bps, rto_per_100_pkts=0.7
        )
        for seed in (1, 2)
        for lm, bps in (("original", 100e3 * seed), ("combined", 90e3))
    ]
    paper = PAPERS["klemm2004"]
    figs = {f.name: f for f in paper.figures}
    goodput = paper_points(figs["klemm2004-goodput"], paper.claims, rows)
    assert [(p.series, p.x) for p in goodput] == [(("combined",), "20")]
    assert goodput[0].y == pytest.approx(150e3 * 1.75 * 1e-3)  # mean of 100 and 200 kbit/s, +75 %
    rto = {p.series: p.y for p in paper_points(figs["klemm2004-rto"], paper.claims, rows)}
    assert rto == {("original",): 6.0, ("combined",): 2.0}
    out = tmp_path / "rto.png"
    assert draw_figure(figs["klemm2004-rto"], rows, out, paper.claims) and out.stat().st_size > 1000
    assert paper_points(figs["klemm2004-goodput"], paper.claims, []) == []  # no baseline rows: no star

    cohen = PAPERS["cohen"]
    srtt = next(f for f in cohen.figures if f.name == "cohen-srtt")
    cohen_rows = [
        _record({"speed": "25", "rc": rc}, 1, srtt_norm_var_s=0.5) for rc in ("none", "route_control")
    ]
    stars = {p.series: p.y for p in paper_points(srtt, cohen.claims, cohen_rows)}
    assert stars[("none",)] == 0.9 and stars[("route_control",)] == pytest.approx(0.2, abs=0.001)


def test_a_change_figure_plots_the_paired_change_and_the_papers_change(tmp_path: Path) -> None:
    """Klemm's Fig. 5 form: combined over original, paired per seed, pooled over what the figure
    leaves out as the claim pools it (blocks with different ratios, seeds common to all blocks):
    the figure's point is the claim's row; the paper's +75 % is placed as it is, not applied to a
    baseline; the baseline's own series has no point, and nothing paired draws no figure."""
    from experiments.aggregate import group_runs
    from experiments.compare import draw_figure, evaluate, figure_change, paper_points

    def rec(lm: str, other: str, seed: int, bps: float) -> RunRecord:
        return _record(
            {"mobility.max_speed_mps": "20", "lm": lm, "other": other}, seed, throughput_total_bps=bps
        )

    rows = [
        *(
            rec("original", o, seed, bps)
            for o in ("a", "b")
            for seed, bps in ((1, 100e3), (2, 200e3), (3, 50e3))
        ),
        rec("combined", "a", 1, 90e3),  # 0.9 of the original in block a
        rec("combined", "a", 2, 180e3),
        rec("combined", "a", 3, 45e3),
        rec("combined", "b", 1, 50e3),  # 0.5 in block b, which lacks seed 3
        rec("combined", "b", 2, 100e3),
    ]
    paper = PAPERS["klemm2004"]
    fig = next(f for f in paper.figures if f.name == "klemm2004-goodput-change")
    groups = group_runs(rows)
    ch = figure_change(fig, groups, {"mobility.max_speed_mps": "20", "lm": "combined"})
    claim = next(c for c in paper.claims if c.key == "combined-goodput")
    want = evaluate(claim, groups).change
    assert ch is not None and ch.n == 2 == want.n  # seeds 1 and 2: the ones both blocks ran
    assert (ch.value, ch.low, ch.high) == pytest.approx((want.value, want.low, want.high))
    assert ch.value == pytest.approx(-30.0)  # the mean of -10 % and -50 %, not one block's
    assert figure_change(fig, groups, {"mobility.max_speed_mps": "20", "lm": "original"}) is None
    assert figure_change(fig, groups, {"mobility.max_speed_mps": "4", "lm": "combined"}) is None
    stars = paper_points(fig, paper.claims, rows)
    assert [(p.series, p.x, p.y) for p in stars] == [(("combined",), "20", 75.0)]
    out = tmp_path / "change.png"
    assert draw_figure(fig, rows, out, paper.claims) and out.stat().st_size > 1000
    only_base = [r for r in rows if r.params["lm"] == "original"]
    assert not draw_figure(fig, only_base, tmp_path / "none.png", paper.claims)
    assert not (tmp_path / "none.png").exists()
    cohen = next(f for f in PAPERS["cohen"].figures if f.name == "cohen-rto-reduction")
    # rc-rto-2.5 fixes a speed the figure pools over: not a star there
    assert {p.claim for p in paper_points(cohen, PAPERS["cohen"].claims, [])} == {
        "rc-rto-sack",
        "rc-rto-newreno",
    }


def test_verdicts_at_the_edges() -> None:
    """A paper number of exactly 0, a bound on a change."""
    from experiments.compare import Result
    from experiments.stats import Change

    zero = dataclasses.replace(PAPERS["klemm2004"].claims[0], paper=0.0)
    for c in (Change(10, -12.0, -20.0, -4.0, 0.95, "fieller"), Change(10, 12.0, 4.0, 20.0, 0.95, "fieller")):
        assert Result(zero, c, 1, 20, min_seeds=10, max_seeds=30).verdict == "contradicted"
    loss = next(c for c in PAPERS["klemm2004"].claims if c.key == "combined-loss-change")  # -85 % or more
    beyond = Change(10, -95.0, -98.0, -90.0, 0.95, "fieller")
    res = Result(loss, beyond, 1, 20, min_seeds=10, max_seeds=30)
    assert res.verdict == "reproduced" and res.within_factor.startswith("yes (beyond")
    short = Change(10, -41.0, -47.0, -35.0, 0.95, "fieller")
    res = Result(loss, short, 1, 20, min_seeds=10, max_seeds=30)
    assert res.verdict == "reproduced in direction, smaller" and res.within_factor == "no (0.48x)"


def test_pairs_whose_runs_ran_different_code_are_left_out_and_named() -> None:
    """Issue 48, item 5: seed 2's treatment ran other code than its baseline, seed 3's two runs
    have unknown keys (a dirty tree): only seed 1 pairs, and the note says why the others do not."""
    claim = next(c for c in PAPERS["yu2004"].claims if c.key == "epln_bead-throughput")
    keys = {1: ("k", "k"), 2: ("k", "j"), 3: ("u0123456789a", "u0123456789a")}
    runs = [
        dataclasses.replace(
            _record({"scheme": s, "speed": "10", "tcp_flows": "1"}, seed, throughput_total_bps=v),
            behaviour=keys[seed][0 if s == "epln_bead" else 1],
        )
        for seed in (1, 2, 3)
        for s, v in (("elfn", 400.0 + seed), ("epln_bead", 460.0 + 2 * seed))
    ]
    res = evaluate(claim, group_runs(runs))
    assert res.change.n == 1
    assert "2 seed pairs left out: the two runs ran different code or scenario files" in res.note


def test_a_value_claim_keeps_the_runs_of_one_behaviour_key() -> None:
    """A value is never pooled over different code: the key most runs share, the others named."""
    claim = next(c for c in PAPERS["liu2001"].claims if c.kind == "value")
    at = {k: label(v) for k, v in claim.where.items()}
    runs = [
        dataclasses.replace(_record(at, seed, **{claim.metric: v}), behaviour=k)
        for seed, v, k in ((1, 900.0, "k"), (2, 920.0, "k"), (3, 5000.0, "j"))
    ]
    res = evaluate(claim, group_runs(runs))
    assert res.change.n == 2 and res.value == pytest.approx(910.0)
    assert "1 run of other code or scenario files left out" in res.note
