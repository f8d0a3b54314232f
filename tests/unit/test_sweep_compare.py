"""experiments.compare and experiments.papers: every claim finds its points; the numbers are right."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from experiments import sweep as sw
from experiments.aggregate import group_runs, load_runs
from experiments.compare import compare, evaluate, main
from experiments.papers import PAPERS
from experiments.spec import expand, label, load_sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("key", sorted(PAPERS))
def test_every_claim_finds_points_and_baselines_in_its_sweep(key: str) -> None:
    sweep = load_sweep(f"experiments/sweeps/{key}.yaml")
    assert sweep.paper == key
    groups = {tuple((k, label(v)) for k, v in p.params.items()) for p in expand(sweep)}
    params = [dict(g) for g in groups]
    for claim in PAPERS[key].claims:
        treated = [p for p in params if all(k in p and p[k] == label(v) for k, v in claim.where.items())]
        assert treated, f"{claim.key}: no point matches {claim.where}"
        for p in treated if claim.kind == "change_pct" else []:
            base = {**p, **{k: label(v) for k, v in claim.baseline.items()}}
            assert base in params, f"{claim.key}: no baseline {base}"
    for fig in PAPERS[key].figures:
        axes = sweep.axes()
        assert all(a in axes for a in (fig.x, *fig.series, *fig.panels)), fig.name


def fake_ghanem(req: sw.RunRequest) -> Path:
    """Throughput 100 kbit/s, +10 % with abra, -20 % with fixed_rto; timeouts = seed."""
    ext = req.overrides["routing.extensions"]
    factor = 1.1 if ext == ["abra"] else 0.8 if ext == ["fixed_rto"] else 1.0
    run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:6]
    run_dir.mkdir(parents=True)
    flow = {
        "proto": "tcp",
        "src": 1,
        "dst": 20,
        "throughput_bps": 1e5 * factor + req.seed,
        "tcp_timeouts": req.seed,
    }
    summary = {"complete": True, "routing_packets": 100, "flows": [flow]}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def test_compare_ghanem_with_fake_runs(tmp_path: Path) -> None:
    sweep = load_sweep("experiments/sweeps/ghanem2008.yaml")
    sweep = sweep.model_copy(update={"seeds": [1, 2]})
    sw.run_points(sweep, expand(sweep), out_root=tmp_path, run_fn=fake_ghanem, parallel=4)
    exp_dir = tmp_path / "ghanem2008"
    sw.copy_sweep_file("experiments/sweeps/ghanem2008.yaml", exp_dir)
    groups = group_runs(load_runs(exp_dir))
    by_key = {c.key: evaluate(c, groups) for c in PAPERS["ghanem2008"].claims}
    # treatment (1e5 * 1.1 + seed) / baseline (1e5 + seed), mean seed 1.5
    expected = 100 * ((1.1e5 + 1.5) / (1e5 + 1.5) - 1)
    assert by_key["aodv-abra-10"].value == pytest.approx(expected)
    assert by_key["aodv-abra-10"].agrees == "yes" and by_key["aodv-abra-10"].pairs == 1
    assert by_key["dsr-abra-avg"].pairs == 3
    assert by_key["dsr-fixed_rto-2"].agrees == "no"
    assert by_key["dsr-abra-20"].agrees == "no"  # paper: -1.0 (no effect), ours +10 %

    md = compare(exp_dir)[0].read_text()
    assert compare(exp_dir)[1] is False  # unchanged the second time
    assert "| AODV abra vs NewReno, max speed 10 m/s (Table 1) | +26.6 % | +10.0 % | 1 | 4 | yes |" in md
    assert (exp_dir / "ghanem2008-throughput.png").stat().st_size > 1000
    assert (exp_dir / "ghanem2008-claims.png").exists()
    assert main([str(exp_dir)]) == 0


def test_claim_without_points_is_reported_not_raised(tmp_path: Path) -> None:
    claim = PAPERS["yu2004"].claims[0]
    res = evaluate(claim, [])
    assert res.pairs == 0 and res.agrees == "-" and "no matching" in res.note
