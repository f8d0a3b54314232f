"""The scenario's ``wired`` block (topologies/wired.py): defaults and errors naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from topologies.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]


def base(**wired: Any) -> dict[str, Any]:
    w = {
        "switches": ["s1"],
        "hosts": ["h1"],
        "links": [["h1", "s1"]],
        "gateways": [{"station": 1, "switch": "s1"}],
    }
    w.update(wired)
    return {
        "name": "w",
        "duration_s": 10,
        "stations": {"count": 3},
        "routing": {"protocol": "dsr"},
        "wired": w,
        "traffic": {"tcp": [{"src": "h1", "dst": 3, "start_s": 1}]},
    }


def load(tmp_path: Path, data: dict[str, Any]) -> Any:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return load_scenario(p)


def errors(tmp_path: Path, data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as exc:
        load(tmp_path, data)
    return list(exc.value.problems)


def test_example_loads_with_defaults() -> None:
    sc = load_scenario(ROOT / "topologies" / "wired-gateway.yaml")
    w = sc.wired
    assert w is not None and str(w.subnet) == "10.1.0.0/24"
    assert str(w.host_ip("h1")) == "10.1.0.1" and str(w.gateway_ip()) == "10.1.0.254"
    assert sc.traffic.tcp[0].src == "h1" and sc.traffic.tcp[0].dst == 4


def test_host_addresses_given_and_counted(tmp_path: Path) -> None:
    sc = load(
        tmp_path, base(hosts=["h1", {"name": "h2", "ip": "10.1.0.20"}], links=[["h1", "s1"], ["h2", "s1"]])
    )
    assert [str(sc.wired.host_ip(h)) for h in ("h1", "h2")] == ["10.1.0.1", "10.1.0.20"]


@pytest.mark.parametrize(
    "change,path,needle",
    [
        ({"subnet": "10.0.5.0/24"}, "wired.subnet", "overlaps the stations' network"),
        ({"links": [["h1", "s9"]]}, "wired.links[0][1]", "no host or switch named 's9'"),
        ({"links": []}, "wired.hosts", "host 'h1' is not linked"),
        (
            {"hosts": ["h1", "h2"], "links": [["h1", "h2"], ["h1", "s1"]]},
            "wired.links[0]",
            "joins a host to a switch",
        ),
        (
            {"gateways": [{"station": 7, "switch": "s1"}]},
            "wired.gateways[0].station",
            "station 7 does not exist",
        ),
        ({"gateways": [{"station": 1, "switch": "s2"}]}, "wired.gateways[0].switch", "no switch named 's2'"),
        ({"gateways": []}, "wired.gateways", "hosts need a gateway"),
        (
            {"gateways": [{"station": 1, "switch": "s1"}, {"station": 2, "switch": "s1"}]},
            "wired.gateways",
            "one gateway station",
        ),
        ({"hosts": [{"name": "h1", "ip": "10.2.0.1"}]}, "wired.hosts[0].ip", "not a host address of subnet"),
        ({"hosts": ["sta1"], "links": [["sta1", "s1"]]}, "wired.hosts[0].name", "reserved"),
        ({"switches": ["s1", "s1"]}, "wired.switches[1].name", "already a switch"),
    ],
)
def test_errors_name_the_field(tmp_path: Path, change: dict[str, Any], path: str, needle: str) -> None:
    problems = errors(tmp_path, base(**change))
    assert any(p == path and needle in r for p, r in problems), problems


def test_flow_to_unknown_host(tmp_path: Path) -> None:
    data = base()
    data["traffic"]["tcp"][0]["src"] = "h7"
    problems = errors(tmp_path, data)
    assert ("traffic.tcp[0].src", "no wired host named 'h7' (wired hosts: h1)") in problems


def test_static_routing_reaches_hosts_through_the_gateway(tmp_path: Path) -> None:
    data = base()
    data["routing"] = {"protocol": "static"}
    data["stations"] = {"count": 3, "placement": {"kind": "line", "spacing_m": 200}}
    assert load(tmp_path, data).wired is not None  # h1 -> 3 via gateway 1: 1-2-3 reachable
    data["stations"]["placement"]["spacing_m"] = 400
    problems = errors(tmp_path, data)
    assert any(p == "traffic.tcp[0]" and "no static route from 1 to 3" in r for p, r in problems), problems
