"""Small statistics for sweep summaries: mean, sample standard deviation, Student-t confidence intervals.

No SciPy: the t quantile is found by bisection on the t distribution's CDF, computed from the
regularized incomplete beta function (continued fraction, Lentz's method; Numerical Recipes 6.4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b) for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t (``p`` in (0.5, 1)), by bisection to 1e-10."""
    if not 0.5 < p < 1.0 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1, got p={p}, df={df}")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@dataclass(frozen=True, slots=True)
class Summary:
    """Mean over seeds with its spread; ``ci90``/``ci95`` are half-widths (NaN for fewer than 2 values)."""

    n: int
    mean: float
    std: float
    ci90: float
    ci95: float


def summarize(values: Sequence[float]) -> Summary:
    """Mean, sample standard deviation and two-sided 90 % / 95 % Student-t confidence half-widths."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan)
    mean = math.fsum(xs) / n
    if n < 2:
        return Summary(n, mean, math.nan, math.nan, math.nan)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    sem = std / math.sqrt(n)
    return Summary(n, mean, std, t_quantile(0.95, n - 1) * sem, t_quantile(0.975, n - 1) * sem)
