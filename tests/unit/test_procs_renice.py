"""testbed.procs.renice / router_nice: the routers' scheduling weight (docs/benchmarks.md)."""

from __future__ import annotations

import os
import subprocess

import pytest

from testbed import procs


def test_renice_sets_the_nice_and_names_what_failed() -> None:
    child = subprocess.Popen(["sleep", "30"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        assert procs.renice([child.pid, gone.pid], 7) == [gone.pid]
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == 7
    finally:
        child.kill()
        child.wait()


def test_router_nice_default_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MANET_ROUTER_NICE", raising=False)
    assert procs.router_nice() == procs.ROUTER_NICE_DEFAULT < 0
    monkeypatch.setenv("MANET_ROUTER_NICE", "0")
    assert procs.router_nice() == 0
    monkeypatch.setenv("MANET_ROUTER_NICE", "low")
    with pytest.raises(ValueError, match="MANET_ROUTER_NICE: expected an integer nice value, got 'low'"):
        procs.router_nice()
