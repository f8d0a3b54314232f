"""A station as scripts see it: its namespace, address, and commands run inside it.

Every command is one subprocess under ``ip netns exec <netns>``; its exit code, stdout and stderr
are kept (``CmdResult``). Nothing scrapes a shell prompt.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from testbed.naming import netns_name, station_ip, station_mac, wlan_name


@dataclass(frozen=True, slots=True)
class CmdResult:
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def __str__(self) -> str:
        return self.stdout + self.stderr


Command = str | Sequence[str]


def _argv(command: Command) -> list[str]:
    """A string runs under ``sh -c`` (pipes and redirections work); a sequence runs as is."""
    if isinstance(command, str):
        return ["sh", "-c", command]
    return list(command)


class Station:
    """Station ``staN`` of one run. Made by ``Testbed``; ``on_popen`` registers started pids."""

    def __init__(self, run_id: str, sid: int, on_popen: Callable[[int, str], None] | None = None) -> None:
        self.id = sid
        self.name = f"sta{sid}"
        self.netns = netns_name(run_id, sid)
        self.ip = station_ip(sid)
        self.mac = station_mac(sid)
        self.wlan = wlan_name(sid)
        self.router_pid: int | None = None
        self._on_popen = on_popen

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.ip} netns={self.netns}>"

    def exec_argv(self, command: Command) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *_argv(command)]

    def cmd(
        self, command: Command, timeout: float | None = 60.0, env: dict[str, str] | None = None
    ) -> CmdResult:
        """Run ``command`` in this station; wait for it; return its exit code and output."""
        try:
            res = subprocess.run(
                self.exec_argv(command),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=None if env is None else {**os.environ, **env},
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            return CmdResult(124, out, err + f"\ntimeout after {timeout} s")
        return CmdResult(res.returncode, res.stdout, res.stderr)

    def popen(self, command: Command, role: str = "cmd", **kwargs: object) -> subprocess.Popen[bytes]:
        """Start ``command`` in this station without waiting; the pid is recorded in the registry.

        The process gets its own session, so a Ctrl-C at the terminal reaches only the runner,
        which then stops it in order. ``ip netns exec`` execs the command, so the pid is the
        command's own.
        """
        kwargs.setdefault("start_new_session", True)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        proc: subprocess.Popen[bytes] = subprocess.Popen(self.exec_argv(command), **kwargs)  # type: ignore[call-overload]
        if self._on_popen is not None:
            self._on_popen(proc.pid, f"{role}:{self.name}")
        return proc


class Host(Station):
    """A wired host ``name`` of one run (docs/scenarios.md, ``wired``): namespace
    ``mt<runid>-<name>``, one interface ``<name>-eth0`` (``wlan`` names it, so captures and
    scripts treat a host like a station). Made by ``Testbed``."""

    def __init__(
        self, run_id: str, name: str, ip: str, on_popen: Callable[[int, str], None] | None = None
    ) -> None:
        self.id = 0
        self.name = name
        self.netns = f"mt{run_id}-{name}"
        self.ip = ip
        self.mac = ""
        self.wlan = f"{name}-eth0"
        self.router_pid = None
        self._on_popen = on_popen
