"""Per-hop loss above the MAC on a real run (routing.hop_loss; Cohen & Levin's per-hop loss rate):
the 4-hop static chain with 2 % per hop (Cohen's highest rate; at 5 % a run's first losses could
stall TCP for most of its 12 s: 17 losses in 245 frames, 14 kbit/s, 2026-11-26). Every router past the source loses about its share of
the frames the medium delivered to it, kernel TCP repairs the losses (retransmissions), and the
native fast path steps aside (the draws are in the Python path). About 20 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from experiments.multihop import run_point

P = 0.02


@pytest.mark.netns
@pytest.mark.timeout(180)
def test_chain5_loses_five_percent_per_hop(tmp_path: Path) -> None:
    overrides = {
        "duration_s": 14,
        "routing.hop_loss": P,
        "traffic.tcp[0].duration_s": 12,
        "capture.pcap": False,
    }
    run_dir, summary = run_point("topologies/chain5.yaml", overrides, 1, "test-hop-loss", tmp_path)
    (flow,) = summary["flows"]
    assert flow["error"] is None
    assert flow["throughput_bps"] > 20e3  # the flow ran
    assert flow["retransmits"] > 0  # the kernel repaired what the hops lost
    medium = json.loads((run_dir / "medium" / "counters.json").read_text())["per_station"]
    total_lost = total_received = 0
    for s in range(1, 6):
        rec = json.loads((run_dir / "routers" / f"sta{s}.counters.json").read_text())
        lost = rec["counters"]["drops"].get("hop_loss", 0)
        assert rec["fastpath"]["on"] is False and "hop_loss" in rec["fastpath"]["reason"]
        received = medium[str(s)]["rx_delivered"]
        # each router's losses are a binomial draw on the frames the medium delivered to it
        assert binomtest(lost, received, P).pvalue > 1e-4, (s, lost, received)
        total_lost += lost
        total_received += received
    assert total_received > 1000, total_received  # enough draws for the test to have power
    assert binomtest(total_lost, total_received, P).pvalue > 1e-4, (total_lost, total_received)
    assert total_lost > 10
