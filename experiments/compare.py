"""Our numbers beside the papers': ``python -m experiments.compare EXPERIMENT [--sweep FILE] [--paper KEY]``.

Reads only the experiment's rows (``docs/results/data/<experiment>.csv``, kept in git) and its sweep
file (``experiments/sweeps/<experiment>.yaml`` unless ``--sweep``: the paper's key, the description
and the point ids that rows must belong to), and writes the report ``docs/results/<experiment>.md``
with its figures beside it (``docs/results/<experiment>-<figure>.png``), so deleting ``results/``
and running this again gives the same report (issue 10, item 4).

Each headline number of the paper (``experiments.papers``) is put beside ours with its 95 % interval
and a verdict (issues 12, 48): a relative claim is the paired change over the seeds both points ran,
by the paper's own estimator where it defines one (``Claim.estimator``: Ghanem 2008's mean of
per-scenario ratios), else the ratio of means 100 x (mean(treatment) / mean(baseline) - 1) with
Fieller's interval (``experiments.stats``), combined over the paper's points as it states them (the
mean, with a delta-method interval over common seeds; or the extreme for "up to"), with the ratio of
means and the median beside it. The report's claims are one family: their p-values are
Holm-adjusted and their intervals recomputed at Bonferroni's simultaneous level (``adjust``), and
the verdict is one ``experiments.verdicts.Term`` from those (docs/experiments.md, "Verdicts").
A hand-written section, ``docs/results/notes/<experiment>.md`` (the setup as run, deviations
explained), is included when it exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.aggregate import Group, Rows, group_runs, load_rows, write_if_changed
from experiments.behaviour import UNKNOWN_PREFIX
from experiments.papers import NOT_REPRODUCED, PAPERS, Claim, Figure, Paper
from experiments.rows import DATA_DIR, DIRTY_SUFFIX, RunRecord
from experiments.spec import Sweep, SweepError, expand, label, load_sweep
from experiments.stats import (
    NAN_CHANGE,
    Change,
    contributions,
    estimate,
    median_change,
    p_no_change,
    p_value_equal,
    paired_change,
    seed_ratios,
    summarize,
    t_quantile,
)
from experiments.verdicts import (
    ALPHA,
    SIZE_FACTOR,
    Term,
    carried_note,
    family_confidence,
    holm,
    judge_change,
    judge_value,
)

#: Where reports and their figures go (kept in git).
REPORTS_DIR = Path("docs/results")


Aligned = tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]
"""Per block, (treatment, baseline) values over the seeds every block has for both."""


@dataclass(frozen=True, slots=True)
class Result:
    """Our value for a claim, with its interval; ``change.value`` is NaN without matching points.
    ``change`` is by the claim's estimator at 95 %; ``adjusted`` is the same at the family's
    simultaneous level (``adjust``); the verdict uses the adjusted p-value and interval."""

    claim: Claim
    change: Change
    pairs: int  # points (blocks) behind the value
    runs: int
    note: str = ""
    min_seeds: int = 0  # the sweep's paired seeds per block: at least (0: not known) ...
    max_seeds: int = 0  # ... and at most
    data: Aligned = ()  # a relative claim: the blocks behind the value, aligned by seed
    values: tuple[float, ...] = ()  # an absolute claim: the runs' values
    p_raw: float = math.nan  # the claim's test (``adjust``): no change, or ours = the paper's number
    p_adj: float = math.nan  # the same after Holm's adjustment across the report's claims
    adjusted: Change | None = None  # the interval at the family's simultaneous level
    family: int = 0  # the claims in the family (0: not adjusted)

    @property
    def value(self) -> float:
        return self.change.value

    @property
    def seeds(self) -> int:
        """The paired seeds behind a relative claim (the estimator may use fewer: a mean of
        ratios leaves out zero baselines), the runs behind an absolute one."""
        return len(self.data[0][0]) if self.data else self.change.n

    @property
    def pending(self) -> bool:
        """Fewer paired seeds than the sweep's minimum: no verdict yet whatever the interval."""
        return bool(self.min_seeds) and self.seeds < self.min_seeds

    @property
    def verdict(self) -> Term:
        """The claim's term (``experiments.verdicts``), from the adjusted p-value and interval
        (unadjusted, with no p-value: the 95 % interval excluding zero is the test)."""
        c, claim = self.change, self.claim
        if claim.untestable:
            return Term.NOT_TESTABLE
        if math.isnan(c.value) or self.pending:
            return Term.INCONCLUSIVE
        interval = self.adjusted or c
        if claim.kind == "value":
            return judge_value(claim, interval)
        p = self.p_raw if math.isnan(self.p_adj) else self.p_adj
        significant = interval.excludes_zero() if math.isnan(p) else p < ALPHA
        return judge_change(claim, significant, c.value, interval)

    @property
    def ratio_of_means(self) -> float:
        """100 x (mean(t) / mean(b) - 1) over the blocks behind the value (NaN for a value)."""
        return paired_change(self.data).value if self.data else math.nan

    @property
    def median(self) -> float:
        """The median over seeds of the per-seed change (NaN for a value)."""
        return median_change(self.data) if self.data else math.nan

    @property
    def carried(self) -> str:
        """A note when a few seeds carry the claim's estimate (``verdicts.carried_note``)."""
        return carried_note(contributions(self.data, self.claim.estimator).tolist()) if self.data else ""

    @property
    def within_factor(self) -> str:
        """Is our size within ``SIZE_FACTOR`` of the paper's? For an absolute value, and for a
        relative claim whose direction we reproduced."""
        if math.isnan(self.value) or self.claim.paper == 0.0 or self.claim.untestable:
            return "-"
        if self.claim.kind == "value" and self.claim.bound:  # "below 2 %": the verdict judges it
            return "-"
        if self.claim.kind == "change_pct" and self.verdict not in (Term.REPRODUCED, Term.SMALLER):
            return "-"
        ratio = self.value / self.claim.paper
        if self.claim.bound and ratio >= 1.0:  # "more than -33 %": ours goes beyond the bound
            return f"yes (beyond the paper's bound: {ratio:.2g}x)"
        ok = 1.0 / SIZE_FACTOR <= ratio <= SIZE_FACTOR
        return f"{'yes' if ok else 'no'} ({ratio:.2g}x)"


def adjust(results: Sequence[Result], alpha: float = ALPHA) -> list[Result]:
    """``results`` with their tests adjusted across the family (the report's claims that have
    one): a relative claim's p-value of no change, an absolute claim's of ours = the paper's
    number, Holm-adjusted (``verdicts.holm``); and each interval recomputed at Bonferroni's
    simultaneous level 1 - alpha / k, which the sizes and bounds are read from."""
    raw = [_p_raw(r) for r in results]
    k = sum(not math.isnan(p) for p in raw)
    adj = holm(raw)
    conf = family_confidence(k, alpha)
    return [
        dataclasses.replace(r, p_raw=p, p_adj=q, adjusted=_interval_at(r, conf), family=k)
        for r, p, q in zip(results, raw, adj, strict=True)
    ]


def _p_raw(r: Result) -> float:
    if r.claim.untestable or r.pending:
        return math.nan
    if r.claim.kind == "value":
        return p_value_equal(r.values, r.claim.paper)
    return p_no_change(r.data, r.claim.estimator)


def _interval_at(r: Result, confidence: float) -> Change | None:
    if r.claim.kind == "value":
        st = summarize(r.values)
        if st.n < 2:
            return None
        half = t_quantile(0.5 + confidence / 2.0, st.n - 1) * st.std / math.sqrt(st.n)
        return Change(st.n, st.mean, st.mean - half, st.mean + half, confidence, "student-t")
    return estimate(r.data, r.claim.estimator, confidence) if r.data else None


def _matches(params: Mapping[str, str], where: Mapping[str, object]) -> bool:
    return all(k in params and params[k] == label(v) for k, v in where.items())


def _same_code_seeds(t: Group, b: Group, metric: str) -> set[int]:
    """The seeds both points ran whose two runs have the same behaviour key (issue 48, item 5: a
    pair's arms come from the same code and scenario files; an empty or unknown key pairs with
    nothing)."""
    tk, bk = t.behaviour_by_seed(), b.behaviour_by_seed()
    both = set(t.by_seed(metric)) & set(b.by_seed(metric))
    return {s for s in both if tk[s] and tk[s] == bk[s] and not tk[s].startswith(UNKNOWN_PREFIX)}


def _one_behaviour(runs: Sequence[RunRecord]) -> tuple[list[RunRecord], int]:
    """The runs of one behaviour key (issue 48, item 5: a value is never pooled over different
    code): the key most runs have (on a tie, the one of the latest run); and how many were left
    out. Unknown keys (``u...``) count as their own."""
    if not runs:
        return [], 0
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.behaviour] = counts.get(r.behaviour, 0) + 1
    latest = {r.behaviour: r.finished_at for r in runs}
    key = max(counts, key=lambda k: (counts[k], latest[k]))
    kept = [r for r in runs if r.behaviour == key]
    return kept, len(runs) - len(kept)


def _mixed_pairs(blocks: Sequence[tuple[Group, Group]], metric: str) -> int:
    """Seed pairs left out because their two runs ran different code or scenario files."""
    return sum(
        len((set(t.by_seed(metric)) & set(b.by_seed(metric))) - _same_code_seeds(t, b, metric))
        for t, b in blocks
    )


def _aligned(blocks: Sequence[tuple[Group, Group]], metric: str) -> Aligned:
    """Per block, (treatment, baseline) values over the seeds every block has for both, from runs
    of the same behaviour key (``_same_code_seeds``)."""
    common: set[int] | None = None
    for t, b in blocks:
        seeds = _same_code_seeds(t, b, metric)
        common = seeds if common is None else common & seeds
    order = sorted(common or ())
    out = []
    for t, b in blocks:
        tv, bv = t.by_seed(metric), b.by_seed(metric)
        out.append((tuple(tv[s] for s in order), tuple(bv[s] for s in order)))
    return tuple(out)


def _pair(
    treated: Sequence[Group], groups: Sequence[Group], baseline: Mapping[str, object]
) -> list[tuple[Group, Group]]:
    """Each treated group with its baseline group (its parameters with ``baseline``'s values), for
    those that have one: the blocks of a claim's, and of a change figure's, paired change."""
    base = {k: label(v) for k, v in baseline.items()}
    blocks = []
    for g in treated:
        want = {**g.params, **base}
        b = next((b for b in groups if b.params == want), None)
        if b is not None:
            blocks.append((g, b))
    return blocks


def _censored_note(metric: str, groups: Sequence[Group], note: str) -> str:
    """``note``, plus how many of these runs give a bound and not a measurement (RunRecord.censored)."""
    k = sum(r.censored(metric) for g in groups for r in g.runs)
    if not k:
        return note
    extra = (
        f"{k} run{'s' if k > 1 else ''} without the whole file, counted at the run's limit (a lower bound)"
    )
    return f"{note}; {extra}" if note else extra


def evaluate(
    claim: Claim, groups: list[Group], defined: Sequence[Mapping[str, str]] = (), min_seeds: int = 0
) -> Result:
    """Compute ``claim`` over the experiment's point groups (see ``experiments.papers.Claim``);
    ``defined``: the axis labels of the sweep's points, to tell points not run yet from points
    the sweep does not have; ``min_seeds``: the sweep's minimum of paired seeds per block (an "up
    to" picks its extreme among the blocks that have it, while any has)."""
    treated = [g for g in groups if _matches(g.params, claim.where)]
    wanted = {frozenset(d.items()) for d in defined if _matches(d, claim.where)}
    res = _evaluate(claim, groups, treated, bool(wanted), min_seeds)
    bases = [b for _, b in _pair(treated, groups, claim.baseline)]
    used = treated + (bases if claim.kind != "value" else [])
    note = _coverage_note(treated, wanted, res.note) if treated else res.note
    return dataclasses.replace(res, note=_censored_note(claim.metric, used, note), min_seeds=min_seeds)


def _coverage_note(treated: Sequence[Group], wanted: set[frozenset[tuple[str, str]]], note: str) -> str:
    """``note``, plus how many of the sweep's points for the claim (``wanted``) have runs when
    some have none (an "up to" over speeds measured at one speed of two says so)."""
    ran = {frozenset(g.params.items()) for g in treated} & wanted
    if not wanted or len(ran) >= len(wanted):
        return note
    extra = f"{len(ran)} of the sweep's {len(wanted)} points run"
    return f"{note}; {extra}" if note else extra


def _evaluate(
    claim: Claim, groups: list[Group], treated: list[Group], defined_here: bool, min_seeds: int
) -> Result:
    if not treated:
        if not groups:
            note = "no runs yet"
        elif defined_here:
            note = "the sweep has these points; no runs of them yet"
        else:
            note = "no matching points in this sweep"
        return Result(claim, NAN_CHANGE, 0, 0, note)
    if claim.kind == "value":
        runs, other = _one_behaviour([r for g in treated for r in g.runs])
        vals = [r.metric(claim.metric) for r in runs]
        st = summarize(vals)
        ch = Change(st.n, st.mean, st.mean - st.ci95, st.mean + st.ci95, 0.95, "student-t")
        unrecorded = "" if st.n else f"{claim.metric} not recorded by the {len(vals)} run(s) of these points"
        if other:
            left = f"{other} run{'s' if other > 1 else ''} of other code or scenario files left out"
            unrecorded = f"{unrecorded}; {left}" if unrecorded else left
        kept = tuple(v for v in vals if not math.isnan(v))
        return Result(claim, ch, len(treated), st.n, unrecorded, values=kept)
    blocks = _pair(treated, groups, claim.baseline)
    if not blocks:
        return Result(claim, NAN_CHANGE, 0, 0, "no baseline points")
    res = _evaluate_pairs(claim, blocks, min_seeds)
    mixed = _mixed_pairs(blocks, claim.metric)
    if not mixed:
        return res
    extra = f"{mixed} seed pair{'s' if mixed > 1 else ''} left out: the two runs ran different code or scenario files"
    return dataclasses.replace(res, note=f"{res.note}; {extra}" if res.note else extra)


def _evaluate_pairs(claim: Claim, blocks: list[tuple[Group, Group]], min_seeds: int) -> Result:
    if claim.combine == "mean":
        data = _aligned(blocks, claim.metric)
        change = estimate(data, claim.estimator)
        runs = 2 * change.n * len(blocks)
        note = f"mean of {len(blocks)} points" if len(blocks) > 1 else ""
        return Result(claim, change, len(blocks), runs, _zero_note(claim, data, note), data=data)
    each = [_aligned([blk], claim.metric) for blk in blocks]
    per_block = [
        (c, blk, d)
        for blk, d in zip(blocks, each, strict=True)
        if not math.isnan((c := estimate(d, claim.estimator)).value)
    ]
    if not per_block:
        return Result(claim, NAN_CHANGE, len(blocks), 0, "no paired seeds")
    # a block short of the sweep's minimum has no verdict yet: its point estimate from a seed or
    # two must not stand in for a decided block's (Yu 2004: 20 m/s at 1 seed, +14.2 %, took the
    # "up to +30 %" from 10 m/s's +12.9 % at 10 seeds and turned a verdict back to pending)
    ready = [cb for cb in per_block if cb[0].n >= min_seeds]
    eligible = ready or per_block
    pick = max if claim.combine == "max" else min
    change, (g, _), data = pick(eligible, key=lambda cb: cb[0].value)
    where = ", ".join(f"{k}={v}" for k, v in g.params.items() if k not in claim.where)
    # a claim whose "where" fixes every axis has one block: there is no extreme to name
    note = f"{claim.combine} at {where}" if where else ""
    if ready and len(ready) < len(per_block):
        short = len(per_block) - len(ready)
        note += (
            f" ({short} of {len(per_block)} points below {min_seeds} seeds, left out until they have them)"
        )
    return Result(claim, change, len(blocks), 2 * change.n, _zero_note(claim, data, note), data=data)


def _zero_note(claim: Claim, data: Aligned, note: str) -> str:
    """``note``, plus how many seeds the mean of ratios leaves out for a zero baseline."""
    if claim.estimator != "mean_of_ratios":
        return note
    _, dropped = seed_ratios(data)
    if not dropped:
        return note
    extra = f"{dropped} seed{'s' if dropped > 1 else ''} with a zero baseline left out of the mean of ratios"
    return f"{note}; {extra}" if note else extra


def _fmt(x: float, unit: str, signed: bool = True) -> str:
    """A claim's number: a change in percent with its sign, an absolute value without."""
    if math.isnan(x):
        return "n/a"
    if unit == "%":
        return f"{x:+.1f} %" if signed else f"{x:.1f} %"
    return f"{x:.3g} {unit}"


def _interval(c: Change, unit: str, signed: bool = True) -> str:
    if math.isnan(c.low):
        if c.n >= 2 and not math.isnan(c.value) and c.method == "fieller":
            return "unbounded (Fieller: the baseline's mean not clearly above zero)"
        return "n/a"
    if unit == "%":
        return f"[{c.low:+.1f}, {c.high:+.1f}]" if signed else f"[{c.low:.1f}, {c.high:.1f}]"
    return f"[{c.low:.3g}, {c.high:.3g}]"


def _p(p: float) -> str:
    if math.isnan(p):
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.2g}"


def _note(r: Result) -> str:
    """The note column: not testable and why, pending, how the value was formed, the tail."""
    parts = [f"not testable here: {r.claim.untestable}" if r.claim.untestable else ""]
    if r.pending and not r.claim.untestable:
        parts.append(f"pending: {r.seeds} of the sweep's minimum {r.min_seeds} seeds")
    parts += [r.note, r.carried, _excludes_paper(r)]
    return "; ".join(p for p in parts if p)


def _excludes_paper(r: Result) -> str:
    """For an inconclusive relative claim: whether the adjusted interval excludes the paper's
    number (the paper's size is not there, though neither direction nor "no effect" is shown)."""
    a, c = r.adjusted, r.claim
    if c.kind != "change_pct" or r.verdict is not Term.INCONCLUSIVE or a is None or c.bound:
        return ""
    if math.isnan(a.low) or math.isnan(a.high) or a.low <= c.paper <= a.high:
        return ""
    return f"the adjusted interval excludes the paper's {c.paper:+g} %"


def _family_text(results: Sequence[Result]) -> str:
    k = max((r.family for r in results), default=0)
    if not k:
        return "no claim has a test yet."
    return (
        f"the {k} claims with a test are one family; their p-values (a change: of no change; an "
        f"absolute number: of ours equal to the paper's) are Holm-adjusted, and the adjusted "
        f"intervals are Bonferroni's simultaneous {100 * family_confidence(k):.4g} % ones."
    )


def _claim_notes(results: Sequence[Result]) -> list[str]:
    """Below the table: each claim's "no effect" margin with the paper's argument, and where the
    rows' metric stands in for the paper's; each distinct text once, with the claims it covers."""
    out: list[str] = []
    for title, key in (
        (
            'Margins of "no effect" (points of the change)',
            lambda r: (
                f"+-{r.claim.margin_pct:g}: {r.claim.margin_why}"
                if r.claim.margin_why and r.claim.kind != "value"
                else ""
            ),
        ),
        ("The paper's metric and ours", lambda r: r.claim.metric_note),
    ):
        texts: dict[str, list[str]] = {}
        for r in results:
            if text := key(r):
                texts.setdefault(text, []).append(r.claim.key)
        if texts:
            out += ["", f"{title}:", ""] + [f"- {', '.join(keys)}: {t}" for t, keys in texts.items()]
    return out


def comparison_markdown(
    exp: str,
    paper: Paper,
    results: list[Result],
    rows: Rows,
    sweep: Sweep,
    notes: str,
    sweep_file: Path | None = None,
) -> str:
    groups = group_runs(rows.counted)
    revisions = sorted({r.revision for r in rows.counted if r.revision})
    dirty = sum(r.revision.endswith(DIRTY_SUFFIX) for r in rows.counted)
    dirty_txt = (
        f" {dirty} of the {len(rows.counted)} runs were made from a working tree with uncommitted "
        f"changes (`{DIRTY_SUFFIX}`): their code is the revision's plus edits not recorded."
        if dirty
        else ""
    )
    hosts = sorted({r.host for r in rows.counted if r.host})
    wall_h = sum(r.wall_s for r in [*rows.counted, *rows.invalid] if r.wall_s > 0) / 3600.0
    seq = sweep.sequential
    seeds_txt = (
        f"sequential, {seq.min} to {seq.max} paired seeds per block until {seq.until.metric} "
        f"({seq.until.axis} vs {label(seq.until.baseline)}) is decided"
        if seq
        else f"{len(sweep.seed_list())} seeds per point"
    )
    lines = [
        f"# {exp}: our results beside {paper.title}",
        "",
        f"Generated by `python -m experiments.compare {exp}` from the rows in "
        f"`docs/results/data/{exp}.csv`: {len(rows.counted)} valid runs in {len(groups)} points "
        f"({len(rows.invalid)} invalid runs re-run, {len(rows.problems)} rows skipped). "
        f"Sweep `{sweep_file or default_sweep_file(exp)}`, scenario `{sweep.scenario}`, {seeds_txt}. "
        f"{sweep.description}".rstrip(),
        "",
        f"Revisions: {', '.join(revisions) or 'n/a'}.{dirty_txt} Hosts: {', '.join(hosts) or 'n/a'}. "
        f"Run time paid: {wall_h:.1f} h of wall clock over all runs (before parallelism).",
        "",
        "Relative numbers are paired changes over the seeds both points ran, by the paper's own "
        "estimator where it defines one (else the ratio of means, 100 x (mean(ours) / "
        "mean(baseline) - 1)), with the ratio of means and the median of the per-seed changes "
        "beside it; 95 % intervals (Fieller for a ratio of means at one point, the delta method "
        "for a mean over points, Student-t for a mean of ratios). Multiplicity: "
        f"{_family_text(results)} Verdicts in the one vocabulary of docs/experiments.md "
        '("Verdicts").',
        "",
        "| claim | paper | ours | 95 % interval | adjusted interval | p raw / Holm | ratio of means "
        "| median | seeds | points | verdict | size within 2x | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.claim
        signed = c.kind == "change_pct"
        adjusted = "-" if r.adjusted is None else _interval(r.adjusted, c.unit, signed)
        lines.append(
            f"| {c.text} | {_fmt(c.paper, c.unit, signed)} | {_fmt(r.value, c.unit, signed)} | "
            f"{_interval(r.change, c.unit, signed)} | {adjusted} | {_p(r.p_raw)} / {_p(r.p_adj)} | "
            f"{_fmt(r.ratio_of_means, c.unit)} | {_fmt(r.median, c.unit)} | {r.change.n} | "
            f"{r.pairs} | {r.verdict} | {r.within_factor} | {_note(r)} |"
        )
    lines += _claim_notes(results)
    own = paper.sweep_file(sweep.part).stem
    others = [paper.sweep_file(p).stem for p in paper.parts if p != sweep.part]
    if own != exp:
        lines += [
            "",
            f"This sweep is a variant of the {sweep.part or 'main'} part of the paper's evaluation, "
            f"whose report is [{own}]({own}.md); it is not what `make reproduce PAPER={paper.key}` runs.",
        ]
    elif others:
        lines += [
            "",
            f"This is the {sweep.part or 'main'} part of the paper's evaluation; the other parts: "
            + ", ".join(f"[{o}]({o}.md)" for o in others)
            + " (`make reproduce PAPER="
            + paper.key
            + "` runs them all).",
        ]
    missing = NOT_REPRODUCED.get(paper.key, [])
    if missing:
        lines += ["", "Not compared here:", ""] + [f"- {m}" for m in missing]
    if notes:
        lines += ["", notes.strip()]
    lines += ["", "## Our points (mean ± 95 % CI over seeds)", ""]
    if groups:
        axes = list(groups[0].params)
        metrics = ["throughput_total_bps", "tcp_timeouts_per_flow", "routing_packets"]
        lines.append("| " + " | ".join([*axes, "runs", *metrics]) + " |")
        lines.append("|" + "---|" * (len(axes) + 1 + len(metrics)))
        for g in groups:
            cells = []
            for m in metrics:
                st = g.stat(m)
                ci = "" if math.isnan(st.ci95) else f" ± {st.ci95:.3g}"
                cells.append("n/a" if math.isnan(st.mean) else f"{st.mean:.4g}{ci}")
            lines.append("| " + " | ".join([*(g.params[a] for a in axes), str(len(g.runs)), *cells]) + " |")
    else:
        lines.append("No valid runs yet.")
    if rows.problems:
        lines += ["", "Rows skipped:", ""] + [f"- {p}" for p in rows.problems[:20]]
    figs = [
        f"![{f.title}]({figure_file(exp, paper, f.name)})"
        for f in paper.figures
        if f.part == sweep.part and figure_rows(f, rows.counted)
    ]
    if has_claims_figure(results):
        figs.append(f"![claims]({figure_file(exp, paper, 'claims')})")
    lines += ["", "## Figures", "", *figs, ""]
    return "\n".join(lines)


def _num_or_str(v: str) -> tuple[int, float | str]:
    try:
        return (0, float(v))
    except ValueError:
        return (1, v)


def figure_rows(fig: Figure, rows: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs ``fig`` plots: those that have its axes (none: the figure is not drawn)."""
    needed = (fig.x, *fig.series, *fig.panels)
    return [r for r in rows if all(a in r.params for a in needed)]


@dataclass(frozen=True, slots=True)
class PaperPoint:
    """A paper's number placed on one of our figures: at ``x`` of ``series`` in ``panel``, ``y``
    in the figure's unit. An absolute claim is its number; a relative one is the paper's change
    applied to the paper's own number for the baseline point when it gives one, else to our
    baseline's mean there (where the paper's ratio would put us)."""

    panel: tuple[str, ...]
    series: tuple[str, ...]
    x: str
    y: float
    claim: str


def _where_is(claim: Claim, params: Mapping[str, str]) -> bool:
    """Whether ``claim`` names exactly the point ``params`` (axis -> label)."""
    return {k: label(v) for k, v in claim.where.items()} == dict(params)


def paper_points(fig: Figure, claims: Sequence[Claim], rows: Sequence[RunRecord]) -> list[PaperPoint]:
    """The claims that name one point of ``fig`` (its metric, x, series and panels), as points;
    where the paper gives both an absolute number and a change for one point, the number."""
    out: list[PaperPoint] = []
    axes = (fig.x, *fig.series, *fig.panels)
    if fig.baseline:  # a figure of changes: the paper's change over the same baseline, as it is
        want = {k: label(v) for k, v in fig.baseline.items()}
        pooled = {a for r in rows for a in r.params} - {*axes, *fig.baseline}
        for c in claims:
            if (
                c.kind == "change_pct"
                and c.metric == fig.metric
                and c.part == fig.part
                and {k: label(v) for k, v in c.baseline.items()} == want
                and all(a in c.where for a in axes)
                and set(c.where) <= {*axes, *fig.baseline}  # not a claim at one value of a pooled axis
                and (c.combine == "mean" or not pooled)  # an "up to" is not a mean over the pooled axes
            ):
                where = {k: label(v) for k, v in c.where.items()}
                panel, series = tuple(where[a] for a in fig.panels), tuple(where[a] for a in fig.series)
                out.append(PaperPoint(panel, series, where[fig.x], c.paper, c.key))
        return out
    taken: set[tuple[tuple[str, ...], tuple[str, ...], str]] = set()
    for c in sorted(claims, key=lambda c: c.kind != "value"):
        if c.metric != fig.metric or c.part != fig.part or not all(a in c.where for a in axes):
            continue
        where = {k: label(v) for k, v in c.where.items()}
        panel = tuple(where[a] for a in fig.panels)
        series = tuple(where[a] for a in fig.series)
        at = (panel, series, where[fig.x])
        if at in taken:
            continue
        if c.kind == "value":
            out.append(PaperPoint(*at, c.paper * fig.scale, c.key))
            taken.add(at)
            continue
        base = {**where, **{k: label(v) for k, v in c.baseline.items()}}
        # the paper's own number for the baseline point, else our baseline's mean there
        base_y = next(
            (v.paper for v in claims if v.kind == "value" and v.metric == c.metric and _where_is(v, base)),
            None,
        )
        if base_y is None:
            st = summarize([r.metric(fig.metric) for r in rows if _matches(r.params, base)])
            base_y = st.mean if st.n else None
        if base_y is not None:
            out.append(PaperPoint(*at, base_y * (1.0 + c.paper / 100.0) * fig.scale, c.key))
    return out


def figure_change(fig: Figure, groups: Sequence[Group], at: Mapping[str, str]) -> Change | None:
    """The paired change of ``fig.metric`` at one point of a change figure (``at``: its x, series
    and panel labels): every group there that is not the baseline against its baseline group (the
    same parameters with ``fig.baseline``'s values), over the seeds all of them ran, pooled as a
    claim's mean over points, by the figure's estimator; None where nothing is paired."""
    treated = [g for g in groups if _matches(g.params, at) and not _matches(g.params, fig.baseline)]
    blocks = _pair(treated, groups, fig.baseline)
    if not blocks:
        return None
    change = estimate(_aligned(blocks, fig.metric), fig.estimator)
    return None if math.isnan(change.value) else change


def _yerr(change: Change) -> tuple[float, float]:
    """The error bar below and above ``change.value`` (0 where the interval has no bound there)."""
    lo = 0.0 if math.isnan(change.low) else max(0.0, change.value - change.low)
    hi = 0.0 if math.isnan(change.high) else max(0.0, change.high - change.value)
    return lo, hi


def _series_name(fig: Figure, series: tuple[str, ...]) -> str:
    """A line's legend: its series labels, a yes/no value with its axis ("tcp.sack=true")."""
    if not series:
        return fig.metric
    return ", ".join(
        f"{a}={v}" if v in ("true", "false") else v for a, v in zip(fig.series, series, strict=True)
    )


def draw_figure(fig: Figure, rows: list[RunRecord], out: Path, claims: Sequence[Claim] = ()) -> bool:
    """Draw one figure, with the paper's numbers that name its points (``paper_points``) as
    stars in their series' colour; False (and no file) if the runs lack its axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def lab(r: RunRecord, axis: str) -> str:
        return r.params.get(axis, "")

    rows = figure_rows(fig, rows)
    if not rows:
        return False
    panels = sorted(
        {tuple(lab(r, a) for a in fig.panels) for r in rows}, key=lambda t: [_num_or_str(x) for x in t]
    )
    xs = sorted({lab(r, fig.x) for r in rows}, key=_num_or_str)
    numeric = all(_num_or_str(x)[0] == 0 for x in xs)
    series = sorted({tuple(lab(r, a) for a in fig.series) for r in rows})
    changes: dict[tuple[tuple[str, ...], tuple[str, ...], str], Change] = {}
    if fig.baseline:  # a change figure: its points first; nothing paired, no figure
        groups = group_runs(rows)
        for panel in panels:
            for s in series:
                for x in xs:
                    at = {
                        fig.x: x,
                        **dict(zip(fig.series, s, strict=True)),
                        **dict(zip(fig.panels, panel, strict=True)),
                    }
                    ch = figure_change(fig, groups, at)
                    if ch is not None:
                        changes[(panel, s, x)] = ch
        if not changes:
            return False
        series = sorted({s for _, s, _ in changes})  # the baseline's own series has no line
    figure, axes = plt.subplots(
        1, len(panels), figsize=(max(7.0, 5.0 * len(panels)), 4.0), squeeze=False, sharey=True
    )
    # series side by side around each x (their error bars would hide each other)
    span = 1.0
    if numeric:
        fx = [float(x) for x in xs]
        span = (max(fx) - min(fx)) or abs(fx[0]) or 1.0
    dodge = {s: (i - (len(series) - 1) / 2) * 0.015 * span for i, s in enumerate(series)}
    ours = paper_points(fig, claims, rows)
    open_ends = False
    for ax, panel in zip(axes[0], panels, strict=True):
        for s in series:
            colour = None
            px, py = [], []
            lo: list[float] = []
            hi: list[float] = []
            unbounded: list[tuple[float | str, float]] = []
            for x in xs:
                if fig.baseline:
                    if (ch := changes.get((panel, s, x))) is None:
                        continue
                    px.append(float(x) + dodge[s] if numeric else x)
                    py.append(ch.value)
                    below, above = _yerr(ch)
                    lo.append(below)
                    hi.append(above)
                    if math.isnan(ch.low) or math.isnan(ch.high):
                        unbounded.append((px[-1], ch.value))
                    continue
                vals = [
                    r.metric(fig.metric) * fig.scale
                    for r in rows
                    if lab(r, fig.x) == x
                    and tuple(lab(r, a) for a in fig.series) == s
                    and tuple(lab(r, a) for a in fig.panels) == panel
                ]
                st = summarize(vals)
                if st.n:
                    px.append(float(x) + dodge[s] if numeric else x)
                    py.append(st.mean)
                    lo.append(0.0 if math.isnan(st.ci95) else st.ci95)
                    hi.append(lo[-1])
            if px:
                name = _series_name(fig, s)
                bars = ax.errorbar(px, py, yerr=[lo, hi], marker="o", capsize=3, label=name)
                colour = bars.lines[0].get_color()
            if (
                unbounded
            ):  # an interval without a bound (one seed, or Fieller unbounded): a ring, not a precise point
                open_ends = True
                ax.scatter(
                    [u[0] for u in unbounded],
                    [u[1] for u in unbounded],
                    s=220,
                    facecolors="none",
                    edgecolors=colour,
                    linewidths=1.2,
                    zorder=4,
                )
            pts = [p for p in ours if p.panel == panel and p.series == s and p.x in xs]
            if pts:
                ax.scatter(
                    [float(p.x) + dodge[s] if numeric else p.x for p in pts],
                    [p.y for p in pts],
                    marker="*",
                    s=140,
                    color=colour,
                    edgecolors="black",
                    linewidths=0.6,
                    zorder=5,
                    label=f"paper, {_series_name(fig, s)}",
                )
        if numeric:
            ax.set_xticks([float(x) for x in xs], xs)
        ax.set_xlabel(fig.xlabel or fig.x)
        ax.set_title(", ".join(f"{a}={v}" for a, v in zip(fig.panels, panel, strict=True)), fontsize=9)
        ax.grid(True, alpha=0.3)
        if fig.baseline:
            ax.axhline(0, color="black", linewidth=0.8)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel(fig.ylabel)
    title = fig.title
    if fig.baseline:
        title += "\n(bars: our paired 95 % intervals"
        title += "; rings: no bound on that side" if open_ends else ""
        title += "; stars: the paper's change)" if ours else ")"
    elif ours:
        title += "\n(stars: the paper's number; for a change, applied to the baseline's number)"
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(out, dpi=100, metadata={"Software": None})
    plt.close(figure)
    return True


def has_claims_figure(results: Sequence[Result]) -> bool:
    """Whether ``draw_claims`` draws anything: only relative claims go on it."""
    return any(r.claim.kind == "change_pct" for r in results)


def draw_claims(paper: Paper, results: list[Result], out: Path) -> bool:
    """The paper's relative numbers against ours, with our 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rel = [r for r in results if r.claim.kind == "change_pct"]
    if not has_claims_figure(results):
        return False
    figure, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(rel) + 2), 4.5))
    idx = list(range(len(rel)))
    ax.bar([i - 0.2 for i in idx], [r.claim.paper for r in rel], width=0.4, label="paper")
    ours = [0.0 if math.isnan(r.value) else r.value for r in rel]
    err_lo = [_yerr(r.change)[0] for r in rel]
    err_hi = [_yerr(r.change)[1] for r in rel]
    ax.bar([i + 0.2 for i in idx], ours, width=0.4, yerr=[err_lo, err_hi], capsize=2, label="ours (95 % CI)")
    ax.set_xticks(idx, [r.claim.key for r in rel], rotation=60, ha="right", fontsize=8)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("change vs baseline (%)")
    ax.set_title(f"{paper.title}: paper vs ours")
    ax.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=100, metadata={"Software": None})
    plt.close(figure)
    return True


def figure_file(experiment: str, paper: Paper, name: str) -> str:
    """``<experiment>-<figure>.png`` (the paper's key left out of the figure's name)."""
    return f"{experiment}-{name.removeprefix(paper.key + '-')}.png"


def default_sweep_file(experiment: str) -> Path:
    return Path("experiments/sweeps") / f"{experiment}.yaml"


def compare(
    sweep: Sweep,
    paper_key: str | None = None,
    data_dir: str | Path = DATA_DIR,
    reports_dir: str | Path = REPORTS_DIR,
    sweep_file: Path | None = None,
) -> tuple[Path, bool]:
    """Write ``<reports_dir>/<experiment>.md`` and its figures from the rows alone; returns the
    report's path and whether its content changed (the figures are redrawn every time)."""
    key = paper_key or sweep.paper
    if not key or key not in PAPERS:
        raise KeyError(
            f"{sweep.experiment}: no paper to compare with (sweep paper: {key!r}; known: {', '.join(PAPERS)})"
        )
    paper = PAPERS[key]
    exp = sweep.experiment
    points = expand(sweep)
    rows = load_rows(exp, data_dir, {p.point_id: p.index for p in points})
    groups = group_runs(rows.counted)
    defined = [{k: label(v) for k, v in p.params.items()} for p in points]
    seq = sweep.sequential
    lo, hi = (seq.min, seq.max) if seq else (len(sweep.seed_list()),) * 2
    results = adjust(
        [
            dataclasses.replace(evaluate(c, groups, defined, lo), max_seeds=hi)
            for c in paper.claims
            if c.part == sweep.part
        ]
    )
    out_dir = Path(reports_dir)
    notes_file = out_dir / "notes" / f"{exp}.md"
    notes = notes_file.read_text(encoding="utf-8") if notes_file.exists() else ""
    md = comparison_markdown(exp, paper, results, rows, sweep, notes, sweep_file)
    out = out_dir / f"{exp}.md"
    changed = write_if_changed(out, md)
    for fig in paper.figures:
        if fig.part == sweep.part:
            png = out_dir / figure_file(exp, paper, fig.name)
            if not draw_figure(fig, rows.counted, png, paper.claims):
                png.unlink(missing_ok=True)  # not linked: no stale picture beside the report
    png = out_dir / figure_file(exp, paper, "claims")
    if not draw_claims(paper, results, png):
        png.unlink(missing_ok=True)
    return out, changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.compare", description="Compare a sweep's rows with its paper."
    )
    ap.add_argument("experiment", help="experiment name: its rows are <data>/<name>.csv")
    ap.add_argument("--sweep", default=None, help="sweep file (default experiments/sweeps/<experiment>.yaml)")
    ap.add_argument("--paper", choices=sorted(PAPERS), default=None, help="default: the sweep file's paper")
    ap.add_argument("--data", default=str(DATA_DIR), help=f"rows folder (default {DATA_DIR})")
    ap.add_argument("--reports", default=str(REPORTS_DIR), help=f"report folder (default {REPORTS_DIR})")
    ap.add_argument("--quiet", action="store_true", help="do not print the comparison, only what was written")
    args = ap.parse_args(argv)
    sweep_file = Path(args.sweep) if args.sweep else default_sweep_file(args.experiment)
    try:
        sweep = load_sweep(sweep_file)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if sweep.experiment != args.experiment:
        sweep = sweep.model_copy(update={"experiment": args.experiment})
    try:
        path, changed = compare(sweep, args.paper, args.data, args.reports, sweep_file)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(path.read_text(encoding="utf-8"))
    print(f"{path}: {'written' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
