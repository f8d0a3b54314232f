"""Which run a sweep starts next, and when a comparison has enough seeds (sans-I/O).

Issue 10, item 3: "Variants of one point share seeds [...] A sweep may say ``seeds: {min: 5, max:
50, until: ...}``: it keeps adding paired seeds to a comparison until the 95% interval of the
relative difference excludes zero, or its half-width is below a stated fraction, or ``max`` is
reached; the verdict and the seed count are reported."

A sweep with a fixed seed list runs its points in expansion order. A sequential sweep groups its
points into *blocks*: the points that differ only in the compared axis (``seeds.until.axis``), one
per value, for every seed. A block starts with ``min`` seeds; whenever a slot is free and no block
has a run left below its current seed target, the undecided block with the fewest seeds gets
``step`` more (so every core stays busy while the verdicts settle), up to ``max``. Its verdict is
recomputed from the counted rows after every run (``experiments.stats.decide``); a block stops
getting seeds once every comparison in it is final. Seeds are paired because a seed fixes the
placement, the mobility and the traffic of a scenario for every variant (topologies/seeding.py).

No I/O, no clock: the runner (``experiments.sweep``) feeds it rows and asks it for points, and the
tests drive it with a fake runner in virtual time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from experiments.rows import RunRecord
from experiments.spec import Point, Sweep, Until, label
from experiments.stats import Change, SequentialDesign, Verdict, decide, paired_change

BlockKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """One treatment against the baseline in one block, as it stands."""

    block: BlockKey
    treatment: str  # the compared axis' label
    baseline: str
    metric: str
    change: Change
    verdict: Verdict


@dataclass
class _Block:
    key: BlockKey
    seeds: list[int]  # every seed the block may use, in order
    points: dict[int, dict[str, Point]]  # seed -> axis label -> point
    target: int
    comparisons: dict[str, Comparison] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return bool(self.comparisons) and all(c.verdict.final for c in self.comparisons.values())


def block_key(point: Point, axis: str) -> BlockKey:
    return tuple((k, label(v)) for k, v in point.params.items() if k != axis)


class Plan:
    """The sweep's remaining work and its verdicts. ``next_point`` hands out one point at a time."""

    def __init__(
        self,
        sweep: Sweep,
        points: Sequence[Point],
        counted: Iterable[RunRecord] = (),
        seed_cap: int | None = None,
    ) -> None:
        """``seed_cap``: no block grows beyond this many seeds in this invocation (``--max-seeds``:
        every block's minimum first, the growth towards ``max`` in a later invocation)."""
        self.sweep = sweep
        self.seed_cap = seed_cap
        self.points = list(points)
        self.seq = sweep.sequential
        self.values: dict[str, RunRecord] = {}  # point id -> counted row
        self.given_up: set[str] = set()
        self.blocks: list[_Block] = []
        self._block_of: dict[str, _Block] = {}
        if self.seq is not None:
            self._build_blocks(self.seq.until, self.seq.min)
        for rec in counted:
            self.add(rec)

    def _build_blocks(self, until: Until, start: int) -> None:
        by_key: dict[BlockKey, _Block] = {}
        for p in self.points:
            key = block_key(p, until.axis)
            blk = by_key.get(key)
            if blk is None:
                blk = by_key[key] = _Block(key, [], {}, 0)
                self.blocks.append(blk)
            if p.seed not in blk.points:
                blk.seeds.append(p.seed)
                blk.points[p.seed] = {}
            blk.points[p.seed][label(p.params[until.axis])] = p
            self._block_of[p.point_id] = blk
        for blk in self.blocks:
            blk.target = min(start, len(blk.seeds))

    # ---------------------------------------------------------------------------------- rows in

    def add(self, rec: RunRecord) -> None:
        """A counted (valid) row: the point is done, and its block's verdict is recomputed."""
        if not rec.valid or rec.point_id in self.values:
            return
        self.values[rec.point_id] = rec
        blk = self._block_of.get(rec.point_id)
        if blk is not None and self.seq is not None:
            self._judge(blk)

    def give_up(self, point: Point) -> None:
        """A point that will not be run again in this invocation (it kept failing)."""
        self.given_up.add(point.point_id)

    def _judge(self, blk: _Block) -> None:
        assert self.seq is not None
        until = self.seq.until
        base = label(until.baseline)
        labels = [lab for lab in next(iter(blk.points.values()))]
        for lab in labels:
            if lab == base:
                continue
            t_vals: list[float] = []
            b_vals: list[float] = []
            for seed in blk.seeds:
                pts = blk.points[seed]
                t, b = pts.get(lab), pts.get(base)
                if t is None or b is None:
                    continue
                rt, rb = self.values.get(t.point_id), self.values.get(b.point_id)
                if rt is not None and rb is not None:
                    t_vals.append(rt.metric(until.metric))
                    b_vals.append(rb.metric(until.metric))
            if self.seq.design == "group-sequential":
                design = SequentialDesign.planned(
                    self.seq.min, self.seq.max, self.seq.step, 1.0 - until.confidence
                )
                change, verdict = design.decide(t_vals, b_vals, until.half_width_pct)
            else:
                change = paired_change([(t_vals, b_vals)], until.confidence)
                verdict = decide(change, until.half_width_pct, self.seq.min, self.seq.max)
            blk.comparisons[lab] = Comparison(blk.key, lab, base, until.metric, change, verdict)

    # ---------------------------------------------------------------------------------- points out

    def _open(self, p: Point, busy: set[str]) -> bool:
        return p.point_id not in self.values and p.point_id not in busy and p.point_id not in self.given_up

    def next_point(self, busy: set[str]) -> Point | None:
        """The next point to start, not one of ``busy`` (running or queued); None if there is none."""
        if self.seq is None:
            return next((p for p in self.points if self._open(p, busy)), None)
        for blk in self.blocks:
            if blk.final:
                continue
            for seed in blk.seeds[: blk.target]:
                for p in blk.points[seed].values():
                    if self._open(p, busy):
                        return p
        # Every run below the targets is done or running: give the least-seeded undecided block more.
        growable = [b for b in self.blocks if not b.final and b.target < self._limit(b)]
        if not growable:
            return None
        blk = min(growable, key=lambda b: b.target)
        blk.target = min(self._limit(blk), blk.target + self.seq.step)
        return self.next_point(busy)

    def _limit(self, blk: _Block) -> int:
        return len(blk.seeds) if self.seed_cap is None else min(len(blk.seeds), self.seed_cap)

    # ---------------------------------------------------------------------------------- state

    def comparisons(self) -> list[Comparison]:
        return [c for b in self.blocks for c in b.comparisons.values()]

    def block_seeds(self) -> dict[BlockKey, int]:
        """Seeds each block has counted rows for, for every one of its values."""
        out: dict[BlockKey, int] = {}
        for b in self.blocks:
            out[b.key] = sum(all(p.point_id in self.values for p in b.points[s].values()) for s in b.seeds)
        return out

    def stopped(self, point_id: str) -> bool:
        """Will this sweep add no more seeds to the point's block (every comparison in it final)?"""
        blk = self._block_of.get(point_id)
        return blk is not None and blk.final

    def verdict_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.comparisons():
            counts[c.verdict.value] = counts.get(c.verdict.value, 0) + 1
        return counts

    def remaining_estimate(self) -> int:
        """Runs still wanted below the current targets (fixed sweeps: all not done)."""
        if self.seq is None:
            return sum(1 for p in self.points if self._open(p, set()))
        return sum(
            1
            for b in self.blocks
            if not b.final
            for s in b.seeds[: b.target]
            for p in b.points[s].values()
            if self._open(p, set())
        )
