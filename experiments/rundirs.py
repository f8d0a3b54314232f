"""What a sweep keeps in ``results/<experiment>/``: run directories, the point file in each, the index.

Layout (docs/experiments.md):

- ``<run-id>/summary.json`` — written by ``testbed.run``; ``"complete": true`` once the run ended.
- ``<run-id>/sweep-point.json`` — written by the sweep when the run returns: the point id, its
  parameters, overrides and seed. Aggregation and resume find runs by this file, anywhere below the
  experiment folder (so the results of several hosts can be put side by side, ``hosts/<name>/...``).
- ``sweep-index.json`` — point id -> latest run directory and status; rewritten atomically
  (temporary file + ``os.replace``) under an exclusive ``flock`` so that two sweeps of one
  experiment on one host never lose each other's entries.
- ``sweep.yaml`` — the sweep file as given (analysis reads only ``results/``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Final

SUMMARY: Final = "summary.json"
POINT_FILE: Final = "sweep-point.json"
INDEX_FILE: Final = "sweep-index.json"
SWEEP_COPY: Final = "sweep.yaml"


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None if it is missing or not (yet) valid JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_text_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` so that a reader sees the old file or the new one, never half of one
    (temporary file beside it, fsync, ``os.replace``); ``mode``: the new file's permissions
    (default: the temporary file's, 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON so that a reader sees the old file or the new one, never half of one."""
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    data = read_json(run_dir / SUMMARY)
    return data if isinstance(data, dict) else None


def is_complete(run_dir: Path) -> bool:
    """A run counts as done when its ``summary.json`` says ``"complete": true``."""
    summary = read_summary(run_dir)
    return bool(summary and summary.get("complete") is True)


def read_point(run_dir: Path) -> dict[str, Any] | None:
    data = read_json(run_dir / POINT_FILE)
    return data if isinstance(data, dict) and "point_id" in data else None


def find_runs(exp_dir: Path) -> dict[str, list[Path]]:
    """Every run directory below ``exp_dir`` that has a point file, by point id, oldest first."""
    out: dict[str, list[Path]] = {}
    if not exp_dir.is_dir():
        return out
    for pf in exp_dir.rglob(POINT_FILE):
        point = read_point(pf.parent)
        if point is not None:
            out.setdefault(str(point["point_id"]), []).append(pf.parent)
    for dirs in out.values():
        dirs.sort(key=lambda d: ((d / SUMMARY).stat().st_mtime if (d / SUMMARY).exists() else 0.0, str(d)))
    return out


class SweepIndex:
    """``results/<experiment>/sweep-index.json``: point id -> ``{run_dir, status, seed, params, ...}``.

    ``run_dir`` is relative to the experiment folder when inside it. ``status`` is ``complete``,
    ``incomplete`` (the run returned but its summary is not complete) or ``failed`` (the run raised).
    """

    def __init__(self, exp_dir: Path) -> None:
        self.exp_dir = exp_dir
        self.path = exp_dir / INDEX_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.exp_dir.mkdir(parents=True, exist_ok=True)
        with open(self.exp_dir / f".{INDEX_FILE}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def load(self) -> dict[str, dict[str, Any]]:
        data = read_json(self.path)
        if isinstance(data, dict) and isinstance(data.get("points"), dict):
            return dict(data["points"])
        return {}

    def update(self, point_id: str, entry: dict[str, Any]) -> None:
        """Set one point's entry (read-modify-write under the lock, written atomically)."""
        with self._locked():
            points = self.load()
            points[point_id] = {**entry, "updated_at": time.time()}
            write_json_atomic(self.path, {"version": 1, "points": points})

    def rel(self, run_dir: Path) -> str:
        try:
            return str(run_dir.resolve().relative_to(self.exp_dir.resolve()))
        except ValueError:
            return str(run_dir.resolve())

    def resolve(self, entry: dict[str, Any]) -> Path | None:
        rd = entry.get("run_dir")
        if not rd:
            return None
        p = Path(rd)
        return p if p.is_absolute() else self.exp_dir / p


def valid_runs(
    exp_dir: Path, invalid: Collection[str] = ()
) -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
    """(run directory, summary, point) of the newest complete and valid run of each point found on
    disk: the runs an analysis of this host's run directories may use (experiments.digest,
    experiments.prefix). ``invalid``: run ids marked invalid after the fact (their rows in git,
    ``experiments.invalidate``), whose folders still say valid."""
    for dirs in find_runs(exp_dir).values():
        for run_dir in reversed(dirs):
            if run_dir.name in invalid:
                continue
            summary, point = read_summary(run_dir), read_point(run_dir)
            if summary is not None and point is not None and summary.get("complete") and summary.get("valid"):
                yield run_dir, summary, point
                break


def completed_runs(exp_dir: Path) -> dict[str, Path]:
    """Point id -> the run directory that completed it: the index's run if complete, else the
    newest complete run found on disk (e.g. collected from another host)."""
    index = SweepIndex(exp_dir)
    out: dict[str, Path] = {}
    for pid, dirs in find_runs(exp_dir).items():
        done = [d for d in dirs if is_complete(d)]
        if done:
            out[pid] = done[-1]
    for pid, entry in index.load().items():
        rd = index.resolve(entry)
        if rd is not None and is_complete(rd) and read_point(rd) is not None:
            out[pid] = rd
    return out
