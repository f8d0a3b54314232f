"""The fixed vocabulary of the reports' verdicts, and the multiplicity adjustment (issue 48, items 2, 4).

Every claim of every paper gets one ``Term`` (docs/experiments.md, "Verdicts"):

- **reproduced**: the paper's direction, the test of no change rejected after the adjustment
  across the report's claims (Holm), and the paper's size not excluded (a bound: not missed);
  an absolute number ("about 6") within a factor of 2 of the paper's by its adjusted interval;
  a bound on a value ("below 2 %") met by the whole adjusted interval.
- **reproduced in direction, smaller**: the direction, but the adjusted interval lies entirely
  on the near side of the paper's number (an equivalence test at the adjusted level excludes the
  paper's size, or a bound's).
- **no effect**: no change rejected, and the adjusted interval lies within +-``Claim.margin_pct``
  (two one-sided tests at the adjusted level; the margin is argued per claim from the paper).
- **contradicted**: the opposite direction rejected after the adjustment (a paper's "no change",
  |number| below its margin, is contradicted by a change that excludes the margin); an absolute
  number outside a factor of 2 by the whole adjusted interval; a value bound missed by it.
- **inconclusive**: none of these (too few seeds, or an interval too wide to tell).
- **not testable here**: the paper's mechanism cannot be realised on this testbed
  (``Claim.untestable`` says why).

Multiplicity: the family is the report's claims that have a test. Their p-values (a change: the
null of no change; a value: the null that ours equals the paper's number) are adjusted by Holm's
(1979) step-down method, which holds the family-wise error rate at ``ALPHA`` under any dependence
between the claims (ours share seeds and baselines). Holm has no matching intervals, so the
intervals the sizes are read from are Bonferroni's simultaneous ones, at 1 - ``ALPHA`` / k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from typing import Final

import numpy as np
from statsmodels.stats.multitest import multipletests

from experiments.papers import Claim
from experiments.stats import Change

#: The family-wise error rate of a report's verdicts.
ALPHA: Final = 0.05
#: An absolute number agrees with the paper's when their ratio is within this factor.
SIZE_FACTOR: Final = 2.0


class Term(StrEnum):
    """A claim's verdict: the one vocabulary of every report (docs/experiments.md)."""

    REPRODUCED = "reproduced"
    SMALLER = "reproduced in direction, smaller"
    NO_EFFECT = "no effect"
    CONTRADICTED = "contradicted"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable here"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the input's order (statsmodels'
    ``multipletests(method="holm")``); NaN stays NaN and is not counted in the family."""
    p = np.asarray([float(x) for x in p_values], dtype=float)
    out = np.full(p.size, math.nan)
    keep = ~np.isnan(p)
    if keep.any():
        out[keep] = multipletests(p[keep], alpha=ALPHA, method="holm")[1]
    return [float(x) for x in out]


def family_confidence(k: int, alpha: float = ALPHA) -> float:
    """The confidence of Bonferroni's simultaneous intervals over a family of ``k`` tests."""
    return 1.0 - alpha / max(1, k)


def _direction(claim: Claim) -> int:
    """The sign of the paper's change: +1 up, -1 down, 0 none (|number| within the margin)."""
    if claim.direction:
        return claim.direction
    if abs(claim.paper) <= claim.margin_pct and not claim.bound:
        return 0
    return 1 if claim.paper > 0 else -1


def judge_change(claim: Claim, significant: bool, value: float, interval: Change) -> Term:
    """The term of a relative claim: ``significant`` is the adjusted test of no change, ``value``
    our estimate, ``interval`` the adjusted (simultaneous) interval."""
    if claim.untestable:
        return Term.NOT_TESTABLE
    if math.isnan(value):
        return Term.INCONCLUSIVE
    lo, hi = interval.low, interval.high
    bounded = not (math.isnan(lo) or math.isnan(hi))
    within = bounded and -claim.margin_pct <= lo and hi <= claim.margin_pct
    sign = _direction(claim)
    if not significant:
        return Term.NO_EFFECT if within else Term.INCONCLUSIVE
    ours = 1 if value > 0 else -1
    if sign == 0:  # the paper: no change; ours excludes zero
        return Term.NO_EFFECT if within else Term.CONTRADICTED
    if ours != sign:
        return Term.CONTRADICTED
    if bounded and claim.paper != 0.0 and (hi < claim.paper if sign > 0 else lo > claim.paper):
        return Term.SMALLER  # the whole interval short of the paper's size (or bound)
    return Term.REPRODUCED


def judge_value(claim: Claim, interval: Change) -> Term:
    """The term of an absolute claim by its adjusted interval: a bound ("below 2 %") met or
    missed by the whole interval; "about x": within a factor ``SIZE_FACTOR`` of x, or outside."""
    if claim.untestable:
        return Term.NOT_TESTABLE
    lo, hi = interval.low, interval.high
    if math.isnan(lo) or math.isnan(hi):
        return Term.INCONCLUSIVE
    if claim.bound:  # a value's bound is an upper one: "below"
        if hi < claim.paper:
            return Term.REPRODUCED
        return Term.CONTRADICTED if lo > claim.paper else Term.INCONCLUSIVE
    low_ok, high_ok = claim.paper / SIZE_FACTOR, claim.paper * SIZE_FACTOR
    if low_ok <= lo and hi <= high_ok:
        return Term.REPRODUCED
    if hi < low_ok or lo > high_ok:
        return Term.CONTRADICTED
    return Term.INCONCLUSIVE


def carried_note(contributions: Sequence[float], share: float = 0.1) -> str:
    """A note when a few seeds carry a mean: ``contributions`` are the per-seed terms whose mean
    is the estimate; leaving out the ceil(``share`` x n) largest in the mean's direction halves
    it or more (or flips its sign). Gives their terms and the mean without them; "" otherwise."""
    c = np.asarray([float(x) for x in contributions], dtype=float)
    c = c[~np.isnan(c)]
    n = int(c.size)
    mean = float(c.mean()) if n else math.nan
    if n < 4 or mean == 0.0 or math.isnan(mean):
        return ""
    m = max(1, math.ceil(share * n))
    order = np.argsort(-np.sign(mean) * c, kind="stable")
    rest = float(c[order[m:]].mean())
    if rest / mean > 0.5:
        return ""
    top = ", ".join(f"{x:+.0f}" for x in c[order[:m]])
    return f"{m} of {n} seeds carry the mean (theirs {top} points): without them {rest:+.1f} %"
