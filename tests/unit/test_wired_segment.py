"""The wired segment's plan (testbed/wired.py): names under the run's prefix, ports numbered per
switch in link order, and ovs-vsctl always pointed at the run's own database."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodes.core.ipip import WiredRoute
from testbed import wired as wired_mod
from testbed.wired import Port, WiredSegment, choose_backend
from topologies.wired import Wired


def segment(tmp_path: Path) -> WiredSegment:
    w = Wired.model_validate(
        {
            "switches": ["s1", "s2"],
            "hosts": ["h1", "h2"],
            "links": [["h1", "s1"], ["s1", "s2"], ["s2", "h2"]],
            "gateways": [{"station": 3, "switch": "s1"}],
        }
    )
    return WiredSegment(w, "abc123", "mtabc123-ctl", tmp_path, tmp_path, lambda pid, role: None)


def test_names_and_ports(tmp_path: Path) -> None:
    seg = segment(tmp_path)
    assert seg.bridge("s1") == "mtabc123-s1" and seg.namespaces() == ["mtabc123-h1", "mtabc123-h2"]
    assert seg.plan_ports() == [
        Port("s1", "s1-eth1", "h1-eth0", "mtabc123-h1"),
        Port("s1", "s1-eth2", "s2-eth1", None, peer_switch="s2"),
        Port("s2", "s2-eth2", "h2-eth0", "mtabc123-h2"),
        Port("s1", "s1-eth3", "sta3-eth1", "mtabc123-sta3"),
    ]
    assert seg.router_config() == WiredRoute(ipaddress.IPv4Network("10.1.0.0/24"), 3)
    assert all(len(p.inner) <= 15 and len(p.outer) <= 15 for p in seg.plan_ports())


def test_vsctl_uses_the_runs_own_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(wired_mod.subprocess, "run", fake_run)
    seg = segment(tmp_path)
    seg.vsctl("list-br")
    assert calls == [["ovs-vsctl", f"--db=unix:{tmp_path}/ovs/db.sock", "--timeout=15", "list-br"]]


def test_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wired_mod, "ovs_available", lambda: "ovs-vswitchd not installed")
    assert choose_backend("auto") == "bridge" and choose_backend("bridge") == "bridge"
    with pytest.raises(wired_mod.WiredError, match="wired.backend ovs: ovs-vswitchd not installed"):
        choose_backend("ovs")
    monkeypatch.setattr(wired_mod, "ovs_available", lambda: None)
    assert choose_backend("auto") == "ovs"
