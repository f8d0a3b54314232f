"""summary.json's network-layer totals (testbed.metrics.network_totals) and their aggregate metrics."""

from __future__ import annotations

from typing import Any

from experiments.aggregate import METRICS, run_metrics
from testbed.metrics import network_totals


def snap(
    orig: int, deliv: int, fwd: int, mac: dict[str, int], drops: dict[str, int] | None = None
) -> dict[str, Any]:
    return {
        "counters": {
            "data_originated": orig,
            "data_delivered": deliv,
            "data_forwarded": fwd,
            "mac": mac,
            "drops": drops or {},
        }
    }


def test_loss_and_false_link_failures_over_stations() -> None:
    net = network_totals(
        [
            snap(
                100,
                40,
                0,
                {"tx_ok": 90, "tx_failed": 4, "failed_cause_out_of_range": 3, "failed_cause_collision": 1},
            ),
            snap(
                0,
                0,
                120,
                {
                    "tx_ok": 118,
                    "tx_failed": 4,
                    "failed_cause_channel_error": 1,
                    "failed_cause_scripted": 2,
                    "failed_cause_out_of_range": 1,
                },
                {"ifq_full": 2},
            ),
            snap(50, 45, 0, {"tx_ok": 50}, {"link_failure": 3}),
        ]
    )
    assert net["data_originated"] == 150 and net["data_delivered"] == 85 and net["data_forwarded"] == 120
    assert net["packet_loss_pct"] == round(100 * (1 - 85 / 150), 3)
    assert net["link_failures"] == 8
    assert net["link_failures_by_cause"] == {
        "channel_error": 1,
        "collision": 1,
        "out_of_range": 4,
        "scripted": 2,
    }
    assert net["false_link_failure_pct"] == 25.0  # collision + channel error of 8
    assert net["drops"] == {"ifq_full": 2, "link_failure": 3}


def test_no_traffic_gives_none_not_a_division_by_zero() -> None:
    net = network_totals([snap(0, 0, 0, {}), {}])
    assert net["packet_loss_pct"] is None and net["false_link_failure_pct"] is None


def test_aggregate_reads_them() -> None:
    assert "packet_loss_pct" in METRICS and "false_link_failure_pct" in METRICS
    summary = {"flows": [], "packet_loss_pct": 12.5, "false_link_failure_pct": None, "routing_packets": 3}
    metrics, _ = run_metrics(summary)
    assert metrics["packet_loss_pct"] == 12.5
    assert metrics["false_link_failure_pct"] != metrics["false_link_failure_pct"]  # NaN when unknown
