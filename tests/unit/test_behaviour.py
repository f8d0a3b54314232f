"""Behaviour keys (issue 48, item 5): which edits change a sweep's key, the key of a revision equals
the working tree's at that revision, rows of another key are not pooled, and a key that changes
under a running sweep drains it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from experiments import behaviour as bh
from experiments import sweep as sw
from experiments.rows import RowStore
from experiments.spec import expand
from tests.unit.test_sweep import FakeRun, make_sweep

DSR = '{"variants": {"x": {"a": {"routing.protocol": "dsr", "routing.extensions": ["elfn"]}}}}'
AODV = '{"variants": {"x": {"a": {"routing.protocol": "aodv"}}}}'


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def _write(root: Path, path: str, text: str) -> None:
    f = root / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for path, text in {
        "nodes/core/runtime.py": "x = 1\n",
        "nodes/protocols/dsr/core.py": "d = 1\n",
        "nodes/protocols/aodv/protocol.py": "a = 1\n",
        "nodes/extensions/elfn.py": "e = 1\n",
        "nodes/extensions/atcp.py": "t = 1\n",
        "testbed/run.py": "r = 1\n",
        "testbed/explain.py": "analysis = 1\n",
        "docs/dsr.md": "# DSR\n",
        "topologies/base.yaml": "name: base\nduration_s: 10\n",
        "topologies/s.yaml": "extends: base.yaml\nname: s\n",
        "topologies/other.yaml": "name: other\n",
    }.items():
        _write(tmp_path, path, text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "one", "--allow-empty")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "two")
    return tmp_path


def _keys(root: Path) -> tuple[str, str]:
    return bh.behaviour_key(DSR, "topologies/s.yaml", root), bh.behaviour_key(AODV, "topologies/s.yaml", root)


def _commit(root: Path) -> str:
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "edit")
    return _git(root, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    ("path", "dsr_changes", "aodv_changes"),
    [
        ("nodes/core/runtime.py", True, True),  # every run executes the core
        ("testbed/run.py", True, True),
        ("topologies/base.yaml", True, True),  # in the scenario's extends chain
        ("nodes/protocols/aodv/protocol.py", False, True),  # only the protocol the sweep names
        ("nodes/extensions/elfn.py", True, False),  # only the extensions the sweep names
        ("nodes/extensions/atcp.py", False, False),
        ("testbed/explain.py", False, False),  # post-run analysis
        ("docs/dsr.md", False, False),
        ("topologies/other.yaml", False, False),  # another scenario
    ],
)
def test_which_edits_change_the_key(repo: Path, path: str, dsr_changes: bool, aodv_changes: bool) -> None:
    before = _keys(repo)
    head = _git(repo, "rev-parse", "HEAD")
    assert bh.behaviour_key(DSR, "topologies/s.yaml", repo, head) == before[0]  # revision == working tree
    (repo / path).write_text((repo / path).read_text() + "# edited\n")
    after = _keys(repo)
    assert (after[0] != before[0], after[1] != before[1]) == (dsr_changes, aodv_changes)
    rev = _commit(repo)
    assert bh.behaviour_key(DSR, "topologies/s.yaml", repo, rev) == after[0]
    assert bh.behaviour_key(DSR, "topologies/s.yaml", repo, head) == before[0]  # history is exact


def test_named_in_reads_words_only() -> None:
    assert bh.named_in('{"routing.extensions": ["epln", "bead"], "routing.protocol": "dsr"}') == (
        ["dsr"],
        ["bead", "epln"],
    )
    assert bh.named_in("dsr_update_table") == ([], [])  # a variant label is not the extension dsr_update


def test_git_blob_id_is_gits(repo: Path) -> None:
    data = (repo / "testbed/run.py").read_bytes()
    assert bh.git_blob_id(data) == _git(repo, "hash-object", "testbed/run.py")


def test_rows_of_another_key_are_not_pooled_and_a_changed_key_drains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = make_sweep()
    points = expand(sweep)
    data = tmp_path / "data"
    monkeypatch.setattr(sw, "sweep_key", lambda *a, **k: "aaaaaaaaaaaa")
    monkeypatch.setattr(sw, "run_key", lambda *a, **k: "aaaaaaaaaaaa")
    first = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=FakeRun(), parallel=2)
    assert first.ran == len(points)
    assert {r.behaviour for r in RowStore(sweep.experiment, data).load().records} == {"aaaaaaaaaaaa"}

    # the code changed: every point runs again, and the earlier rows are named, not pooled
    monkeypatch.setattr(sw, "sweep_key", lambda *a, **k: "bbbbbbbbbbbb")
    monkeypatch.setattr(sw, "run_key", lambda *a, **k: "bbbbbbbbbbbb")
    notes: list[str] = []

    class Notes(sw._NoProgress):
        def note(self, text: str) -> None:
            notes.append(text)

    again = FakeRun()
    second = sw.run_points(
        sweep, points, out_root=tmp_path, data_dir=data, run_fn=again, parallel=2, progress=Notes()
    )
    assert second.skipped == 0 and len(again.calls) == len(points)
    assert any(n.startswith(f"not pooled: {len(points)} valid rows ran other code") for n in notes), notes

    # ... and changes again under the running sweep: the first row with another key drains it
    monkeypatch.setattr(sw, "sweep_key", lambda *a, **k: "cccccccccccc")
    monkeypatch.setattr(sw, "run_key", lambda *a, **k: "dddddddddddd")
    sw.DRAIN.clear()
    try:
        third = sw.run_points(sweep, points, out_root=tmp_path, data_dir=data, run_fn=FakeRun(), parallel=1)
    finally:
        sw.DRAIN.clear()
    assert third.drained and third.ran == 1
