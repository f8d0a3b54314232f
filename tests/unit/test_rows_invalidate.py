"""Rows marked invalid after the fact (experiments.rows RowStore.invalidate,
experiments.invalidate): the row stays, valid=false with the reason, its check recomputed; rows
chosen by run id or by a revision lacking a fix (real git), restricted by point labels."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from experiments import invalidate as inv
from experiments.rows import RowsError, RowStore, RunRecord


def _record(run_id: str, seed: int, speed: str, revision: str = "abc") -> RunRecord:
    return RunRecord(
        experiment="exp",
        point_id=f"p{speed}-{seed}",
        index=seed,
        params={"speed": speed},
        seed=seed,
        attempt=1,
        valid=True,
        invalid_reasons=(),
        metrics={"tput": 5.0 + seed},
        signals={"medium_lag_p99_ms": 0.3},
        flows=(),
        duration_s=600.0,
        wall_s=610.0,
        run_id=run_id,
        revision=revision,
        host="vm",
        finished_at="2026-11-26T07:00:00Z",
    )


def _store(tmp_path: Path, recs: list[RunRecord]) -> RowStore:
    store = RowStore("exp", tmp_path)
    for r in recs:
        store.append(r, ["speed"], ["tput"])
    return store


def test_invalidate_marks_named_valid_rows_and_keeps_the_others(tmp_path: Path) -> None:
    already = dataclasses.replace(_record("r3", 3, "10"), valid=False, invalid_reasons=("lag 300 ms",))
    store = _store(tmp_path, [_record("r1", 1, "10"), _record("r2", 2, "10"), already])
    before = store.path.read_text().splitlines()
    assert store.invalidate(["r1", "r3", "nope"], "agent before the fix") == 1  # r3 was invalid already
    after = store.path.read_text().splitlines()
    assert after[0] == before[0] and after[2:] == before[2:]  # other rows byte for byte
    recs = {r.run_id: r for r in store.load().records}  # r1's check was recomputed: it loads
    assert not recs["r1"].valid and recs["r1"].invalid_reasons == ("agent before the fix",)
    assert recs["r1"].metrics["tput"] == 6.0 and recs["r2"].valid
    assert recs["r3"].invalid_reasons == ("lag 300 ms",)
    assert store.invalid_run_ids() == {"r1", "r3"}
    assert RowStore("absent", tmp_path).invalid_run_ids() == frozenset()
    for bad in ("a; b", "two\rlines", " "):
        with pytest.raises(RowsError, match="one printable line"):
            store.invalidate(["r2"], bad)


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_rows_of_revisions_lacking_a_fix_are_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    revs = []
    for i in range(3):
        (repo / "f").write_text(str(i))
        _git(repo, "add", "f")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"c{i}")
        revs.append(_git(repo, "rev-parse", "HEAD")[:12])
    monkeypatch.chdir(repo)
    assert not inv.has_commit(revs[0], revs[1]) and inv.has_commit(revs[2], revs[1])
    assert inv.has_commit(f"{revs[2]}-dirty", revs[1])  # uncommitted changes on top of a revision
    assert inv.has_commit("", revs[1]) is None and inv.has_commit("0123456789ab", revs[1]) is None
    data = tmp_path / "data"
    store = _store(
        data,
        [
            _record("a", 1, "10", revs[0]),
            _record("b", 1, "20", revs[0]),
            _record("c", 2, "10", revs[2]),
            _record("d", 3, "10", f"{revs[0]}-dirty"),
            _record("e", 4, "10", ""),  # git cannot tell: left valid
        ],
    )
    fix = revs[1]
    args = ["exp", "--reason", "x", "--data", str(data)]
    assert inv.main([*args, "--without", fix, "--where", "speed=10"]) == 0
    valid = {r.run_id: r.valid for r in store.load().records}
    assert valid == {"a": False, "b": True, "c": True, "d": False, "e": True}
    # refused, nothing changed: an unknown commit, axis or run id, a bad reason
    assert inv.main([*args, "--without", "deadbeef"]) == 2
    assert inv.main([*args, "--without", fix, "--where", "sped=20"]) == 2
    assert inv.main([*args, "--run-id", "zz"]) == 2
    assert inv.main(["exp", "--reason", "a; b", "--data", str(data), "--run-id", "b", "--dry-run"]) == 2
    assert {r.run_id: r.valid for r in store.load().records} == valid
    with pytest.raises(inv.InvalidateError, match="axis=label"):
        inv.parse_where(["speed"])
