"""The results directory of one run: ``results/<experiment>/<runid>/`` (docs/orchestrator.md).

Everything is written as soon as it is known (each file atomically: write, then rename), so a run
that is interrupted keeps what it had; ``summary.json`` says ``"complete": false`` until the run
ends normally.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


#: where sweeps keep their rows under version control (experiments/rows.py), relative to the repo
ROWS_DIR = "docs/results/data"
#: What a run never loads: documentation, the reports and the sweeps' rows (under ``ROWS_DIR``).
#: Changes there do not make a revision dirty.
DOCS_DIR = "docs"


def git_revision(repo: Path = ROOT) -> dict[str, Any]:
    """``{"rev": full hash or None, "dirty": tracked files changed (None if unknown)}`` of ``repo``.

    Documentation (``DOCS_DIR``) does not count, nor therefore the sweeps' own rows (``ROWS_DIR``,
    appended as runs complete): otherwise every row of a sweep from a clean checkout but the first
    would call its revision dirty, and so would every run that started while a report was being
    written."""

    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    rev = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){DOCS_DIR}")
    return {"rev": rev, "dirty": bool(status) if status is not None else None}


def tool_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "kernel": os.uname().release}
    try:
        res = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, timeout=5)
        out["iperf3"] = res.stdout.splitlines()[0] if res.stdout else ""
    except OSError:
        out["iperf3"] = "missing"
    return out


class Results:
    """Paths and incremental writes of one run's results."""

    def __init__(self, out_root: str | Path, experiment: str, run_id: str) -> None:
        self.dir = Path(out_root).resolve() / experiment / run_id
        self.dir.mkdir(parents=True, exist_ok=False)
        for sub in ("flows", "nstat", "routers", "medium", "logs"):
            (self.dir / sub).mkdir()
        self.summary: dict[str, Any] = {}

    @property
    def pcaps(self) -> Path:
        p = self.dir / "pcaps"
        p.mkdir(exist_ok=True)
        return p

    def write(self, name: str, data: Any) -> None:
        write_json(self.dir / name, data)

    def save_summary(self) -> None:
        self.summary["updated_at"] = time.time()
        write_json(self.dir / "summary.json", self.summary)
