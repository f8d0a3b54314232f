"""Mark rows invalid after the fact: runs made with a fault found later.

A fix that changes what a run measures leaves the rows made before it wrong. They are not deleted
(every run paid for stays in the file, ``experiments.rows``): they are marked ``valid = false``
with the reason, and the sweep runs their points again when it resumes. The rows to mark are those
made at a revision that lacks the fix (``--without COMMIT``: ``git merge-base --is-ancestor``), or
named by run id, optionally restricted to points (``--where axis=label``).

Usage: ``python -m experiments.invalidate <experiment> (--without COMMIT | --run-id ID ...)
[--where axis=label ...] --reason TEXT [--data docs/results/data] [--dry-run]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from experiments.rows import DATA_DIR, RowsError, RowStore, RunRecord, axes_of, check_reason


class InvalidateError(Exception):
    """A request that names nothing that can be decided (unknown commit, bad ``--where``)."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which rows to mark: at revisions lacking ``without``, or with one of ``run_ids``; and
    matching every ``where`` (axis -> label)."""

    without: str | None
    run_ids: frozenset[str]
    where: tuple[tuple[str, str], ...]


def has_commit(revision: str, commit: str) -> bool | None:
    """Does ``revision`` contain ``commit`` (is ``commit`` one of its ancestors, or itself)? None
    if git cannot tell: an empty revision, or one this clone does not have. A row's revision is
    ``<hash>`` or ``<hash>-dirty`` (uncommitted changes on top of it: they count as the hash)."""
    rev = revision.removesuffix("-dirty")
    if not rev:
        return None
    r = subprocess.run(
        ["git", "merge-base", "--is-ancestor", commit, rev], capture_output=True, text=True, check=False
    )
    return r.returncode == 0 if r.returncode in (0, 1) else None


def parse_where(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for it in items:
        axis, sep, label = it.partition("=")
        if not sep or not axis:
            raise InvalidateError(f"--where {it!r}: expected axis=label")
        out.append((axis, label))
    return tuple(out)


def selected(records: Sequence[RunRecord], sel: Selection) -> tuple[list[RunRecord], list[RunRecord]]:
    """The valid records ``sel`` names, and those whose revision git cannot compare with
    ``sel.without`` (left as they are, for the user to name by run id)."""
    out: list[RunRecord] = []
    undecided: list[RunRecord] = []
    for rec in records:
        if not rec.valid or any(rec.params.get(a) != v for a, v in sel.where):
            continue
        if rec.run_id in sel.run_ids:
            out.append(rec)
        elif sel.without is not None:
            has = has_commit(rec.revision, sel.without)
            if has is None:
                undecided.append(rec)
            elif not has:
                out.append(rec)
    return out, undecided


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("--without", help="mark rows made at a revision that lacks this commit")
    ap.add_argument("--run-id", action="append", default=[], help="mark this run's row (repeatable)")
    ap.add_argument("--where", action="append", default=[], help="only rows of points with axis=label")
    ap.add_argument("--reason", required=True, help="why (kept in the rows' invalid_reasons)")
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--dry-run", action="store_true", help="list the rows, change nothing")
    a = ap.parse_args(argv)
    if not a.without and not a.run_id:
        ap.error("name the rows: --without COMMIT or --run-id ID")
    store = RowStore(a.experiment, a.data)
    if store.columns() is None:
        print(f"invalidate: no rows file {store.path}", file=sys.stderr)
        return 2
    try:
        check_reason(a.reason, "--reason")
        axes = axes_of(store.columns() or [])
        where = parse_where(a.where)
        for axis, _ in where:
            if axis not in axes:
                raise InvalidateError(
                    f"--where {axis}=...: no such axis in {store.path} (axes: {', '.join(axes)})"
                )
        commit = None
        if a.without:
            r = subprocess.run(
                ["git", "rev-parse", "--verify", f"{a.without}^{{commit}}"], capture_output=True, text=True
            )
            if r.returncode != 0:
                raise InvalidateError(f"--without {a.without!r}: not a commit of this repository")
            commit = r.stdout.strip()
        sel = Selection(commit, frozenset(a.run_id), where)
        loaded = store.load().records
        missing = sorted(set(a.run_id) - {r.run_id for r in loaded if r.valid})
        if missing:
            raise InvalidateError(f"--run-id: no valid row in {store.path} for {', '.join(missing)}")
        recs, undecided = selected(loaded, sel)
        for rec in recs:
            labels = " ".join(f"{k}={v}" for k, v in rec.params.items())
            print(f"  {rec.run_id}  {labels} seed={rec.seed}  revision {rec.revision}")
        for rec in undecided:
            print(
                f"  left valid: {rec.run_id} (revision {rec.revision or 'none'}: git cannot tell; name it with --run-id)"
            )
        if a.dry_run:
            print(f"{len(recs)} row(s) would be marked invalid")
            return 0
        n = store.invalidate([r.run_id for r in recs], a.reason)
    except (InvalidateError, RowsError) as e:
        print(f"invalidate: {e}", file=sys.stderr)
        return 2
    print(f"{n} row(s) of {store.path} marked invalid: {a.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
