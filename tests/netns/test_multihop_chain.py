"""AODV and DSR against static routes on the 4-hop chain without a window cap (issue 11, item 3).

The links never break: every loss of AODV/DSR against static routes is their reaction to false
link failures (collisions after the MAC's retry limit). The benchmark (bench/multihop,
`chain_aodv_vs_static`, 3 seeds x 60 s, target >= 0.85) measures the ratio; this test keeps a
floor under it: the mean over two seeds must not fall below 0.7 (before issue 11 a route torn
down by every false failure on the ACK path could take the ratio towards 0.7). Real time:
6 runs of ~64 s, about 7 minutes, hence @slow."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from experiments.multihop import run_point

FLOOR = 0.7
SEEDS = (1, 2)


def _throughput(protocol: str, seed: int, out: Path) -> float:
    overrides = {
        "duration_s": 62,
        "routing.protocol": protocol,
        "traffic.tcp[0].duration_s": 60,
        "traffic.tcp[0].max_window_pkts": None,
    }
    _, summary = run_point("topologies/chain5.yaml", overrides, seed, "test-multihop", out)
    (flow,) = summary["flows"]
    assert flow["error"] is None
    return float(flow["throughput_bps"])


@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_aodv_and_dsr_keep_most_of_static_throughput_on_chain5(tmp_path: Path) -> None:
    static = statistics.fmean(_throughput("static", s, tmp_path) for s in SEEDS)
    assert static > 200e3  # the chain itself works (~345 kbit/s)
    for protocol in ("aodv", "dsr"):
        ratio = statistics.fmean(_throughput(protocol, s, tmp_path) for s in SEEDS) / static
        assert ratio >= FLOOR, f"{protocol}: {ratio:.3f} of static routes' {static / 1e3:.0f} kbit/s"
