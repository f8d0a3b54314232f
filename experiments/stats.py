"""Statistics for sweeps: summaries over seeds, paired comparisons of variants, sequential stopping.

Issue 10, item 3: "Variants of one point share seeds (same placement, mobility and traffic), and
comparisons are made on paired differences. [...] Ratios (the papers' claims are relative: '+30%')
get bootstrap or Fieller intervals. Use the field's libraries: scipy.stats and pandas."

- ``summarize``: mean, sample standard deviation and Student-t half-widths (``scipy.stats.t``).
- ``paired_change``: the relative change of a treatment over its baseline, 100 x (mean(t) / mean(b)
  - 1) in percent, from seeds run with both (pairs), with Fieller's interval for a ratio of paired
  means (t-based). Several blocks (the same comparison at several points, e.g. Ghanem's average
  over speeds) are combined as the mean of their changes, with a delta-method interval over the
  seeds they share.
- ``decide``: the sequential stopping rule of ``seeds: {until: ...}``: stop when the interval
  excludes zero (an effect, with its direction), or when its half-width is below the stated
  fraction (the effect is pinned down, whether or not it is zero), or when ``max`` seeds are
  reached ("inconclusive"). Repeated looks at growing data make the nominal 95 % optimistic; the
  reports state the seed count with every verdict (docs/experiments.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps


@dataclass(frozen=True, slots=True)
class Summary:
    """Mean over seeds with its spread; ``ci90``/``ci95`` are half-widths (NaN for fewer than 2 values)."""

    n: int
    mean: float
    std: float
    ci90: float
    ci95: float


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom."""
    if not 0.5 < p < 1.0 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    return float(sps.t.ppf(p, df))


def summarize(values: Sequence[float]) -> Summary:
    """Mean, sample standard deviation and two-sided 90 % / 95 % Student-t confidence half-widths."""
    xs = np.asarray([float(v) for v in values], dtype=float)
    xs = xs[~np.isnan(xs)]
    n = int(xs.size)
    if n == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan)
    mean = float(xs.mean())
    if n < 2:
        return Summary(n, mean, math.nan, math.nan, math.nan)
    std = float(xs.std(ddof=1))
    sem = std / math.sqrt(n)
    return Summary(n, mean, std, t_quantile(0.95, n - 1) * sem, t_quantile(0.975, n - 1) * sem)


@dataclass(frozen=True, slots=True)
class Change:
    """A relative change in percent with its confidence interval, from ``n`` paired seeds."""

    n: int
    value: float
    low: float
    high: float
    confidence: float
    method: str

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def excludes_zero(self) -> bool:
        return not math.isnan(self.low) and (self.low > 0.0 or self.high < 0.0)


NAN_CHANGE: Final = Change(0, math.nan, math.nan, math.nan, 0.95, "none")


def _pairs(treat: ArrayLike, base: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(treat, dtype=float)
    b = np.asarray(base, dtype=float)
    keep = ~(np.isnan(t) | np.isnan(b))
    return t[keep], b[keep]


def fieller(treat: ArrayLike, base: ArrayLike, confidence: float = 0.95) -> Change:
    """Fieller's interval for mean(t)/mean(b) of paired samples, as a change in percent.

    With d_i = t_i - r b_i, the ratio r is in the interval where the t statistic of mean(d) is below
    the quantile: a quadratic in r (Fieller 1954). Unbounded when the baseline's mean is not
    significantly different from zero (then NaN ends).
    """
    t, b = _pairs(treat, base)
    n = int(t.size)
    if n == 0 or b.mean() == 0:
        return Change(n, math.nan, math.nan, math.nan, confidence, "fieller")
    if n < 2:  # a point estimate, no interval
        return Change(
            n, 100.0 * (float(t.mean() / b.mean()) - 1.0), math.nan, math.nan, confidence, "fieller"
        )
    q = t_quantile(0.5 + confidence / 2.0, n - 1) ** 2
    mt, mb = float(t.mean()), float(b.mean())
    vt, vb = float(t.var(ddof=1)) / n, float(b.var(ddof=1)) / n
    cov = float(np.cov(t, b, ddof=1)[0, 1]) / n
    a = mb * mb - q * vb
    bb = -2.0 * (mt * mb - q * cov)
    c = mt * mt - q * vt
    disc = bb * bb - 4.0 * a * c
    r = mt / mb
    if a <= 0 or disc < 0:
        return Change(n, 100.0 * (r - 1.0), math.nan, math.nan, confidence, "fieller")
    lo, hi = sorted(((-bb - math.sqrt(disc)) / (2 * a), (-bb + math.sqrt(disc)) / (2 * a)))
    if t.min() >= 0 and b.min() >= 0:
        # A ratio of means of non-negative values (counts, rates) is not negative: the set is cut to
        # the parameter space, which keeps its coverage (Cohen's RTOs at 9 seeds, one baseline of 54
        # beside 0-15: [-54217 %, -41.5 %] -> [-100 %, -41.5 %]).
        lo, hi = max(lo, 0.0), max(hi, 0.0)
    return Change(n, 100.0 * (r - 1.0), 100.0 * (lo - 1.0), 100.0 * (hi - 1.0), confidence, "fieller")


def paired_change(blocks: Sequence[tuple[ArrayLike, ArrayLike]], confidence: float = 0.95) -> Change:
    """The mean over ``blocks`` of 100 x (mean(treat) / mean(base) - 1), with its interval.

    Each block is (treatment values, baseline values) by seed, in the same seed order; the blocks
    must have the same length (the seeds they share: the caller aligns them). A pair with a NaN in
    any block is dropped from all. One block: Fieller's interval (``fieller``). Several blocks (a
    paper's average over points): the delta-method (linearisation) interval over seeds, which keeps
    the correlation between blocks that share a seed: per seed, L_s = 100/k x sum_i (t_is - r_i
    b_is) / mean(b_i), and the interval is value +- t(n-1) x sd(L) / sqrt(n), where var(L) is at
    least the sum of the blocks' own variances (a positive correlation widens it, a negative one,
    with few seeds mostly noise, is not credited). Both are Student-t
    intervals: a bootstrap over 5-10 seeds (the sizes sweeps start from) covers far less than its
    nominal 95 % (a paired BCa interval of 4 seeds missed a 15 % effect by 1.3 points in our tests).
    NaN ends for fewer than 2 pairs or a zero baseline mean.
    """
    if not blocks:
        return NAN_CHANGE
    ts, bs = _aligned_arrays(blocks)
    n = int(ts[0].size)
    k = len(blocks)
    if n == 0 or any(b.mean() == 0 for b in bs):
        return Change(n, math.nan, math.nan, math.nan, confidence, "none")
    ratios = [float(t.mean() / b.mean()) for t, b in zip(ts, bs, strict=True)]
    value = 100.0 * (sum(ratios) / k - 1.0)
    if k == 1:
        return fieller(ts[0], bs[0], confidence)
    if n < 2:
        return Change(n, value, math.nan, math.nan, confidence, "delta")
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * _delta_se(ts, bs, ratios)
    lo = value - half
    if all(x.min() >= 0 for x in (*ts, *bs)):  # a mean of changes of non-negative values: >= -100 %
        lo = max(lo, -100.0)
    return Change(n, value, lo, value + half, confidence, "delta")


def _delta_se(ts: Sequence[np.ndarray], bs: Sequence[np.ndarray], ratios: Sequence[float]) -> float:
    """The delta-method standard error of the mean over blocks of 100 x (mean(t) / mean(b) - 1)."""
    k, n = len(ts), int(ts[0].size)
    per_block = [(t - r * b) / b.mean() * (100.0 / k) for t, b, r in zip(ts, bs, ratios, strict=True)]
    var = float(np.var(sum(per_block), ddof=1))
    # A negative covariance between blocks is not credited: the variance is at least that of
    # independent blocks. With a handful of seeds the estimated covariance is mostly noise, and a
    # negative one narrows the interval spuriously: Cohen at 1 % loss, 4 seeds, per-point changes
    # -60 % and -4 % whose seed influences (-48, 0, 0, +48 and +51, 0, +2, -53) cancelled gave
    # -32 % +- 2.9 points, a "reproduced" from two undecided points (2026-11-26).
    var = max(var, sum(float(np.var(x, ddof=1)) for x in per_block))
    return math.sqrt(var / n)


# ------------------------------------------------------------------------------------------------
# The paper's estimator beside the ratio of means (issue 48, item 3)

#: How a relative claim combines its seeds: ``ratio_of_means`` = 100 x (mean(t) / mean(b) - 1)
#: (``paired_change``); ``mean_of_ratios`` = the mean over seeds of 100 x (t_s / b_s - 1), Ghanem
#: 2008's "done for each movement scenario; then we take the average" (``mean_of_ratios``).
ESTIMATORS: Final = ("ratio_of_means", "mean_of_ratios")


def _aligned_arrays(
    blocks: Sequence[tuple[ArrayLike, ArrayLike]],
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The blocks' (treatment, baseline) arrays without the seeds that have a NaN in any block."""
    arrays = [np.asarray(x, dtype=float) for blk in blocks for x in blk]
    if len({a.size for a in arrays}) != 1:
        raise ValueError(f"paired_change: blocks of different lengths {sorted({a.size for a in arrays})}")
    keep = ~np.any(np.isnan(np.vstack(arrays)), axis=0)
    arrays = [a[keep] for a in arrays]
    return arrays[0::2], arrays[1::2]


def seed_ratios(blocks: Sequence[tuple[ArrayLike, ArrayLike]]) -> tuple[np.ndarray, int]:
    """Per seed, the mean over blocks of t_s / b_s; and how many seeds were left out because a
    baseline is zero there (its ratio has no value: a baseline that delivered nothing)."""
    if not blocks:
        return np.zeros(0), 0
    ts, bs = _aligned_arrays(blocks)
    if ts[0].size == 0:
        return np.zeros(0), 0
    ok = np.all(np.vstack(bs) != 0.0, axis=0)
    ratios = np.mean(np.vstack([t[ok] / b[ok] for t, b in zip(ts, bs, strict=True)]), axis=0)
    return ratios, int((~ok).sum())


def mean_of_ratios(blocks: Sequence[tuple[ArrayLike, ArrayLike]], confidence: float = 0.95) -> Change:
    """The mean over seeds of 100 x (t_s / b_s - 1) (over blocks: of the blocks' mean ratio per
    seed), with its Student-t interval over seeds; seeds with a zero baseline are left out."""
    ratios, _ = seed_ratios(blocks)
    st = summarize((100.0 * (ratios - 1.0)).tolist())
    if st.n < 2:
        return Change(st.n, st.mean, math.nan, math.nan, confidence, "mean-of-ratios")
    half = t_quantile(0.5 + confidence / 2.0, st.n - 1) * st.std / math.sqrt(st.n)
    return Change(st.n, st.mean, st.mean - half, st.mean + half, confidence, "mean-of-ratios")


def estimate(
    blocks: Sequence[tuple[ArrayLike, ArrayLike]], estimator: str, confidence: float = 0.95
) -> Change:
    """A relative change by ``estimator`` (``ESTIMATORS``) at ``confidence``."""
    if estimator == "mean_of_ratios":
        return mean_of_ratios(blocks, confidence)
    if estimator == "ratio_of_means":
        return paired_change(blocks, confidence)
    raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)}")


def median_change(blocks: Sequence[tuple[ArrayLike, ArrayLike]]) -> float:
    """The median over seeds of 100 x (t_s / b_s - 1) (zero baselines left out); NaN without seeds."""
    ratios, _ = seed_ratios(blocks)
    return float(np.median(100.0 * (ratios - 1.0))) if ratios.size else math.nan


def contributions(blocks: Sequence[tuple[ArrayLike, ArrayLike]], estimator: str) -> np.ndarray:
    """The per-seed terms whose mean is the estimate, in percent points: 100 x (t_s / b_s - 1)
    for the mean of ratios; 100 / k x sum_i (t_is - b_is) / mean(b_i) for the ratio of means."""
    if estimator == "mean_of_ratios":
        ratios, _ = seed_ratios(blocks)
        return 100.0 * (ratios - 1.0)
    if not blocks:
        return np.zeros(0)
    ts, bs = _aligned_arrays(blocks)
    if ts[0].size == 0 or any(b.mean() == 0 for b in bs):
        return np.zeros(0)
    k = len(ts)
    return np.asarray(sum((t - b) / b.mean() * (100.0 / k) for t, b in zip(ts, bs, strict=True)), dtype=float)


def p_no_change(blocks: Sequence[tuple[ArrayLike, ArrayLike]], estimator: str) -> float:
    """The two-sided p-value of "no change" for ``estimator``: the ratio of means of one block by
    the paired t-test of t - b (the test Fieller's interval inverts at ratio 1); of several, by
    the delta method's t; the mean of ratios by the one-sample t-test of t_s / b_s = 1. NaN with
    fewer than 2 seeds."""
    if not blocks:
        return math.nan
    if estimator == "mean_of_ratios":
        return _p_mean(seed_ratios(blocks)[0], 1.0)
    ts, bs = _aligned_arrays(blocks)
    n = int(ts[0].size)
    if n < 2 or any(b.mean() == 0 for b in bs):
        return math.nan
    if len(ts) == 1:
        return _p_mean(ts[0] - bs[0], 0.0)
    means = [float(t.mean() / b.mean()) for t, b in zip(ts, bs, strict=True)]
    se = _delta_se(ts, bs, means)
    value = 100.0 * (sum(means) / len(means) - 1.0)
    if se == 0.0:
        return 0.0 if value != 0.0 else 1.0
    return float(2.0 * sps.t.sf(abs(value) / se, n - 1))


def p_value_equal(values: ArrayLike, target: float) -> float:
    """The two-sided one-sample t-test p-value of mean(values) = ``target``; NaN below 2 values."""
    x = np.asarray(values, dtype=float)
    return _p_mean(x[~np.isnan(x)], target)


def _p_mean(x: np.ndarray, target: float) -> float:
    n = int(x.size)
    if n < 2:
        return math.nan
    sd = float(x.std(ddof=1))
    diff = float(x.mean()) - target
    if sd == 0.0:
        return 0.0 if diff != 0.0 else 1.0
    return float(2.0 * sps.t.sf(abs(diff) / (sd / math.sqrt(n)), n - 1))


class Verdict(StrEnum):
    """Where a comparison stands under the stopping rule."""

    HIGHER = "higher"  # the interval is above zero
    LOWER = "lower"  # the interval is below zero
    PRECISE = "no clear effect"  # the interval spans zero but is narrower than the stated fraction
    UNDECIDED = "undecided"  # keep adding seeds
    INCONCLUSIVE = "inconclusive"  # max seeds reached, interval spans zero and is wide

    @property
    def final(self) -> bool:
        return self is not Verdict.UNDECIDED


def decide(change: Change, half_width_pct: float | None, min_seeds: int, max_seeds: int) -> Verdict:
    """The stopping rule for one comparison (``seeds.until``), given its current interval."""
    if change.n >= min_seeds and not math.isnan(change.low):
        if change.low > 0.0:
            return Verdict.HIGHER
        if change.high < 0.0:
            return Verdict.LOWER
        if half_width_pct is not None and change.half_width <= half_width_pct:
            return Verdict.PRECISE
    if change.n >= max_seeds:
        return Verdict.INCONCLUSIVE
    return Verdict.UNDECIDED


# ------------------------------------------------------------------------------------------------
# A group-sequential design with a stated error rate (issue 48, item 1)

#: The two-sided error rate the group-sequential design spends over its looks.
SEQUENTIAL_ALPHA: Final = 0.05


def obrien_fleming_spent(t: float, alpha: float = SEQUENTIAL_ALPHA) -> float:
    """Lan & DeMets' (1983) O'Brien-Fleming-type alpha-spending function, two-sided:
    alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) at information fraction ``t`` (0 < t <= 1)."""
    if not 0.0 < t <= 1.0:
        raise ValueError(f"information fraction {t} is outside (0, 1]")
    return float(2.0 - 2.0 * sps.norm.cdf(sps.norm.ppf(1.0 - alpha / 2.0) / math.sqrt(t)))


#: Grid of the recursive integration (points over +-GRID_SD standard deviations of B(1)).
GRID_POINTS: Final = 2001
GRID_SD: Final = 10.0


def group_sequential_bounds(looks: Sequence[int], alpha: float = SEQUENTIAL_ALPHA) -> tuple[float, ...]:
    """Two-sided z boundaries of a group-sequential test with looks at ``looks`` paired seeds
    (increasing; information fraction t_k = n_k / n_max) that spends ``alpha`` with Lan & DeMets'
    O'Brien-Fleming-type function: boundary k is the c_k for which P(no earlier crossing,
    |Z_k| >= c_k) is the alpha spent between looks k-1 and k. Computed by the recursive numerical
    integration of Armitage, McPherson & Rowe (1969) (Jennison & Turnbull 2000, ch. 19) over the
    Brownian motion B(t_k) = Z_k sqrt(t_k) on a grid: deterministic, to about 1e-4 in c."""
    ns = [int(n) for n in looks]
    if not ns or any(b <= a for a, b in zip(ns, ns[1:], strict=False)) or ns[0] < 2:
        raise ValueError(f"looks must be increasing seed counts of at least 2, got {list(looks)}")
    return _bounds(tuple(ns), alpha)


@functools.lru_cache(maxsize=64)
def _bounds(ns: tuple[int, ...], alpha: float) -> tuple[float, ...]:
    ts = [n / ns[-1] for n in ns]
    x = np.linspace(-GRID_SD, GRID_SD, GRID_POINTS)
    dx = float(x[1] - x[0])
    dens: np.ndarray | None = None  # sub-density of B(t) on the continuation region so far
    spent_before = 0.0
    bounds: list[float] = []
    t_prev = 0.0
    for t in ts:
        sd = math.sqrt(t - t_prev)
        if dens is None:
            f = sps.norm.pdf(x, scale=sd)
        else:
            kernel = sps.norm.pdf((x[:, None] - x[None, :]) / sd) / sd
            f = kernel @ dens * dx
        spent = obrien_fleming_spent(t, alpha)
        step = spent - spent_before
        # P(|B(t)| >= b) under f, as b grows: the mass outside +-b
        cum = np.cumsum(f) * dx
        total = float(cum[-1])
        half = GRID_POINTS // 2
        outside = total - (cum[half:] - cum[half::-1][: GRID_POINTS - half])  # b = x[half:]
        # the first grid b at which the mass outside is at most the step (it falls as b grows):
        # never more than the planned alpha is spent
        idx = int(np.searchsorted(-outside, -step))
        b = float(x[half + min(idx, GRID_POINTS - half - 1)])
        c = b / math.sqrt(t)
        bounds.append(c)
        dens = np.where(np.abs(x) < b, f, 0.0)
        spent_before = spent
        t_prev = t
    return tuple(bounds)


@dataclass(frozen=True, slots=True)
class SequentialDesign:
    """Looks at planned seed counts (``min``, ``min + step``, ..., ``max``) with the boundaries of
    ``group_sequential_bounds``: at look k the paired interval is computed at the nominal level
    of its boundary, 1 - 2 (1 - Phi(c_k)); between looks nothing is decided."""

    looks: tuple[int, ...]
    alpha: float = SEQUENTIAL_ALPHA

    @classmethod
    def planned(
        cls, min_seeds: int, max_seeds: int, step: int, alpha: float = SEQUENTIAL_ALPHA
    ) -> SequentialDesign:
        looks = list(range(min_seeds, max_seeds + 1, max(1, step)))
        if looks[-1] != max_seeds:
            looks.append(max_seeds)
        return cls(tuple(looks), alpha)

    def confidence_at(self, n: int) -> float | None:
        """The nominal confidence of the interval at ``n`` paired seeds, None between looks."""
        if n not in self.looks:
            return None
        c = group_sequential_bounds(self.looks, self.alpha)[self.looks.index(n)]
        return float(1.0 - 2.0 * (1.0 - sps.norm.cdf(c)))

    def decide(
        self, t_vals: ArrayLike, b_vals: ArrayLike, half_width_pct: float | None
    ) -> tuple[Change, Verdict]:
        """The verdict of the design over the pairs in seed order: the looks are taken in turn,
        each over the first ``look`` pairs, and the first that decides is the verdict (an effect
        when the interval at that look's nominal level excludes zero; "no clear effect", the
        futility stop, when it is narrower than ``half_width_pct`` on each side), whatever pairs
        came after it (runs started before the look was taken: the design stopped there);
        "inconclusive" when the last look decided nothing; "undecided" before it."""
        t, b = _pairs(t_vals, b_vals)
        n = int(t.size)
        for look in self.looks:
            if look > n:
                break
            conf = self.confidence_at(look)
            assert conf is not None
            change = fieller(t[:look], b[:look], conf)
            verdict = decide(change, half_width_pct, self.looks[0], self.looks[-1])
            if verdict.final:
                return change, verdict
        return fieller(t, b, 1.0 - self.alpha), Verdict.UNDECIDED
