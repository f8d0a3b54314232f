"""AODV end to end (issue 4 "done means"): real namespaces, real kernel TCP (iperf3), the real
medium, the AODV core in every station's router. Skipped unless root and the medium is built
(tests/netns/conftest.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import run as tbrun

LINE = [[0, 50], [200, 50], [400, 50], [600, 50], [800, 50]]
"""Five stations 200 m apart: with the 250 m ns-2 WaveLAN range each hears only its neighbours."""


def tcp(src: int, dst: int, start_s: float, duration_s: float) -> dict[str, Any]:
    return {
        "src": src,
        "dst": dst,
        "start_s": start_s,
        "duration_s": duration_s,
        "cc": "reno",
        "mss": 1460,
        "max_window_pkts": 8,
    }


def scenario(tmp_path: Path, name: str, params: dict[str, Any] | None = None, **body: Any) -> Path:
    sc = {
        "name": name,
        "description": name,
        "seed": 1,
        "radio": {"preset": "ns2-wavelan"},
        "tcp": {"cc": "reno"},
        "routing": {"protocol": "aodv", "params": params or {}, "extensions": []},
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


def run(
    path: Path, tmp_path: Path, experiment: str
) -> tuple[Path, dict[str, Any], dict[int, dict[str, Any]]]:
    run_dir = tbrun.run_scenario(str(path), 1, experiment, out_root=str(tmp_path / "results"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True
    return run_dir, summary, router_counters(run_dir)


@pytest.mark.netns
def test_chain5_carries_tcp(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "aodv-chain5",
        duration_s=14,
        field={"x_m": 1000, "y_m": 1000},
        stations={"count": 5, "positions": LINE},
        mobility={"model": "static"},
        traffic={"tcp": [tcp(1, 5, 1, 10)]},
        capture={"pcap": True, "stations": [3]},
    )
    run_dir, summary, c = run(path, tmp_path, "test-aodv-chain5")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    assert c[1]["routing_sent"].get("rreq", 0) >= 1  # discovery by expanding ring
    assert c[5]["routing_sent"].get("rrep", 0) >= 1  # answered by the destination
    assert all(c[s]["data_forwarded"] > 0 for s in (2, 3, 4))
    assert c[1]["samples"]["discovery_latency_s"]["n"] >= 1
    assert all(not c[s]["malformed"] for s in c)
    # the middle station's radiotap capture: tshark decodes its AODV frames and sees the TCP flow
    pcaps = sorted(run_dir.rglob("*.pcap*"))
    assert pcaps, "no capture written"

    def tshark(display_filter: str, field: str) -> list[str]:
        out = subprocess.run(
            ["tshark", "-r", str(pcaps[0]), "-Y", display_filter, "-T", "fields", "-e", field],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return out.stdout.split()

    assert set(tshark("aodv", "aodv.type")) >= {"1", "2"}  # RREQ and RREP
    assert len(tshark("tcp", "tcp.srcport")) > 100


@pytest.mark.netns
def test_middle_station_moves_away_rerr_new_route_flow_continues(tmp_path: Path) -> None:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s: the MAC reports the broken link, the
    upstream node sends a RERR, sta1 rediscovers (over sta6) and the TCP flow goes on."""
    path = scenario(
        tmp_path,
        "aodv-move",
        duration_s=22,
        field={"x_m": 1000, "y_m": 2000},
        stations={"count": 6, "positions": LINE + [[400, 1900]]},
        mobility={"model": "static"},
        traffic={"tcp": [tcp(1, 5, 1, 18)]},
        events=[
            {"t_s": 4, "op": "move", "station": 6, "x": 400, "y": 150},
            {"t_s": 8, "op": "move", "station": 3, "x": 400, "y": 1900},
        ],
    )
    _, summary, c = run(path, tmp_path, "test-aodv-move")
    (flow,) = summary["flows"]
    assert flow["error"] is None and flow["throughput_bps"] > 0
    rerr = sum(x["routing_sent"].get("rerr", 0) for x in c.values())
    assert rerr >= 1, "a broken link produces a ROUTE ERROR"
    assert sum(x["extra"].get("aodv_link_breaks", 0) for x in c.values()) >= 1
    # the first route and a new one: either end may rediscover (sta5's RREQ for its ACKs also
    # gives sta1 a reverse route, RFC 3561 section 6.5), so count both ends' discoveries
    discoveries = sum(c[s]["samples"].get("discovery_latency_s", {}).get("n", 0) for s in (1, 5))
    assert discoveries >= 2
    assert c[6]["data_forwarded"] > 0  # the flow continued over the new station


@pytest.mark.netns
@pytest.mark.slow
def test_random_waypoint_20_stations(tmp_path: Path) -> None:
    """Ghanem 2008 setup with AODV: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s,
    120 s, one TCP flow: it completes with throughput above zero and the overhead is reported."""
    path = scenario(
        tmp_path,
        "aodv-rwp20",
        duration_s=120,
        field={"x_m": 1000, "y_m": 750},
        stations={"count": 20, "placement": {"kind": "random"}},
        mobility={"model": "random_waypoint", "min_speed_mps": 0, "max_speed_mps": 10, "pause_s": 0},
        traffic={"tcp": [{"src": 1, "dst": 20, "start_s": 1, "duration_s": 117, "cc": "reno", "mss": 1460}]},
    )
    _, summary, c = run(path, tmp_path, "test-aodv-rwp20")
    (flow,) = summary["flows"]
    assert flow["throughput_bps"] > 0
    assert "routing_packets" in summary
    overhead = sum(int(x["routing_packets"]) for x in c.values())
    assert overhead > 0
    assert sum(x["routing_sent"].get("rreq", 0) for x in c.values()) >= 1
