"""The zygote: a fork server that pays the router's import cost once per run.

Started once per run (``python -m testbed.zygote``), it imports the router (``nodes.router.main``)
and every routing protocol module, freezes the heap (``gc.freeze``, so forked children share it
copy-on-write), then answers JSON-line requests on stdin, one reply line each on stdout:

- ``{"op": "spawn", "stations": [{"station": 3, "netns": "mt3fa9c1-sta3", "sysctls": {...},
  "config": {...}, "log": "path"}]}`` -> ``{"ok": true, "pids": [[3, pid, start_time], ...]}``.
  Each child ``setns``-es into ``/run/netns/<netns>``, writes the station's sysctls under
  ``/proc/sys`` (after setns they are the namespace's own), names itself after its namespace,
  and calls ``run(config)`` of the target (``nodes.router.main:run``); its return value is the
  exit code.
- ``{"op": "status"}`` -> ``{"ok": true, "exited": {"pid": status, ...}}`` (children reaped so far).
- ``{"op": "stop", "timeout_s": 2}`` -> SIGTERM to every child, SIGKILL after the timeout, reply,
  exit. End of file on stdin (the runner died) does the same.

Children get PR_SET_PDEATHSIG(SIGTERM): if the zygote is killed, its routers stop and write their
counters.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from testbed import procs
from testbed.naming import NETNS_DIR

Target = Callable[[dict[str, Any]], int]


def load_target(spec: str) -> Target:
    module, _, func = spec.partition(":")
    mod = importlib.import_module(module)
    fn: Target = getattr(mod, func or "run")
    return fn


def preload_protocols() -> None:
    try:
        from nodes.protocols import PROTOCOLS
    except ImportError:
        return
    for mod in PROTOCOLS.values():
        try:
            importlib.import_module(mod)
        except ImportError:
            pass  # not written yet (dsr, aodv); a station asking for it will fail loudly


def write_sysctls(sysctls: dict[str, str]) -> None:
    for key, value in sysctls.items():
        path = "/proc/sys/" + key.replace(".", "/")
        try:
            with open(path, "w") as f:
                f.write(str(value))
        except OSError as exc:
            raise OSError(exc.errno, f"sysctl {key} = {value!r}: {exc.strerror}") from None


def child_main(target: Target, req: dict[str, Any], ctl_fds: tuple[int, ...]) -> int:
    """Runs in the forked child; never returns to the zygote's loop."""
    for fd in ctl_fds:
        os.close(fd)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    procs.set_pdeathsig(signal.SIGTERM)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    log = req.get("log")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    fd = os.open(NETNS_DIR / req["netns"], os.O_RDONLY | os.O_CLOEXEC)
    procs.setns_fd(fd)
    os.close(fd)
    write_sysctls(req.get("sysctls", {}))
    procs.set_comm(req["netns"])
    return int(target(req["config"]) or 0)


class Zygote:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.children: dict[int, int | None] = {}
        self.exited: dict[int, int] = {}

    def spawn(self, req: dict[str, Any]) -> tuple[int, int | None]:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child_main(self.target, req, (0, 1))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        st = procs.start_time(pid)
        self.children[pid] = st
        return pid, st

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.pop(pid, None)
            self.exited[pid] = os.waitstatus_to_exitcode(status)

    def stop(self, timeout_s: float) -> None:
        for pid in list(self.children):
            procs.signal_pid(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.01)
        for pid in list(self.children):
            procs.signal_pid(pid, signal.SIGKILL)
        deadline = time.monotonic() + 2.0
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.01)

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "spawn":
            pids = []
            for item in req["stations"]:
                pid, st = self.spawn(item)
                pids.append([item["station"], pid, st])
            return {"ok": True, "pids": pids}
        if op == "status":
            self.reap()
            return {
                "ok": True,
                "exited": {str(k): v for k, v in self.exited.items()},
                "running": sorted(self.children),
            }
        if op == "stop":
            self.stop(float(req.get("timeout_s", 2.0)))
            return {"ok": True, "exited": {str(k): v for k, v in self.exited.items()}}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def serve(self) -> None:
        buf = b""
        while True:
            r, _, _ = select.select([0], [], [], 0.2)
            self.reap()
            if not r:
                continue
            chunk = os.read(0, 65536)
            if not chunk:  # the runner is gone
                self.stop(2.0)
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    req = json.loads(line)
                    reply = self.handle(req)
                except Exception as exc:  # a bad request must not kill the routers
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                os.write(1, (json.dumps(reply) + "\n").encode())
                if req.get("op") == "stop":
                    return


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.zygote")
    ap.add_argument("--target", default="nodes.router.main:run", help="module:function run in each child")
    ap.add_argument("--name", default="", help="process name of the zygote")
    ap.add_argument(
        "--netns",
        default="",
        help="network namespace to enter first (setns: unlike `ip netns exec` it keeps the host's "
        "/sys, so the routers see the run's BPF pins under /sys/fs/bpf)",
    )
    args = ap.parse_args(argv)
    if args.netns:
        fd = os.open(os.path.join(NETNS_DIR, args.netns), os.O_RDONLY)
        try:
            procs.setns_fd(fd)  # single-threaded here: the whole process moves
        finally:
            os.close(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when we stop
    signal.signal(signal.SIGTERM, _exit_on_signal)
    if args.name:
        procs.set_comm(args.name)
    try:
        target = load_target(args.target)
    except Exception as exc:
        os.write(
            1, (json.dumps({"ok": False, "error": f"cannot import {args.target}: {exc}"}) + "\n").encode()
        )
        return 2
    preload_protocols()
    gc.collect()
    gc.freeze()
    os.write(1, b'{"ok": true, "ready": true}\n')
    zyg = Zygote(target)
    try:
        zyg.serve()
    except SystemExit:
        zyg.stop(2.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
