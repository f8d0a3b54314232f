"""Idle guard: keep the run's CPUs other than CPU 0 out of their idle task (docs/tcpctl.md).

On the 6.18 kernel of our CI host, code that runs while the idle task of a CPU other than CPU 0
is current is hidden from perf and skips BPF programs. Perf records no ``sched_switch`` from
``swapper/1`` at all, against thousands from ``swapper/0``. TCP's retransmission and RACK timers
expire in whatever task is current. On an idle CPU 1 that is its idle task, so our struct_ops
congestion control's ``.ssthresh`` is skipped when the timer enters Loss, and the kernel takes a
stale value (docs/tcpctl.md, "Out-of-range ssthresh and cwnd"). The run is then invalid. On
2026-11-28, 22 % of a Yu sender's retransmission timer expiries were visible to perf without a
guard (10 of 46). With one, 99 % were visible (83 of 84), all in the guard's context on CPU 1.

A guard is one loop per CPU under ``SCHED_IDLE`` that calls ``sched_yield``. Any other task on that
CPU gets the CPU at once, so the guard takes only the time the CPU would have been idle. Timers
then expire in its context, a normal process. **It has a cost:** it doubled the routers' loop
lag p99 in 100-node runs (docs/benchmarks.md, "Cost of the idle guard"). So it is opt-in (``MANET_IDLE_GUARD=1``) and not used for the sweeps' rows.
On a stock kernel it would only burn power. The run registers each guard's pid, and ``make clean`` removes it after a SIGKILL. Its
name is ``<runid>-idleN``, and it runs in the run's control namespace.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Iterable

IDLE_GUARD_ENV = "MANET_IDLE_GUARD"
"""Set to ``1`` to start the guards with each run (testbed.run)."""
BOOT_CPU = 0
"""The CPU whose idle task (``init_task``) was seen by perf and BPF on this kernel: no guard."""


def enabled(env: dict[str, str] | None = None) -> bool:
    """Whether ``MANET_IDLE_GUARD`` asks for guards (``1``; ``0`` or unset: no)."""
    value = (os.environ if env is None else env).get(IDLE_GUARD_ENV, "0")
    if value not in ("0", "1"):
        raise ValueError(f"environment variable {IDLE_GUARD_ENV}: {value!r} is neither 0 nor 1")
    return value == "1"


def guard_cpus(allowed: Iterable[int]) -> list[int]:
    """The CPUs that need a guard: every allowed CPU except the boot CPU, in order."""
    return sorted(c for c in set(allowed) if c != BOOT_CPU)


def command(cpu: int, name: str) -> list[str]:
    """The guard process for one CPU (this module's ``main``)."""
    return [sys.executable, "-m", "testbed.idleguard", "--cpu", str(cpu), "--name", name]


def spawn(cpu: int, name: str, netns: str | None = None) -> subprocess.Popen[bytes]:
    """Start one guard, in ``netns`` if given (so that clean finds it by namespace too)."""
    argv = command(cpu, name)
    if netns is not None:
        argv = ["ip", "netns", "exec", netns, *argv]
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def main(argv: list[str] | None = None) -> int:
    from testbed.procs import set_comm, set_pdeathsig

    ap = argparse.ArgumentParser(prog="python3 -m testbed.idleguard", description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", type=int, required=True, help="the CPU to keep busy")
    ap.add_argument("--name", required=True, help="process name (15 bytes at most)")
    args = ap.parse_args(argv)
    set_pdeathsig(signal.SIGKILL)  # the runner's death ends the guard; the registry is the backup
    set_comm(args.name)
    try:
        os.sched_setaffinity(0, {args.cpu})
    except OSError as e:
        print(f"testbed.idleguard: --cpu {args.cpu}: {e.strerror}", file=sys.stderr)
        return 2
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    while True:  # hand the CPU to any task that became runnable
        os.sched_yield()


if __name__ == "__main__":
    sys.exit(main())
