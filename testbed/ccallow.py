"""The host's list of congestion controls a network namespace may make its default (issue 45,
item 3; docs/orchestrator.md "TCP profile").

Inside a station, writing ``net.ipv4.tcp_congestion_control`` fails with EPERM unless the control
is on the host's ``net.ipv4.tcp_allowed_congestion_control`` (tcp_set_default_congestion_control():
"Only init netns can set default to a restricted algorithm"); this host allows only reno and bbr.
A run that needs another (cubic) adds it before its stations start. The host's list as it was
is saved once, in ``/run/manet/cc-allowed.orig``, by the first run that changes it; the teardown
of a run that finds no other live run of ours puts it back and removes the file, and so does
``make clean`` (``testbed.clean``). Concurrent runs share the file under an flock.
"""

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
SAVED_NAME: Final = "cc-allowed.orig"
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
            if not saved.exists():
                saved.write_text(" ".join(current) + "\n")
            allowed.write_text(" ".join([*current, *missing]) + "\n")
        return missing


def restore(others_live: bool, allowed: Path = ALLOWED, root: Path = RUN_ROOT) -> bool:
    """Put the saved list back unless another run of ours is live; True if it did."""
    with _locked(root):
        saved = root / SAVED_NAME
        if others_live or not saved.exists():
            return False
        allowed.write_text(saved.read_text())
        saved.unlink()
        return True
