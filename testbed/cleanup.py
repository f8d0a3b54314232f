"""Teardown of one run, and removal of the leftovers of runs whose runner was killed.

What is ours is found only by

- the registry ``/run/manet/<runid>/registry.json``: pids checked against their recorded
  ``/proc`` start time, so a recycled pid is never signalled, and
- our name prefix: namespaces ``mt<6 hex>-*`` (every process inside one is ours, found by its
  ``/proc/<pid>/ns/net``, like ``ip netns pids``), root-namespace interfaces and nftables tables
  named ``mt<6 hex>...``, BPF pin directories ``/sys/fs/bpf/mt<6 hex>`` and congestion controls
  ``mtctl_<6 hex>`` / ``vegas_<6 hex>`` (tcpctl). A run's Open vSwitch (``ovsdb-server`` and
  ``ovs-vswitchd`` with their own database under ``/run/manet/<runid>/ovs``, bridges
  ``mt<6 hex>-<switch>``) runs in the run's control namespace, so it is found both ways.

Nothing is looked up or killed by process name. A run whose runner is still alive is left alone
unless ``force`` is given.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed import netns, procs
from testbed.naming import RUN_ID_RE, RUN_ROOT, run_dir
from testbed.registry import Registry

OUR_NAME_RE = re.compile(r"^mt[0-9a-f]{6}")


@dataclass
class CleanReport:
    runs: list[str] = field(default_factory=list)
    skipped_live: list[str] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    nft_tables: list[str] = field(default_factory=list)
    bpf: list[str] = field(default_factory=list)
    ovs: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (
            self.runs
            or self.killed
            or self.namespaces
            or self.links
            or self.nft_tables
            or self.bpf
            or self.ovs
        )


def kill_in_namespaces(names: list[str], report: CleanReport, timeout_s: float = 2.0) -> None:
    """SIGTERM then SIGKILL every process living in one of our namespaces ``names``."""
    found = netns.pids_in(names)
    targets = {pid: procs.start_time(pid) for pids in found.values() for pid in pids}
    if targets:
        procs.terminate(targets, timeout_s=timeout_s)
        report.killed.extend(sorted(targets))


def clean_run(
    reg: Registry, report: CleanReport | None = None, *, own_run: bool = False, timeout_s: float = 2.0
) -> CleanReport:
    """Remove everything of the run in ``reg``: processes, namespaces, state directory.

    ``own_run`` is the runner cleaning up after itself (its own pid is then never a target).
    """
    report = report if report is not None else CleanReport()
    runner = reg.runner.get("pid")
    targets: dict[int, int | None] = {}
    for entry in reg.processes:
        pid, st = int(entry["pid"]), entry.get("start_time")
        if own_run and pid == runner:
            continue
        if st is not None and procs.is_same(pid, st):
            targets[pid] = st
    if not own_run and runner is not None and procs.is_same(int(runner), reg.runner.get("start_time")):
        targets[int(runner)] = reg.runner.get("start_time")
    if targets:
        procs.terminate(targets, timeout_s=timeout_s)
        report.killed.extend(sorted(targets))
    names = sorted(set(reg.namespaces) | set(netns.list_ours(reg.run_id)))
    # the run's OVS daemons (testbed/wired.py) are registered processes living in its control
    # namespace: stopped above or here; its bridges and veths go with the namespaces
    kill_in_namespaces(names, report, timeout_s)
    netns.delete(names)
    if reg.ovs_dir is not None:
        shutil.rmtree(reg.ovs_dir, ignore_errors=True)
        if not own_run:
            report.ovs.append(reg.run_id)
    report.namespaces.extend(n for n in names if not netns.exists(n))
    # after the namespaces: their sockets (users of the run's congestion controls) are gone
    from testbed import tcpctl

    if tcpctl.clean_leftovers(set(), [reg.run_id]):
        report.bpf.append(reg.run_id)
    shutil.rmtree(run_dir(reg.run_id), ignore_errors=True)
    report.runs.append(reg.run_id)
    return report


def _root_links() -> list[str]:
    res = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False)
    out = []
    for line in res.stdout.splitlines():
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if OUR_NAME_RE.match(name):
                out.append(name)
    return out


def _nft_tables() -> list[tuple[str, str]]:
    try:
        res = subprocess.run(["nft", "-j", "list", "tables"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return []
    if res.returncode != 0:
        return []
    try:
        data = json.loads(res.stdout)
    except ValueError:
        return []
    out = []
    for item in data.get("nftables", []):
        t = item.get("table")
        if t and OUR_NAME_RE.match(t.get("name", "")):
            out.append((t["family"], t["name"]))
    return out


def _drop_unborn(d: Path) -> None:
    """A run directory still being prepared (``.new-*``): removed once its runner is gone."""
    try:
        reg = Registry.load(d / "registry.json")
    except (FileNotFoundError, ValueError, KeyError):
        if time.time() - d.stat().st_mtime < 60:
            return
    else:
        if reg.runner_alive():
            return
    shutil.rmtree(d, ignore_errors=True)


def clean_leftovers(*, force: bool = False, run_ids: list[str] | None = None) -> CleanReport:
    """Clean every run of ours whose runner is gone (all of ours with ``force``).

    Runs are found from ``/run/manet/*/registry.json`` and from namespace names; a namespace of ours
    without a registry (the runner died before writing it) is cleaned too.
    """
    report = CleanReport()
    regs: dict[str, Registry] = {}
    if RUN_ROOT.is_dir():
        for d in sorted(RUN_ROOT.iterdir()):
            if d.name.startswith(".new-") and d.is_dir():
                _drop_unborn(d)
                continue
            if not RUN_ID_RE.match(d.name):
                continue  # not a run directory of ours
            path = d / "registry.json"
            try:
                regs[d.name] = Registry.load(path)
            except (FileNotFoundError, ValueError, KeyError):
                regs[d.name] = Registry(d.name, path)  # empty: found by namespace prefix only
    for name in netns.list_ours():
        rid = name[2:8]
        regs.setdefault(rid, Registry(rid, run_dir(rid) / "registry.json"))
    live: set[str] = set()
    for rid, reg in sorted(regs.items()):
        if run_ids is not None and rid not in run_ids:
            continue
        if reg.runner_alive() and not force:
            report.skipped_live.append(rid)
            live.add(rid)
            continue
        clean_run(reg, report)
    if run_ids is None:
        for name in _root_links():
            if name[2:8] in live:
                continue
            subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
            report.links.append(name)
        for family, table in _nft_tables():
            if table[2:8] in live:
                continue
            subprocess.run(["nft", "delete", "table", family, table], capture_output=True, check=False)
            report.nft_tables.append(f"{family} {table}")
        from testbed import tcpctl

        report.bpf.extend(tcpctl.clean_leftovers(live))
        from testbed import ccallow

        if ccallow.restore(others_live=bool(live)):
            report.bpf.append("tcp_allowed_congestion_control restored")
    return report


def other_live_runs(own: str | None) -> bool:
    """Whether a run of ours other than ``own`` is live (its runner is alive): host-wide state
    that runs share (testbed/ccallow.py) is put back only when none is."""
    if not RUN_ROOT.is_dir():
        return False
    for d in RUN_ROOT.iterdir():
        if d.name == own or not RUN_ID_RE.match(d.name):
            continue
        try:
            if Registry.load(d / "registry.json").runner_alive():
                return True
        except (FileNotFoundError, ValueError, KeyError):
            continue
    return False


def signal_name(sig: int) -> str:
    return signal.Signals(sig).name
