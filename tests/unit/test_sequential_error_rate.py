"""The sequential stopping rule's false-effect rate (issue 48, item 1).

The rule is replayed look by look, as a sweep applies it, on (a) simulated null pairs (treatment
and baseline exchangeable, with the seed-to-seed spread of the papers' runs), (b) the committed
rows of a real comparison with treatment and baseline swapped at random within each pair (a
permutation null that keeps the real pairs' spread and skew), and (c) simulated pairs with a
stated effect (power). The group-sequential design must declare an effect under the null in at
most 5 % of replays; the earlier "repeated" rule (a 95 % interval after every seed) declares one
far more often, which is what this test exists to catch. Seeded RNGs: every number is exact.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from experiments.stats import SequentialDesign, Verdict, decide, group_sequential_bounds, paired_change

ROOT = Path(__file__).resolve().parents[2]
EFFECTS = (Verdict.HIGHER, Verdict.LOWER)

Rule = Callable[[np.ndarray, np.ndarray], bool]


def group_sequential(min_seeds: int, max_seeds: int, step: int) -> Rule:
    design = SequentialDesign.planned(min_seeds, max_seeds, step)

    def declares(t: np.ndarray, b: np.ndarray) -> bool:
        # one call over every pair: the design takes its looks in turn and stops at the first
        # that decides (SequentialDesign.decide)
        _, verdict = design.decide(t[: design.looks[-1]], b[: design.looks[-1]], None)
        return verdict in EFFECTS

    return declares


def repeated(min_seeds: int, max_seeds: int) -> Rule:
    def declares(t: np.ndarray, b: np.ndarray) -> bool:
        for n in range(min_seeds, max_seeds + 1):
            change = paired_change([(t[:n], b[:n])], 0.95)
            if decide(change, None, min_seeds, max_seeds) in EFFECTS:
                return True
        return False

    return declares


def simulated(rng: np.random.Generator, n: int, ratio: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Paired runs: a seed's level (lognormal, sd 0.8: a seed's topology sets throughput over a
    factor of ~5, Ghanem's rows), then each arm's own noise (sd 0.3); the treatment x ``ratio``."""
    level = rng.normal(0.0, 0.8, n)
    return ratio * np.exp(level + rng.normal(0.0, 0.3, n)), np.exp(level + rng.normal(0.0, 0.3, n))


def rate(
    rule: Rule, draws: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]], reps: int
) -> float:
    rng = np.random.default_rng(20261202)
    return sum(rule(*draws(rng)) for _ in range(reps)) / reps


def test_boundaries_spend_alpha_as_obrien_fleming() -> None:
    """Stringent early, near 1.96 at the end; one look is the plain two-sided 5 % test."""
    b = group_sequential_bounds((5, 10, 15, 20))
    assert b == pytest.approx((3.94, 2.79, 2.31, 2.05), abs=0.01)
    assert group_sequential_bounds((5,)) == pytest.approx((1.96,), abs=0.005)
    assert SequentialDesign.planned(5, 20, 1).confidence_at(7) is not None
    assert SequentialDesign.planned(20, 50, 2).confidence_at(21) is None  # between looks


@pytest.mark.parametrize(("lo", "hi", "step"), [(5, 20, 1), (20, 50, 2)])
def test_false_effect_rate_on_simulated_nulls(lo: int, hi: int, step: int) -> None:
    reps = 600
    gs = rate(group_sequential(lo, hi, step), lambda r: simulated(r, hi), reps)
    old = rate(repeated(lo, hi), lambda r: simulated(r, hi), reps)
    assert gs <= 0.05, gs
    assert old > 0.08, old  # the earlier rule, on the same draws: the test can fail


def _ghanem_pairs() -> tuple[np.ndarray, np.ndarray]:
    """ABRA vs NewReno on DSR at 10 m/s, throughput by seed (docs/results/data/ghanem2008.csv)."""
    by: dict[str, dict[int, float]] = {"abra": {}, "none": {}}
    with open(ROOT / "docs/results/data/ghanem2008.csv", newline="") as f:
        for row in csv.DictReader(f):
            if (
                row["valid"] != "true"
                or row["routing.protocol"] != "dsr"
                or row["mobility.max_speed_mps"] != "10"
            ):
                continue
            arm = by.get(row["routing.extensions"])
            if arm is not None and int(row["seed"]) not in arm:
                arm[int(row["seed"])] = float(row["throughput_total_bps"])
    seeds = sorted(set(by["abra"]) & set(by["none"]))
    return np.array([by["abra"][s] for s in seeds]), np.array([by["none"][s] for s in seeds])


def test_false_effect_rate_on_permuted_real_pairs() -> None:
    t, b = _ghanem_pairs()
    n = len(t)
    assert n >= 20
    hi = min(n, 50) - (min(n, 50) - 20) % 2

    def permuted(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        order = rng.permutation(n)[:hi]
        swap = rng.random(hi) < 0.5
        return np.where(swap, b[order], t[order]), np.where(swap, t[order], b[order])

    gs = rate(group_sequential(20, hi, 2), permuted, 600)
    assert gs <= 0.05, gs


def test_power_against_a_stated_effect_is_close_to_a_fixed_design() -> None:
    """Against +50 % (Ghanem's and Liu's claims are of that size or more) the design finds the
    effect in most replays, and looking early costs little power against one look at the
    maximum (2026-12-02: 0.78 against 0.84 at 5..20 seeds; at +30 %: 0.44 against 0.48)."""
    draws = lambda r: simulated(r, 20, ratio=1.5)  # noqa: E731
    power = rate(group_sequential(5, 20, 1), draws, 300)
    fixed = rate(group_sequential(20, 20, 1), draws, 300)
    assert power >= 0.75, power
    assert power >= 0.9 * fixed, (power, fixed)


def test_a_decided_look_stays_decided_when_more_pairs_arrive() -> None:
    """Runs started before a look was taken finish after it: the verdict is the first look's that
    decided, not a recomputation over every pair (which between looks would read "undecided", and
    at a later look could undo a stop the design already made)."""
    design = SequentialDesign.planned(5, 20, 5)
    t = np.array([80.0, 81.0, 79.0, 80.5, 79.5, 140.0, 20.0])  # 20 % lower at 5, then two wild pairs
    b = np.full(7, 100.0)
    change5, at5 = design.decide(t[:5], b[:5], None)
    change7, at7 = design.decide(t, b, None)
    assert at5 is Verdict.LOWER and at7 is Verdict.LOWER and change7 == change5 and change7.n == 5
    _, at4 = design.decide(t[:4], b[:4], None)
    assert at4 is Verdict.UNDECIDED  # before the first look
