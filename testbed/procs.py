"""Processes we own: identified by pid *and* start time, so a recycled pid is never killed.

Nothing here finds a process by name. A pid is ours when the registry says so and its
``/proc/<pid>/stat`` start time still matches, or when it runs inside one of our namespaces.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks since boot), or None if the pid is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rindex(b")") + 2 :].split()
    return int(rest[19])


def cpu_time_ns(pid: int) -> int | None:
    """CPU time (user + system, every thread) ``pid`` has used so far, in ns, or None if it is gone.

    ``clock_getcpuclockid(3)``: the scheduler's exact run time, not ``/proc/<pid>/stat``'s
    utime + stime, which are sampled at clock ticks (10 ms here): summed over many mostly idle
    processes, those swing by several percent of a core from one 10 s window to the next.
    """
    clock = ctypes.c_int()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        return None
    try:
        return time.clock_gettime_ns(clock.value)
    except OSError:  # exited in between
        return None


ROUTER_NICE_DEFAULT = -10
"""Nice value of a run's routers (setpriority(2)). The medium already runs SCHED_FIFO
(testbed/medium.py); the routers are many CFS processes whose event loops must wake on time. In
sweeps at ``--parallel auto`` whole runs went invalid together (every router of a run at loop lag
p99 >= 100 ms, max 200-400 ms, docs/benchmarks.md "Sweep capacity") while other runs started up
or wrote their results: at -10 a router outweighs a nice-0 process about 9:1 (CFS weights 9548
and 1024), so set-up, post-processing and other jobs no longer stall live routers; routers of
concurrent runs share alike. Override with MANET_ROUTER_NICE (0: leave them as they are)."""


def router_nice() -> int:
    """The nice value for routers: ``MANET_ROUTER_NICE`` or ROUTER_NICE_DEFAULT."""
    raw = os.environ.get("MANET_ROUTER_NICE")
    if raw is None:
        return ROUTER_NICE_DEFAULT
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"MANET_ROUTER_NICE: expected an integer nice value, got {raw!r}") from None


def renice(pids: list[int], nice: int) -> list[int]:
    """Set ``nice`` on each pid (processes, not their later children); the pids that failed
    (gone, or not permitted) are returned, so that the caller can say so."""
    failed = []
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
        except OSError:
            failed.append(pid)
    return failed


def is_same(pid: int, started: int | None) -> bool:
    """True when ``pid`` is alive, not a zombie, and started at ``started``."""
    st = start_time(pid)
    if st is None or (started is not None and st != started):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes()
        state = state[state.rindex(b")") + 2 :].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != b"Z"


def signal_pid(pid: int, sig: int, started: int | None = None) -> bool:
    if started is not None and not is_same(pid, started):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def terminate(pids: dict[int, int | None], timeout_s: float = 2.0) -> None:
    """SIGTERM every ``pid -> start_time``, wait up to ``timeout_s``, then SIGKILL the rest.

    A zombie counts as gone; reaping is left to the process's parent (a ``Popen`` keeps its exit
    status that way).
    """
    alive = {p: s for p, s in pids.items() if signal_pid(p, signal.SIGTERM, s)}
    deadline = time.monotonic() + timeout_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = {p: s for p, s in alive.items() if is_same(p, s)}
    for p, s in alive.items():
        signal_pid(p, signal.SIGKILL, s)
    deadline = time.monotonic() + 2.0
    while alive and time.monotonic() < deadline:
        alive = {p: s for p, s in alive.items() if is_same(p, s)}
        if alive:
            time.sleep(0.02)


def setns_fd(fd: int) -> None:
    """Move the calling thread into the network namespace open at ``fd``."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def set_comm(name: str) -> None:
    """Set the process name shown by ps (PR_SET_NAME, 15 bytes at most)."""
    PR_SET_NAME = 15
    _libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def set_pdeathsig(sig: int) -> None:
    PR_SET_PDEATHSIG = 1
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
