"""Helpers shared by the protocol netns tests: scenario files written from dicts, one run through
the real testbed, and the routers' counters read back."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from testbed import run as tbrun
from testbed.registry import Registry

LINE = [[0, 50], [200, 50], [400, 50], [600, 50], [800, 50]]
"""Five stations 200 m apart: with the 250 m ns-2 WaveLAN range each hears only its neighbours."""


def tcp(src: int, dst: int, start_s: float, duration_s: float, **extra: Any) -> dict[str, Any]:
    """A Reno flow with the papers' 1460-byte MSS and (by default) an 8-packet window."""
    flow: dict[str, Any] = {
        "src": src,
        "dst": dst,
        "start_s": start_s,
        "duration_s": duration_s,
        "cc": "reno",
        "mss": 1460,
        "max_window_pkts": 8,
    }
    flow.update(extra)
    return flow


def scenario(
    tmp_path: Path, name: str, protocol: str, params: dict[str, Any] | None = None, **body: Any
) -> Path:
    sc = {
        "name": name,
        "description": name,
        "seed": 1,
        "radio": {"preset": "ns2-wavelan"},
        "tcp": {"cc": "reno"},
        "routing": {"protocol": protocol, "params": params or {}, "extensions": []},
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
    """The papers' packet overhead: routing packets sent and forwarded, all stations."""
    return sum(int(c["routing_packets"]) for c in counters.values())


def run(
    path: Path, tmp_path: Path, experiment: str
) -> tuple[Path, dict[str, Any], dict[int, dict[str, Any]]]:
    run_dir = tbrun.run_scenario(str(path), 1, experiment, out_root=str(tmp_path / "results"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True
    return run_dir, summary, router_counters(run_dir)


def rwp20(tmp_path: Path, protocol: str) -> Path:
    """Ghanem 2008's setup: 20 stations, 1000 x 750 m, random waypoint up to 10 m/s, 120 s, one
    TCP flow."""
    return scenario(
        tmp_path,
        f"{protocol}-rwp20",
        protocol,
        duration_s=120,
        field={"x_m": 1000, "y_m": 750},
        stations={"count": 20, "placement": {"kind": "random"}},
        mobility={"model": "random_waypoint", "min_speed_mps": 0, "max_speed_mps": 10, "pause_s": 0},
        traffic={"tcp": [tcp(1, 20, 1, 117, max_window_pkts=None)]},
    )


def middle_station_moves(tmp_path: Path, protocol: str) -> Path:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s, in the middle of a sta1 -> sta5 flow."""
    return scenario(
        tmp_path,
        f"{protocol}-move",
        protocol,
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


def medium_pid(tb: tbrun.Testbed) -> int:
    """The medium's pid as the run's registry records it (what `make clean` would find)."""
    assert tb.registry is not None
    reg = Registry.load(tb.registry.path)
    pids = [p["pid"] for p in reg.processes if p["role"] == "medium"]
    assert len(pids) == 1, reg.processes
    return int(pids[0])


def stall_medium(pid: int, at_s: float, stall_s: float, tb: tbrun.Testbed) -> threading.Thread:
    """SIGSTOP the medium at run time ``at_s`` for ``stall_s``, then SIGCONT (in a thread)."""

    def go() -> None:
        while tb.now_s() < at_s:
            time.sleep(0.02)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(stall_s)
        finally:
            os.kill(pid, signal.SIGCONT)

    th = threading.Thread(target=go, daemon=True)
    th.start()
    return th
