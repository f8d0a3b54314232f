"""Run validity end to end (testbed/validity.py, docs/orchestrator.md "Run validity"): a run whose
medium is stalled (SIGSTOP for 0.5 s, then SIGCONT) is marked invalid with a reason naming the
medium's lag; the same short run without the stall has a medium lag far below that.

The chain runs 6 s of traffic. Bounds are coarse (the host is shared): the stalled run's maximum
lag is at least the stall minus 100 ms, the normal run's stays under a fifth of the stall.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from netns_helpers import medium_pid, stall_medium

from testbed import run as tbrun

ROOT = Path(__file__).resolve().parents[2]
CHAIN5 = ROOT / "topologies" / "chain5.yaml"
SHORT = {"duration_s": 7, "traffic.tcp[0].duration_s": 5}
STALL_S = 0.5


def run(tmp_path: Path, stall_at_s: float | None) -> tuple[dict[str, Any], Path]:
    with tbrun.Testbed(
        CHAIN5, experiment="test-validity", out_root=tmp_path, overrides=SHORT, quiet=True
    ) as tb:
        th = stall_medium(medium_pid(tb), stall_at_s, STALL_S, tb) if stall_at_s is not None else None
        tb.run()
        if th is not None:
            th.join(5)
    summary: dict[str, Any] = json.loads((tb.dir / "summary.json").read_text())
    return summary, tb.dir


@pytest.mark.netns
def test_a_stalled_medium_makes_the_run_invalid_naming_the_medium_lag(tmp_path: Path) -> None:
    s, _ = run(tmp_path, stall_at_s=3.0)
    v = s["validity"]
    assert s["valid"] is False
    assert v["medium_lag_max_ms"] >= 1000 * STALL_S - 100, v
    lag_reasons = [r for r in v["reasons"] if r.startswith("medium lag max")]
    assert lag_reasons, v["reasons"]
    assert float(lag_reasons[0].split()[3]) >= 1000 * STALL_S - 100  # "medium lag max 512.34 ms > ..."
    assert "valid: NO (" in tbrun.validity_line(s) and "medium lag max" in tbrun.validity_line(s)


@pytest.mark.netns
def test_the_same_run_without_a_stall_has_a_small_medium_lag(tmp_path: Path) -> None:
    s, run_dir = run(tmp_path, stall_at_s=None)
    v = s["validity"]
    assert s["complete"] is True
    assert isinstance(s["valid"], bool)
    assert v["medium_lag_max_ms"] < 1000 * STALL_S / 5, v
    assert v["medium_events"] > 1000
    assert v["router_lag_p99_ms"] is not None
    assert isinstance(v["tun_drops"], int) and isinstance(v["medium_socket_drops"], int), v
    assert v["run_cpu_s"] is not None and v["run_cpu_s"] > 0
    assert 0.0 <= v["cpu_pressure_share"] <= 1.0 and 0.0 <= v["host_cpu_busy_share"] <= 1.0
    assert s["valid"] == (v["reasons"] == [])
    # the relay forwards in the native fast path, so its loop lag is sampled by the probe timer
    # (~5 per second while packets flow) beyond the counters timer's one per second
    relay = json.loads((run_dir / "routers" / "sta3.counters.json").read_text())
    assert relay["loop_lag"]["count"] >= 2 * 5 + 7, relay["loop_lag"]
    # every router locked its pages and wrote its files off the loop without an error
    # (docs/router.md, "Files and memory")
    for c in sorted((run_dir / "routers").glob("sta*.counters.json")):
        d = json.loads(c.read_text())
        assert d["memory"] == {"locked": True, "error": None}, (c.name, d["memory"])
        assert d["files"]["errors"] == 0 and d["files"]["written"] >= 1, (c.name, d["files"])
