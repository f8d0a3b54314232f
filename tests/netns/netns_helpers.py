"""Helpers shared by the protocol netns tests: scenario files written from dicts, one run through
the real testbed, and the routers' counters read back."""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed import run as tbrun
from testbed.registry import Registry
from topologies.layout import trajectories
from topologies.mobility import position_at
from topologies.scenario import load_scenario

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


def check_against_medium(run_dir: Path, summary: dict[str, Any], protocol: str) -> None:
    """The routers' counters against the medium's, station by station: two counts of the same
    frames on either side of the medium socket, so a frame or a status lost between them, a
    routing packet counted but never sent (or sent but not counted) or data sent as a broadcast
    fails here. The MAC does one frame at a time, so one frame may be in flight at the end."""
    medium = json.loads((run_dir / "medium" / "counters.json").read_text())["per_station"]
    broadcasts = 0
    for f in sorted((run_dir / "routers").glob("sta*.counters.json")):
        s = f.name[3:].split(".")[0]
        rec = json.loads(f.read_text())
        c, io, m = rec["counters"], rec["io"], medium[s]
        where = f"sta{s}: router {io} {c['mac']}, medium {m}"
        # every frame the router handed over was taken, and its outcome came back
        assert io["medium_tx"] == m["offered"] + m["rejected"], where
        outcomes = m["acked"] + m["failed"] + m["sent"]
        assert 0 <= m["offered"] - outcomes <= 1, where
        assert abs(c["mac"].get("tx_ok", 0) + c["mac"].get("tx_failed", 0) - outcomes) <= 1, where
        assert abs(c["mac"].get("tx_failed", 0) - m["failed"]) <= 1, where
        # the medium's messages to the router: one per received frame, one per outcome. Frames
        # from several neighbours may sit unread in the router's socket when it stops (ns-2 DSR
        # keeps its request cycles going to the end: 2 and 3 unread at a 20-station run's stop,
        # 2026-12-02); the router never reads more than the medium sent
        lag = m["rx_delivered"] + m["rx_overheard"] + outcomes - io["medium_rx"]
        assert -1 <= lag <= 4, where
        # only routing packets are broadcast: every RREQ sent or forwarded was one of them
        rreqs = c["routing_sent"].get("rreq", 0) + c["routing_forwarded"].get("rreq", 0)
        assert rreqs <= m["sent"] + 1 and m["sent"] <= c["routing_packets"], where
        if protocol == "dsr":  # DSR broadcasts nothing else (ROUTE ERRORs are unicast)
            assert abs(m["sent"] - rreqs) <= 1, where
        broadcasts += m["sent"]
    # the papers' overhead, bounded by the medium's ground truth rather than re-added
    offered = sum(m["offered"] for m in medium.values())
    assert broadcasts <= summary["routing_packets"] <= offered, (
        broadcasts,
        summary["routing_packets"],
        offered,
    )


def check_flow_against_delivery(
    summary: dict[str, Any], counters: dict[int, dict[str, Any]], truth: PathTruth, mss: int = 1460
) -> None:
    """iperf3's own count of the bytes it received against the destination router's count of the
    packets it handed to the kernel (each received byte came in one of them, at most ``mss`` each)
    and against physics: no more than the path's capacity while it existed (:func:`path_truth`)."""
    for flow in summary["flows"]:
        got = int(flow["bytes_received"])
        assert got <= counters[int(flow["dst"])]["data_delivered"] * mss, (flow, counters[int(flow["dst"])])
        assert 8 * got <= truth.max_bits, (flow, truth)


@dataclass(frozen=True, slots=True)
class PathTruth:
    connected_s: float
    """Seconds of the run during which the two stations had a path."""
    max_bits: float
    """What that path could carry at most: the data rate over the hop count (up to 3: the
    transmitters of three consecutive hops are within carrier-sense range of each other)."""


def path_truth(
    path: Path, src: int, dst: int, seed: int, step_s: float = 0.5, slack_m: float = 10.0
) -> PathTruth:
    """The ground truth a flow's throughput is bounded by, from the stations' trajectories
    (topologies.mobility, the ones the medium moves them on) and the radio range, sampled every
    ``step_s``: a path of h hops counts when it exists with ``slack_m`` more range (how far two
    stations at 10 m/s close in during a step), so the bound errs on the large side. The scenario's
    scripted ``events`` (``move``) are not trajectories and are left out: use it where a path
    exists either way (``middle_station_moves``: sta6 arrives before sta3 leaves)."""
    sc = load_scenario(path)
    traj = trajectories(sc, seed)
    reach = sc.nominal_range_m() + slack_m
    connected = bits = 0.0
    for k in range(int(sc.duration_s / step_s)):
        t = k * step_s
        pos = {s: position_at(tr, t) for s, tr in traj.items()}
        hops, frontier = {src: 0}, [src]
        while frontier and dst not in hops:
            nxt = []
            for a in frontier:
                for b in pos:
                    if b not in hops and math.dist(pos[a], pos[b]) <= reach:
                        hops[b] = hops[a] + 1
                        nxt.append(b)
            frontier = nxt
        if dst in hops:
            connected += step_s
            bits += step_s * DATA_RATE_BPS / min(hops[dst], 3)
    return PathTruth(connected, bits)


DATA_RATE_BPS = 2_000_000
"""The ns2-wavelan preset's data rate (medium/src/params.rs ``data_rate_bps``): no flow can receive
faster than one transmitter can send."""


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


def check_rwp20(
    protocol: str, path: Path, run_dir: Path, summary: dict[str, Any], counters: dict[int, dict[str, Any]]
) -> None:
    """A :func:`rwp20` run: discovery happened, routers and medium agree frame by frame, the
    overhead lies within the medium's counts, and the flow received no more than its path's
    capacity while the path existed, and something if it existed for 10 s or more."""
    (flow,) = summary["flows"]
    assert flow["error"] is None
    assert sum(x["routing_sent"].get("rreq", 0) for x in counters.values()) >= 1
    truth = check_ground_truth(protocol, path, run_dir, summary, counters)
    assert flow["bytes_received"] > 0 or truth.connected_s < 10, truth


def check_ground_truth(
    protocol: str, path: Path, run_dir: Path, summary: dict[str, Any], counters: dict[int, dict[str, Any]]
) -> PathTruth:
    """:func:`check_against_medium` and :func:`check_flow_against_delivery` for a run of the
    scenario at ``path`` (seed 1) with one flow; returns the flow's path truth."""
    check_against_medium(run_dir, summary, protocol)
    (flow,) = summary["flows"]
    truth = path_truth(path, int(flow["src"]), int(flow["dst"]), seed=1)
    check_flow_against_delivery(summary, counters, truth)
    return truth


def middle_station_moves(tmp_path: Path, protocol: str, **extra: Any) -> Path:
    """sta6 arrives beside sta3 at 4 s; sta3 leaves at 8 s, in the middle of a sta1 -> sta5 flow
    (tests/unit/test_protocols_positions.py runs the same story in virtual time)."""
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
        **extra,
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
