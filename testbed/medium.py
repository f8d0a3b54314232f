"""The medium process of a run: its config (docs/interfaces.md section 3) and control socket.

The orchestrator writes ``/run/manet/<runid>/medium.json``, starts
``medium/target/release/manet-medium --config FILE`` and talks to it over the control socket
(JSON lines, one request and one reply per line, section 2).
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

from topologies.layout import trajectories
from topologies.mobility import Trajectory
from topologies.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
MEDIUM_RT_PRIORITY_DEFAULT = 10
"""SCHED_FIFO priority of the medium (docs/medium.md: keeps the scheduling lag p99 under 1 ms on a
loaded 2-core machine). Override with MANET_MEDIUM_RT_PRIORITY; 0 runs it as a normal process."""


def medium_rt_args() -> list[str]:
    """Command-line arguments that give the medium its real-time priority."""
    prio = int(os.environ.get("MANET_MEDIUM_RT_PRIORITY", MEDIUM_RT_PRIORITY_DEFAULT))
    return ["--rt-priority", str(prio)] if prio > 0 else []


MEDIUM_BIN = Path(os.environ.get("MANET_MEDIUM", ROOT / "medium" / "target" / "release" / "manet-medium"))


class MediumError(RuntimeError):
    pass


def medium_config(
    scenario: Scenario, run_id: str, seed: int, state_dir: Path, out_dir: Path
) -> dict[str, Any]:
    trajs = trajectories(scenario, seed)
    return {
        "run_id": run_id,
        "seed": seed,
        "socket": str(state_dir / "medium.sock"),
        "control_socket": str(state_dir / "control.sock"),
        "out_dir": str(out_dir),
        "radio": {"preset": scenario.radio.preset, "overrides": dict(scenario.radio.overrides)},
        "stations": [
            {
                "id": sid,
                "trajectory": [[float(t), float(x), float(y)] for t, x, y in trajs[sid]],
                "tx_power_dbm": scenario.stations.tx_power_dbm.get(sid),
            }
            for sid in scenario.station_ids
        ],
        "links": [link.model_dump(mode="json") for link in scenario.links],
        "events": [ev.model_dump(mode="json") for ev in scenario.events],
        "p2p": scenario.p2p.medium_config() if scenario.p2p is not None else None,
    }


def read_trajectories(cfg_path: Path) -> dict[int, Trajectory]:
    """The stations' trajectories of a medium config that ``medium_config`` wrote (its reader).

    Raises ``ValueError`` naming the file and the field ``stations[].trajectory`` when a station
    has no id, an empty trajectory, a waypoint that is not ``[t_s, x_m, y_m]`` or not finite.
    """
    try:
        cfg = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{cfg_path}: not JSON: {e}") from e
    return trajectories_of(cfg, cfg_path)


def trajectories_of(cfg: Any, cfg_path: Path) -> dict[int, Trajectory]:
    """``read_trajectories`` on a config already parsed from ``cfg_path`` (named in errors)."""
    out: dict[int, Trajectory] = {}
    try:
        for s in cfg["stations"]:
            raw = s["trajectory"]
            if not raw or any(len(w) != 3 for w in raw):
                raise ValueError("a trajectory is a non-empty list of [t_s, x_m, y_m]")
            traj = [(float(w[0]), float(w[1]), float(w[2])) for w in raw]
            if not all(math.isfinite(v) for w in traj for v in w):
                raise ValueError("a waypoint is not a finite number")
            out[int(s["id"])] = traj
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ValueError(f"{cfg_path}: field stations[].trajectory: {e!r}") from e
    return out


class MediumControl:
    """Client of the medium's control socket; one connection per request."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def request(self, op: str, timeout_s: float = 5.0, **fields: Any) -> dict[str, Any]:
        msg = json.dumps({"op": op, **fields}) + "\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(self.path))
            s.sendall(msg.encode())
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        if not buf.strip():
            raise MediumError(f"medium control: no reply to {op!r}")
        reply: dict[str, Any] = json.loads(buf.split(b"\n", 1)[0])
        return reply

    def __call__(self, op: str, **fields: Any) -> dict[str, Any]:
        reply = self.request(op, **fields)
        if not reply.get("ok", False):
            raise MediumError(f"medium control {op}: {reply.get('error', reply)}")
        return reply

    def wait_ready(self, timeout_s: float, alive: Any = None) -> None:
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise MediumError("medium exited during start-up (see medium.log in the results)")
            try:
                self.request("positions", timeout_s=1.0)
                return
            except (OSError, MediumError, ValueError) as exc:
                last = exc
                time.sleep(0.02)
        raise MediumError(f"medium control socket {self.path} not answering after {timeout_s} s: {last}")
