"""DSR end to end (issue 3 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium. Skipped unless root and the medium is built (tests/netns/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import run as tbrun

ROOT = Path(__file__).resolve().parents[2]


def scenario(tmp_path: Path, name: str, **body: Any) -> Path:
    sc = {
        "name": name,
        "description": name,
        "seed": 1,
        "radio": {"preset": "ns2-wavelan"},
        "tcp": {"cc": "reno"},
        "routing": {"protocol": "dsr", "extensions": []},
        **body,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(sc))
    return path


def router_counters(run_dir: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for f in sorted((run_dir / "routers").glob("sta*.counters.json")):
        out[int(f.name[3:].split(".")[0])] = json.loads(f.read_text())["counters"]
    return out


def overhead(counters: dict[int, dict[str, Any]]) -> int:
    """Yu 2004's packet overhead: routing packets sent and forwarded, all stations."""
    return sum(int(c["routing_packets"]) for c in counters.values())


def run(path: Path, tmp_path: Path, experiment: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    run_dir = tbrun.run_scenario(str(path), 1, experiment, out_root=str(tmp_path / "results"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True
    return summary, router_counters(run_dir)


LINE = [[0, 50], [200, 50], [400, 50], [600, 50], [800, 50]]


@pytest.mark.netns
def test_chain5_discovers_route_and_carries_tcp(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "dsr-chain5",
        duration_s=15,
        field={"x_m": 1000, "y_m": 1000},
        stations={"count": 5, "positions": LINE},
        mobility={"model": "static"},
        traffic={
            "tcp": [
                {
                    "src": 1,
                    "dst": 5,
                    "start_s": 1,
                    "duration_s": 10,
                    "cc": "reno",
                    "max_window_pkts": 8,
                    "mss": 1460,
                }
            ]
        },
    )
    summary, counters = run(path, tmp_path, "test-dsr-chain5")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert counters[1]["routing_sent"].get("rreq", 0) >= 1
    assert counters[5]["routing_sent"].get("rrep", 0) >= 1
    assert all(counters[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert counters[1]["samples"]["discovery_latency_s"]["n"] >= 1


@pytest.mark.netns
def test_middle_station_leaves_route_error_and_flow_continues(tmp_path: Path) -> None:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s: the link 2 -> 3 (or 3 -> 4) breaks,
    a ROUTE ERROR goes out, the packets are salvaged or the route rediscovered over sta6, and the
    TCP flow goes on through sta6."""
    path = scenario(
        tmp_path,
        "dsr-move",
        duration_s=22,
        field={"x_m": 1000, "y_m": 2000},
        stations={"count": 6, "positions": LINE + [[400, 1900]]},
        mobility={"model": "static"},
        traffic={
            "tcp": [
                {
                    "src": 1,
                    "dst": 5,
                    "start_s": 1,
                    "duration_s": 18,
                    "cc": "reno",
                    "max_window_pkts": 8,
                    "mss": 1460,
                }
            ]
        },
        events=[
            {"t_s": 4, "op": "move", "station": 6, "x": 400, "y": 150},
            {"t_s": 8, "op": "move", "station": 3, "x": 400, "y": 1900},
        ],
    )
    summary, counters = run(path, tmp_path, "test-dsr-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    rerrs = sum(c["routing_sent"].get("rerr", 0) for c in counters.values())
    assert rerrs >= 1
    repaired = sum(c["extra"].get("salvaged", 0) for c in counters.values()) + counters[1][
        "routing_sent"
    ].get("rreq", 0)
    assert repaired >= 2
    assert counters[6]["data_forwarded"] > 0  # the flow continued over the new station


@pytest.mark.netns
@pytest.mark.slow
def test_ghanem_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s, 120 s, one TCP."""
    path = scenario(
        tmp_path,
        "dsr-rwp20",
        duration_s=120,
        field={"x_m": 1000, "y_m": 750},
        stations={"count": 20, "placement": {"kind": "random"}},
        mobility={"model": "random_waypoint", "min_speed_mps": 0, "max_speed_mps": 10, "pause_s": 0},
        traffic={"tcp": [{"src": 1, "dst": 20, "start_s": 1, "duration_s": 117, "cc": "reno", "mss": 1460}]},
    )
    summary, counters = run(path, tmp_path, "test-dsr-rwp20")
    (flow,) = summary["flows"]
    assert flow["throughput_bps"] > 0
    assert "routing_packets" in summary
    assert overhead(counters) > 0
