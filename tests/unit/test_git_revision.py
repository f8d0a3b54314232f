"""testbed.results.git_revision: a sweep's own rows and the docs do not make its revision dirty."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testbed.results import ROWS_DIR, git_revision


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_rows_do_not_dirty_the_revision_but_code_does(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    rows = tmp_path / ROWS_DIR / "x.csv"
    rows.parent.mkdir(parents=True)
    rows.write_text("a\n")
    report = tmp_path / "docs" / "results" / "x.md"
    report.write_text("# x\n")
    code = tmp_path / "code.py"
    code.write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = git_revision(tmp_path)
    assert clean["rev"] and clean["dirty"] is False
    rows.write_text("a\n1\n")  # a sweep appended a row
    assert git_revision(tmp_path)["dirty"] is False
    report.write_text("# x, regenerated\n")  # a report written while the sweep runs
    assert git_revision(tmp_path)["dirty"] is False
    code.write_text("x = 2\n")
    assert git_revision(tmp_path)["dirty"] is True
