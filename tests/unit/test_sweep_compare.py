"""experiments.compare and experiments.papers: every claim finds its points; the numbers are right."""

from __future__ import annotations

import json
import random
import shutil
import uuid
from pathlib import Path

import pytest

from experiments import sweep as sw
from experiments.aggregate import group_runs, load_rows
from experiments.compare import compare, evaluate, main
from experiments.papers import PAPERS
from experiments.spec import Sweep, expand, label, load_sweep

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
    """Every headline number can be measured by some shipped sweep (the full-size one, or the
    reduced one for points the full sweep leaves out, e.g. Yu's 10 flows), and the full-size sweep
    ``<paper>.yaml`` draws every figure."""
    sweeps = _paper_sweeps(key)
    assert f"experiments/sweeps/{key}.yaml" in {f"experiments/sweeps/{s.experiment}.yaml" for s in sweeps}
    param_sets = []
    for sweep in sweeps:
        groups = {tuple((k, label(v)) for k, v in p.params.items()) for p in expand(sweep)}
        param_sets.append([dict(g) for g in groups])
    for claim in PAPERS[key].claims:
        found = False
        for params in param_sets:
            treated = [p for p in params if all(k in p and p[k] == label(v) for k, v in claim.where.items())]
            bases = [{**p, **{k: label(v) for k, v in claim.baseline.items()}} for p in treated]
            if treated and (claim.kind != "change_pct" or all(b in params for b in bases)):
                found = True
        assert found, f"{claim.key}: no sweep of {key} has points (and baselines) for {claim.where}"
    full = next(s for s in sweeps if s.experiment == key)
    for fig in PAPERS[key].figures:
        axes = full.axes()
        assert all(a in axes for a in (fig.x, *fig.series, *fig.panels)), fig.name


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
    assert abra.verdict == "reproduced" and abra.pairs == 1 and abra.change.n == 6
    assert abra.within_factor.startswith("no")  # +10 % against the paper's +26.6 %: 0.38x
    assert by_key["dsr-abra-avg"].pairs == 3 and by_key["dsr-abra-avg"].verdict == "reproduced"
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
    assert res.pairs == 0 and res.verdict == "-" and "no matching" in res.note
