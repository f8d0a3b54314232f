"""The run registry: ``/run/manet/<runid>/registry.json`` (docs/interfaces.md section 1).

It lists everything a run owns that cleanup cannot find by name: the runner's own pid and every
process it started (medium, zygote, routers, iperf3, tcpdump), each with its ``/proc`` start time,
plus the run's namespaces. It is rewritten atomically (write + rename) whenever something is
added, so a SIGKILL of the runner at any moment leaves a registry that is complete up to the
last process started.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed import procs
from testbed.naming import run_dir


@dataclass
class Registry:
    run_id: str
    path: Path
    runner: dict[str, int | None] = field(default_factory=dict)
    processes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    results_dir: str | None = None
    bpf_pin_dir: str | None = None  # /sys/fs/bpf/mt<runid> when the run loads tcpctl's BPF side
    ovs_dir: str | None = None  # the run's own OVS database and sockets (testbed/wired.py)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def create(cls, run_id: str) -> Registry:
        """Make ``/run/manet/<runid>/`` (0700) with its registry in one step.

        The directory is prepared under a name cleanup ignores and renamed into place, so a
        concurrent ``testbed.clean`` never sees a run directory without its runner's pid.
        """
        final = run_dir(run_id)
        final.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=final.parent))
        os.chmod(tmp, 0o700)
        pid = os.getpid()
        reg = cls(run_id, tmp / "registry.json", runner={"pid": pid, "start_time": procs.start_time(pid)})
        reg.save()
        os.rename(tmp, final)
        reg.path = final / "registry.json"
        return reg

    @classmethod
    def load(cls, path: Path) -> Registry:
        data = json.loads(path.read_text())
        return cls(
            run_id=data["run_id"],
            path=path,
            runner=data.get("runner", {}),
            processes=list(data.get("processes", [])),
            namespaces=list(data.get("namespaces", [])),
            results_dir=data.get("results_dir"),
            bpf_pin_dir=data.get("bpf_pin_dir"),
            ovs_dir=data.get("ovs_dir"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "runner": self.runner,
            "processes": self.processes,
            "namespaces": self.namespaces,
            "results_dir": self.results_dir,
            "bpf_pin_dir": self.bpf_pin_dir,
            "ovs_dir": self.ovs_dir,
        }

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        os.replace(tmp, self.path)

    def add_process(self, pid: int, role: str, netns: str | None = None) -> None:
        with self._lock:
            self.processes.append(
                {"pid": pid, "start_time": procs.start_time(pid), "role": role, "netns": netns}
            )
            self.save()

    def add_processes(self, entries: list[tuple[int, str, str | None]]) -> None:
        with self._lock:
            for pid, role, ns in entries:
                self.processes.append(
                    {"pid": pid, "start_time": procs.start_time(pid), "role": role, "netns": ns}
                )
            self.save()

    def add_namespaces(self, names: list[str]) -> None:
        with self._lock:
            self.namespaces.extend(names)
            self.save()

    def runner_alive(self) -> bool:
        pid = self.runner.get("pid")
        return pid is not None and procs.is_same(int(pid), self.runner.get("start_time"))
