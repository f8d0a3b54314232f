"""The reports' verdicts (issue 48, items 2-4): multiplicity, the paper's estimator, the vocabulary."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from experiments.compare import Result, adjust
from experiments.papers import PAPERS, Claim
from experiments.stats import Change, contributions, estimate, median_change, paired_change
from experiments.verdicts import Term, carried_note, holm, judge_change, judge_value

GOODPUT = next(c for c in PAPERS["klemm2004"].claims if c.key == "combined-goodput")  # +75 %, +-3


def _claim(key: str, paper: str = "klemm2004") -> Claim:
    return next(c for c in PAPERS[paper].claims if c.key == key)


def _pairs(
    diffs: list[float], level: float = 100.0
) -> tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]:
    """One block of paired seeds: baselines ``level`` + seed noise, treatment = baseline + diff."""
    base = tuple(level + 7.0 * ((3 * i) % 5) for i in range(len(diffs)))
    return ((tuple(b + d for b, d in zip(base, diffs, strict=True)), base),)


def _result(claim: Claim, data: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]) -> Result:
    return Result(claim, estimate(data, claim.estimator), 1, 2 * len(data[0][0]), data=data)


# -- multiplicity ---------------------------------------------------------------------------------


def test_holm_adjusts_up_keeps_order_and_skips_claims_without_a_test() -> None:
    raw = [0.01, math.nan, 0.04, 0.03, 0.5]
    adj = holm(raw)
    assert math.isnan(adj[1])
    tested = [(p, q) for p, q in zip(raw, adj, strict=True) if not math.isnan(p)]
    assert all(q >= p for p, q in tested)  # never below the raw p-value
    assert all(q <= min(1.0, 4 * p) for p, q in tested)  # never above Bonferroni's (k = 4)
    ordered = sorted(tested)
    assert all(a[1] <= b[1] for a, b in zip(ordered, ordered[1:], strict=False))  # monotone
    assert adj[0] == pytest.approx(0.04)  # the smallest of 4 is multiplied by 4
    assert holm([0.2]) == [pytest.approx(0.2)]  # a family of one is not adjusted


def test_a_claim_significant_raw_but_not_after_holm_gets_the_adjusted_verdict() -> None:
    # +15 % of a 100 baseline with noise: p about 0.02 alone
    diffs = [30.0, 0.0, 28.0, 5.0, 35.0, -2.0, 26.0, 6.0]
    effect = _result(GOODPUT, _pairs(diffs))
    alone = adjust([effect])[0]
    assert alone.p_raw < 0.05 and alone.family == 1
    assert alone.verdict is Term.SMALLER  # the direction; its interval short of +75 %
    # beside four claims with nothing in them, Holm's adjustment takes the effect away
    nulls = [_result(GOODPUT, _pairs([(-1.0) ** i * (10.0 + i) for i in range(8)])) for _ in range(4)]
    family = adjust([effect, *nulls])
    first = family[0]
    assert first.family == 5 and first.p_raw == pytest.approx(alone.p_raw)
    assert first.p_raw < 0.05 <= first.p_adj
    assert first.verdict is Term.INCONCLUSIVE
    # and the interval the size is read from is the simultaneous one, wider than the raw 95 %
    assert first.adjusted is not None and first.adjusted.confidence == pytest.approx(0.99)
    assert first.adjusted.low < first.change.low and first.adjusted.high > first.change.high


def test_an_untestable_claim_stays_out_of_the_family() -> None:
    rts = _claim("original-rts-one")
    value = Result(rts, Change(10, 91.0, 90.5, 91.5, 0.95, "student-t"), 1, 10, values=(91.0,) * 10)
    effect = _result(GOODPUT, _pairs([30.0, 5.0, 28.0, 12.0, 35.0, 8.0]))
    out = adjust([value, effect])
    assert out[0].verdict is Term.NOT_TESTABLE and math.isnan(out[0].p_raw)
    assert out[1].family == 1


# -- the vocabulary ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("significant", "change", "term"),
    [
        (True, Change(20, 80.0, 60.0, 100.0, 0.99, "fieller"), Term.REPRODUCED),  # +75 % inside
        (True, Change(20, 30.0, 10.0, 50.0, 0.99, "fieller"), Term.SMALLER),  # all below +75 %
        (False, Change(20, 0.5, -2.5, 2.9, 0.99, "fieller"), Term.NO_EFFECT),  # within +-3 points
        (True, Change(20, -30.0, -50.0, -10.0, 0.99, "fieller"), Term.CONTRADICTED),
        (False, Change(20, 5.0, -10.0, 20.0, 0.99, "fieller"), Term.INCONCLUSIVE),
        (False, Change(20, 0.5, -3.5, 2.9, 0.99, "fieller"), Term.INCONCLUSIVE),  # just outside
        (True, Change(20, 80.0, math.nan, math.nan, 0.99, "fieller"), Term.REPRODUCED),  # unbounded
    ],
)
def test_each_term_of_a_relative_claim(significant: bool, change: Change, term: Term) -> None:
    assert judge_change(GOODPUT, significant, change.value, change) is term


def test_not_testable_here_says_why() -> None:
    srtt = _claim("rc-srtt-var-25", "cohen")
    assert "Algorithm 3" in srtt.untestable and "Linux" in srtt.untestable
    c = Change(20, -80.0, -90.0, -70.0, 0.95, "fieller")
    assert judge_change(srtt, True, c.value, c) is Term.NOT_TESTABLE
    assert Result(srtt, c, 1, 40).verdict is Term.NOT_TESTABLE
    rts = _claim("original-rts-one")
    assert "Source 1" in rts.untestable and "static" in rts.untestable
    assert judge_value(rts, Change(10, 76.0, 75.0, 77.0, 0.95, "student-t")) is Term.NOT_TESTABLE


def test_a_value_below_2_percent_is_judged_as_a_bound() -> None:
    combined = _claim("combined-loss")  # "below 2 %"
    assert combined.bound and combined.paper == 2.0
    missed = Change(20, 2.5, 2.3, 2.7, 0.95, "student-t")
    assert judge_value(combined, missed) is Term.CONTRADICTED  # not "yes (1.3x)"
    res = Result(combined, missed, 1, 20)
    assert res.verdict is not Term.REPRODUCED and res.within_factor == "-"  # not "yes (1.3x)"
    assert judge_value(combined, Change(20, 1.5, 1.2, 1.8, 0.95, "student-t")) is Term.REPRODUCED
    assert judge_value(combined, Change(20, 2.0, 1.6, 2.4, 0.95, "student-t")) is Term.INCONCLUSIVE
    # "about 6": within a factor of 2 by the whole interval, or outside it
    about = _claim("original-rto")
    assert judge_value(about, Change(20, 5.0, 4.0, 7.0, 0.95, "student-t")) is Term.REPRODUCED
    assert judge_value(about, Change(20, 0.7, 0.6, 0.8, 0.95, "student-t")) is Term.CONTRADICTED
    assert judge_value(about, Change(20, 3.0, 2.0, 4.0, 0.95, "student-t")) is Term.INCONCLUSIVE


def test_a_direction_only_claim_and_a_paper_no_change() -> None:
    always = _claim("persistent-goodput-always")  # "always improves": above 0
    up = Change(20, 4.0, 1.0, 7.0, 0.99, "fieller")
    assert judge_change(always, True, up.value, up) is Term.REPRODUCED
    down = Change(20, -4.0, -7.0, -1.0, 0.99, "fieller")
    assert judge_change(always, True, down.value, down) is Term.CONTRADICTED
    flat = Change(20, 0.2, -2.0, 2.5, 0.99, "fieller")
    assert judge_change(always, False, flat.value, flat) is Term.NO_EFFECT
    like_newreno = _claim("dsr-abra-20", "ghanem2008")  # -1.0 %: "behave like NewReno"
    assert abs(like_newreno.paper) <= like_newreno.margin_pct
    assert judge_change(like_newreno, True, 9.0, Change(20, 9.0, 4.0, 14.0, 0.99, "x")) is Term.CONTRADICTED
    assert judge_change(like_newreno, False, 0.1, Change(20, 0.1, -2.0, 2.0, 0.99, "x")) is Term.NO_EFFECT


def test_every_claim_states_its_margin_and_every_paper_has_the_missing_rows() -> None:
    for paper in PAPERS.values():
        for c in paper.claims:
            if c.kind == "change_pct":
                assert c.margin_pct > 0 and c.margin_why, c.key
    klemm = {c.key for c in PAPERS["klemm2004"].claims}
    assert {"persistent-goodput-always", "proactive-loss-change", "combined-loss", "reactive-loss"} <= klemm
    assert "rc-throughput" in {c.key for c in PAPERS["cohen"].claims}
    assert all(c.estimator == "mean_of_ratios" for c in PAPERS["ghanem2008"].claims)


# -- the paper's estimator ------------------------------------------------------------------------


def test_ghanem_mean_of_ratios_with_a_starved_baseline_and_its_note() -> None:
    claim = _claim("dsr-abra-10", "ghanem2008")
    # ten scenarios: nine where ABRA is within a few per cent of NewReno, one where NewReno starved
    base = (300.0, 320.0, 280.0, 310.0, 290.0, 305.0, 315.0, 295.0, 300.0, 20.0)
    treat = (306.0, 317.0, 288.0, 310.0, 284.0, 311.0, 312.0, 301.0, 306.0, 200.0)
    data = ((treat, base),)
    res = Result(claim, estimate(data, claim.estimator), 1, 20, data=data)
    per_seed = [100.0 * (t / b - 1.0) for t, b in zip(treat, base, strict=True)]
    assert res.value == pytest.approx(sum(per_seed) / len(per_seed))  # the paper's: mean of ratios
    assert res.value > 90.0  # the starved seed's +900 % carries it
    assert res.ratio_of_means == pytest.approx(100.0 * (sum(treat) / sum(base) - 1.0))
    assert res.ratio_of_means < 10.0 and abs(res.median) < 3.0
    assert res.median == pytest.approx(median_change(data))
    note = res.carried
    assert note.startswith("1 of 10 seeds carry the mean") and "+900" in note
    # without the starved seed nobody carries it
    assert carried_note(contributions(((treat[:9], base[:9]),), claim.estimator).tolist()) == ""
    # a seed whose baseline delivered nothing has no ratio: left out, and said so
    zero = ((treat, (*base[:9], 0.0)),)
    assert estimate(zero, claim.estimator).n == 9
    assert paired_change(zero).n == 10  # the ratio of means keeps it


def test_the_ratio_of_means_stays_the_estimator_where_the_paper_defines_none() -> None:
    claim = _claim("epln_bead-throughput", "yu2004")
    assert claim.estimator == "ratio_of_means"
    data = _pairs([30.0, 5.0, 28.0, 12.0])
    assert _result(claim, data).value == pytest.approx(paired_change(data).value)
    assert dataclasses.replace(claim, estimator="mean_of_ratios").estimator != claim.estimator


def test_the_committed_reports_use_only_the_vocabulary() -> None:
    """Every report with a verdict column (docs/results/*.md, regenerated from the rows) gives each
    claim one term of ``Term``."""
    terms = {t.value for t in Term}
    seen = 0
    for report in sorted(Path("docs/results").glob("*.md")):
        header: list[str] = []
        for line in report.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| claim |"):
                header = cells
            elif header and line.startswith("| ") and "verdict" in header and len(cells) == len(header):
                assert cells[header.index("verdict")] in terms, (report.name, cells[0])
                seen += 1
            elif not line.startswith("|"):
                header = []
    assert seen >= 60
