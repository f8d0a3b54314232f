"""The scenario's optional ``tcpctl`` block and what the orchestrator derives from it
(testbed.tcpctl: when the agent / the BPF side run, the congestion control names, router config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import tcpctl
from testbed.run import router_config
from topologies.scenario import ScenarioError, load_scenario

BASE: dict[str, Any] = {
    "name": "t",
    "duration_s": 10,
    "stations": {"count": 3, "placement": {"kind": "line", "spacing_m": 200, "origin": [0, 50]}},
    "field": {"x_m": 600, "y_m": 100},
    "traffic": {"tcp": [{"src": 1, "dst": 3, "cc": "reno"}]},
}


def load(tmp_path: Path, **over: Any) -> Any:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump({**BASE, **over}))
    return load_scenario(p)


def test_default_is_off(tmp_path: Path) -> None:
    sc = load(tmp_path)
    assert sc.tcpctl.enabled is False and sc.tcpctl.controllable_reno and sc.tcpctl.observe_interval_ms == 100
    assert not tcpctl.agent_wanted(sc) and not tcpctl.bpf_wanted(sc)


@pytest.mark.parametrize(
    ("over", "agent", "bpf"),
    [
        ({"tcpctl": {"enabled": True}}, True, True),
        ({"routing": {"protocol": "dsr", "extensions": ["elfn"]}}, True, True),
        ({"routing": {"protocol": "aodv", "extensions": ["proactive_lm"]}}, False, False),
        ({"tcp": {"cc": "vegas"}}, False, True),
        ({"traffic": {"tcp": [{"src": 1, "dst": 3, "cc": "vegas"}]}}, False, True),
    ],
)
def test_when_the_agent_and_bpf_run(tmp_path: Path, over: dict[str, Any], agent: bool, bpf: bool) -> None:
    sc = load(tmp_path, **over)
    assert tcpctl.agent_wanted(sc) is agent
    assert tcpctl.bpf_wanted(sc) is bpf


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"enabled": "yes"}, "tcpctl.enabled"),
        ({"observe_interval_ms": -1}, "tcpctl.observe_interval_ms"),
        ({"observe_interval_ms": 1.5}, "tcpctl.observe_interval_ms"),
        ({"bogus": 1}, "tcpctl.bogus"),
    ],
)
def test_bad_tcpctl_block_names_the_field(tmp_path: Path, block: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as ei:
        load(tmp_path, tcpctl=block)
    assert field in str(ei.value)


def test_cc_names_and_router_config(tmp_path: Path) -> None:
    sc = load(tmp_path, tcpctl={"enabled": True})
    rt = tcpctl.RunTcpCtl(
        "abc123", "/sys/fs/bpf/mtabc123", True, {"vegas": "vegas_abc123", "reno": "mtctl_abc123"}
    )
    assert rt.cc("vegas") == "vegas_abc123" and rt.cc("reno") == "mtctl_abc123" and rt.cc("cubic") == "cubic"
    cfg = router_config(sc, "abc123", 1, 2, Path("/run/manet/abc123"), Path("/r"), {}, rt)
    assert cfg.to_json()["tcpctl"] == {
        "enabled": True,
        "bpf": True,
        "control_socket": "/run/manet/abc123/sta2.tcpctl.sock",
    }
    off = tcpctl.RunTcpCtl("abc123", "/x", False, {"vegas": "vegas_abc123"})
    assert "tcpctl" not in router_config(sc, "abc123", 1, 2, Path("/s"), Path("/r"), {}, off).to_json()
    assert "tcpctl" not in router_config(sc, "abc123", 1, 2, Path("/s"), Path("/r"), {}, None).to_json()
