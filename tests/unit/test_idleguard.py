"""testbed.idleguard: which CPUs get a guard, the opt-in, and one real guard process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import idleguard

ROOT = Path(__file__).resolve().parents[2]


def test_every_allowed_cpu_but_the_boot_cpu_gets_a_guard() -> None:
    assert idleguard.guard_cpus({0, 1}) == [1]
    assert idleguard.guard_cpus({0}) == []
    assert idleguard.guard_cpus([3, 0, 2, 2]) == [2, 3]
    assert idleguard.guard_cpus({1}) == [1]


def test_opt_in_reads_the_environment_and_names_a_bad_value() -> None:
    assert idleguard.enabled({}) is False
    assert idleguard.enabled({"MANET_IDLE_GUARD": "0"}) is False
    assert idleguard.enabled({"MANET_IDLE_GUARD": "1"}) is True
    with pytest.raises(ValueError, match=r"MANET_IDLE_GUARD: 'yes' is neither 0 nor 1"):
        idleguard.enabled({"MANET_IDLE_GUARD": "yes"})


def test_a_guard_is_sched_idle_on_its_cpu_and_dies_with_its_parent() -> None:
    """A real guard under a parent that is then SIGKILLed: the guard is gone (PR_SET_PDEATHSIG)."""
    cpu = max(os.sched_getaffinity(0))
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from testbed import idleguard\n"
            f"g = idleguard.spawn({cpu}, 'mtabcdef-idle')\nprint(g.pid, flush=True)\ntime.sleep(60)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/comm").read_text().strip() != "mtabcdef-idle":
            assert time.monotonic() < deadline, "the guard never named itself"
            time.sleep(0.05)
        while os.sched_getscheduler(pid) != os.SCHED_IDLE:
            assert time.monotonic() < deadline, "the guard never became SCHED_IDLE"
            time.sleep(0.05)
        assert os.sched_getaffinity(pid) == {cpu}
        parent.kill()
        parent.wait(5)
        deadline = time.monotonic() + 5
        while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
            assert time.monotonic() < deadline, "the guard outlived its parent"
            time.sleep(0.05)
    finally:
        parent.kill()


def test_a_cpu_that_does_not_exist_is_named() -> None:
    res = subprocess.run(
        idleguard.command(4095, "mtabcdef-idle"), cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 2
    assert "--cpu 4095" in res.stderr
