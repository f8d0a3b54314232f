"""The host's list of congestion controls a network namespace may make its default (issue 45,
item 3; docs/orchestrator.md "TCP profile").

Inside a station, writing ``net.ipv4.tcp_congestion_control`` fails with EPERM unless the control
is on the host's ``net.ipv4.tcp_allowed_congestion_control`` (tcp_set_default_congestion_control():
"Only init netns can set default to a restricted algorithm"); this host allows only reno and bbr.
A run that needs another (cubic) adds it before its stations start, and records the names it
added in ``/run/manet/cc-allowed.added``; the teardown of a run that finds no other live run of
ours takes exactly those names off the list as it is then, and removes the file, and so does
``make clean`` (``testbed.clean``). Concurrent runs share the file under an flock.

Not a snapshot of the whole list: a run's BPF congestion controls (``mtctl_<run>``, registered
unrestricted) are on the list while the run lives, so a snapshot taken beside one names a control
that is gone by the time it is written back, and the kernel refuses the whole write with ENOENT
(2026-12-02: 2 of 12 Ghanem runs failed in their teardown beside a Liu sweep)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from testbed.naming import RUN_ROOT

ALLOWED: Final = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
AVAILABLE: Final = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
SAVED_NAME: Final = "cc-allowed.added"
LOCK_NAME: Final = "cc-allowed.lock"


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_allowed(ccs: Iterable[str], allowed: Path = ALLOWED, root: Path = RUN_ROOT) -> list[str]:
    """Put each of ``ccs`` (kernel names) on the host's allowed list; returns those added."""
    with _locked(root):
        current = allowed.read_text().split()
        missing = [cc for cc in dict.fromkeys(ccs) if cc not in current]
        if missing:
            saved = root / SAVED_NAME
            before = saved.read_text().split() if saved.exists() else []
            saved.write_text(" ".join(dict.fromkeys([*before, *missing])) + "\n")
            allowed.write_text(" ".join([*current, *missing]) + "\n")
        return missing


def restore(others_live: bool, allowed: Path = ALLOWED, root: Path = RUN_ROOT) -> bool:
    """Take the names our runs added off the list, unless another run of ours is live; True if
    it did. A write the kernel refuses (a control unregistered meanwhile) leaves the record for
    the next teardown or ``make clean``: a teardown never fails on it."""
    with _locked(root):
        saved = root / SAVED_NAME
        if others_live or not saved.exists():
            return False
        added = set(saved.read_text().split())
        try:
            keep = [cc for cc in allowed.read_text().split() if cc not in added]
            allowed.write_text(" ".join(keep) + "\n")
        except OSError:
            return False
        saved.unlink()
        return True
