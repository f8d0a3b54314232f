"""Process identity and the registry: a pid is ours only with its recorded start time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import procs
from testbed.registry import Registry


def test_start_time_identifies_a_process() -> None:
    me = os.getpid()
    st = procs.start_time(me)
    assert st is not None
    assert procs.is_same(me, st)
    assert not procs.is_same(me, st + 1)  # a recycled pid has another start time


def test_terminate_only_signals_matching_start_time() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        st = procs.start_time(p.pid)
        assert st is not None
        procs.terminate({p.pid: st + 12345}, timeout_s=0.2)  # wrong start time: left alone
        assert p.poll() is None
        procs.terminate({p.pid: st}, timeout_s=2.0)
        assert p.wait(5) != 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="writes under /run/manet")
def test_registry_round_trip_and_runner_liveness(tmp_path: Path) -> None:
    from testbed.naming import new_run_id, run_dir

    rid = new_run_id()
    reg = Registry.create(rid)
    try:
        assert (run_dir(rid) / "registry.json").exists()
        assert oct(run_dir(rid).stat().st_mode & 0o777) == "0o700"
        reg.add_process(os.getpid(), "test")
        reg.add_namespaces([f"mt{rid}-sta1"])
        back = Registry.load(reg.path)
        assert back.runner["pid"] == os.getpid()
        assert back.processes[0]["start_time"] == procs.start_time(os.getpid())
        assert back.namespaces == [f"mt{rid}-sta1"]
        assert back.runner_alive()
    finally:
        import shutil

        shutil.rmtree(run_dir(rid), ignore_errors=True)
