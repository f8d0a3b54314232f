"""The router's file writer (nodes/router/files.py) and memory lock (nodes/router/memory.py)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from nodes.router import files as files_mod
from nodes.router.files import FileWriter
from nodes.router.loop import EpollLoop
from nodes.router.memory import MCL_CURRENT, MCL_ONFAULT, lock_memory


def locked_kb() -> int | None:
    """``VmLck`` of this process (``/proc/self/status``) in kB, None if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    return None


class _StallingDisk:
    """``write_file`` that waits until ``release`` is set before each write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.real = files_mod.write_file
        monkeypatch.setattr(files_mod, "write_file", self._write)

    def _write(self, path: str, data: bytes, append: bool) -> None:
        self.entered.set()
        self.release.wait(10)
        self.real(path, data, append)


def test_replace_and_append_land_in_order_and_replace_leaves_no_temporary(tmp_path: Path) -> None:
    w = FileWriter()
    w.start()
    log = tmp_path / "trace.bin"
    for i in range(5):
        w.append(str(log), f"{i};".encode())
    w.replace(str(tmp_path / "c.json"), b'{"n": 1}')
    assert w.close(5)
    assert log.read_bytes() == b"0;1;2;3;4;"
    assert json.loads((tmp_path / "c.json").read_text()) == {"n": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "trace.bin"]
    assert w.written == 6 and w.errors == 0


def test_a_stalled_disk_does_not_hold_the_caller_and_keeps_only_the_newest_counters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _StallingDisk(monkeypatch)
    w = FileWriter()
    w.start()
    c = str(tmp_path / "c.json")
    w.append(str(tmp_path / "t.bin"), b"a")  # the thread takes it and stalls
    assert disk.entered.wait(5)
    t0 = time.monotonic()
    for i in range(20):  # 20 seconds' worth of counters while the disk stalls
        w.replace(c, json.dumps({"n": i}).encode())
        w.append(str(tmp_path / "t.bin"), b"b")
    took = time.monotonic() - t0
    assert took < 0.5, took  # coarse: each call only queues
    assert not os.path.exists(c)
    disk.release.set()
    assert w.close(5)
    assert json.loads(Path(c).read_text()) == {"n": 19}
    assert w.coalesced == 19
    assert (tmp_path / "t.bin").read_bytes() == b"a" + b"b" * 20


def test_an_event_loop_keeps_its_timers_while_the_writer_waits_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _StallingDisk(monkeypatch)
    w = FileWriter()
    w.start()
    loop = EpollLoop()
    c = str(tmp_path / "c.json")
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        w.replace(c, json.dumps({"tick": ticks}).encode())  # what the router does every second
        if ticks == 10:
            threading.Timer(0.5, disk.release.set).start()  # the disk comes back after 0.5 s
        if ticks == 60:
            loop.stop(0)
        else:
            loop.call_later(0.01, tick)

    loop.call_later(0.01, tick)
    assert loop.run() == 0
    lag_ms = loop.lag.max_ns / 1e6
    loop.close()
    assert w.close(5)
    assert disk.release.is_set()
    assert lag_ms < 100, lag_ms  # the writer stalled 0.5 s; the loop's timers did not
    assert json.loads(Path(c).read_text()) == {"tick": 60}


def test_writes_are_synchronous_before_start_and_after_close(tmp_path: Path) -> None:
    w = FileWriter()
    p = tmp_path / "c.json"
    w.replace(str(p), b"1")
    assert p.read_bytes() == b"1"  # not started: written at once
    w.start()
    assert w.close(5)
    w.replace(str(p), b"2")
    assert p.read_bytes() == b"2"  # closed: written at once again


def test_a_failed_write_is_counted_not_raised(tmp_path: Path) -> None:
    w = FileWriter()
    w.start()
    w.replace(str(tmp_path / "missing" / "c.json"), b"x")
    w.append(str(tmp_path / "ok.bin"), b"y")
    assert w.close(5)
    assert w.errors == 1 and w.written == 1
    assert (tmp_path / "ok.bin").read_bytes() == b"y"


def test_lock_memory_locks_the_callers_pages_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("mlockall of a whole interpreter needs CAP_IPC_LOCK")
    before = locked_kb()
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child locks, reports VmLck, exits
        os.close(r)
        err = lock_memory(MCL_CURRENT | MCL_ONFAULT)
        os.write(wfd, json.dumps({"err": err, "kb": locked_kb()}).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(r) as f:
        child = json.loads(f.read())
    os.waitpid(pid, 0)
    assert child["err"] is None
    assert child["kb"] is not None and child["kb"] > 1000, child  # the interpreter's pages
    assert locked_kb() == before  # locks are per process


def test_lock_memory_names_the_reason_it_failed() -> None:
    err = lock_memory(0x100)  # no such flag: EINVAL
    assert err is not None and err.startswith("mlockall: "), err
