"""experiments.prefix: prefixes of long runs against the runs themselves (synthetic run folders)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from experiments.prefix import RunPair, compare_prefix, load_pairs, main


def _run(root: Path, name: str, seed: int, per_second: list[int], valid: bool = True) -> None:
    d = root / name
    (d / "flows").mkdir(parents=True)
    n = len(per_second)
    ivs = [
        {"sum": {"start": float(i), "end": float(i + 1), "bytes": b, "omitted": False}}
        for i, b in enumerate(per_second)
    ]
    (d / "flows" / "tcp0.server.json").write_text(json.dumps({"start": {}, "intervals": ivs, "end": {}}))
    flow = {"id": "tcp0", "proto": "tcp", "duration_s": float(n), "throughput_bps": 8.0 * sum(per_second) / n}
    (d / "summary.json").write_text(json.dumps({"complete": True, "valid": valid, "flows": [flow]}))
    (d / "sweep-point.json").write_text(
        json.dumps({"params": {"scheme": "elfn"}, "seed": seed, "point_id": name})
    )


def test_prefix_bytes_come_from_the_sinks_first_seconds(tmp_path: Path) -> None:
    _run(tmp_path, "a", 1, [1000] * 30 + [0] * 60)  # everything in the first 30 s of 90
    _run(tmp_path, "b", 2, [500] * 90, valid=False)  # invalid: not counted
    (p,) = load_pairs(tmp_path, 30.0)
    assert p.seed == 1 and p.prefix_bps == 8000.0 and round(p.full_bps, 1) == round(8000.0 / 3, 1)
    assert load_pairs(tmp_path, 120.0) == []  # the flows did not last 120 s
    assert load_pairs(tmp_path, 30.0, invalid={"a"}) == []  # its row in git marked invalid since


def _pairs(rng: np.random.Generator, n: int, prefix_factor: float, noise: float) -> list[RunPair]:
    full = 1e5 * (1 + 4 * rng.random(n))
    pre = full * prefix_factor * (1 + rng.normal(0, noise, n))
    return [
        RunPair({"scheme": "elfn"}, i + 1, float(f), float(p))
        for i, (f, p) in enumerate(zip(full, pre, strict=True))
    ]


def test_same_distribution_passes_and_a_biased_prefix_fails() -> None:
    rng = np.random.default_rng(3)
    ok = compare_prefix(_pairs(rng, 12, 1.0, 0.03))
    assert bool(ok["same"].iloc[0]) and 0.95 < ok["ratio"].iloc[0] < 1.05
    # short runs 25 % faster (e.g. before random waypoint's speed decay): the ratio and the
    # signed-rank test see it, whatever the spread between seeds
    bad = compare_prefix(_pairs(rng, 12, 1.25, 0.03))
    assert (
        not bool(bad["same"].iloc[0]) and bad["wilcoxon_p"].iloc[0] < 0.05 and bad["ratio_low"].iloc[0] > 1.1
    )


def test_cli_errors(tmp_path: Path) -> None:
    assert main(["nothing", "--out", str(tmp_path), "--at", "300"]) == 2
    assert main(["x", "--out", str(tmp_path), "--at", "0"]) == 2
