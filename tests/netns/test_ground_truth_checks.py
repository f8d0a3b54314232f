"""The netns tests' ground-truth checks (netns_helpers ``check_against_medium``,
``check_flow_against_delivery``) fail for the faults they are there for. No namespaces: a
run directory written here, with the relations a real run has (a DSR run's two stations)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from netns_helpers import PathTruth, check_against_medium, check_flow_against_delivery

MEDIUM = {
    "1": {
        "offered": 176,
        "rejected": 0,
        "acked": 168,
        "failed": 0,
        "sent": 8,
        "rx_delivered": 126,
        "rx_overheard": 0,
    },
    "2": {
        "offered": 285,
        "rejected": 0,
        "acked": 278,
        "failed": 1,
        "sent": 6,
        "rx_delivered": 296,
        "rx_overheard": 0,
    },
}
ROUTERS = {
    1: {
        "io": {"medium_tx": 176, "medium_rx": 302},
        "counters": {
            "mac": {"tx_ok": 176},
            "routing_sent": {"rreq": 8},
            "routing_forwarded": {},
            "routing_packets": 8,
            "data_delivered": 118,
        },
    },
    2: {
        "io": {"medium_tx": 285, "medium_rx": 581},
        "counters": {
            "mac": {"tx_ok": 284, "tx_failed": 1},
            "routing_sent": {"rerr": 1},
            "routing_forwarded": {"rreq": 6, "rrep": 2},
            "routing_packets": 9,
            "data_delivered": 0,
        },
    },
}
SUMMARY = {"routing_packets": 17, "flows": [{"src": 2, "dst": 1, "bytes_received": 159_280}]}


def write(tmp: Path, routers: dict[int, Any]) -> Path:
    (tmp / "medium").mkdir(exist_ok=True)
    (tmp / "routers").mkdir(exist_ok=True)
    (tmp / "medium" / "counters.json").write_text(json.dumps({"per_station": MEDIUM}))
    for s, rec in routers.items():
        (tmp / "routers" / f"sta{s}.counters.json").write_text(json.dumps(rec))
    return tmp


def test_a_consistent_run_passes(tmp_path: Path) -> None:
    check_against_medium(write(tmp_path, ROUTERS), SUMMARY, "dsr")
    counters = {s: r["counters"] for s, r in ROUTERS.items()}
    check_flow_against_delivery(SUMMARY, counters, PathTruth(10.0, 8 * 159_280))


@pytest.mark.parametrize(
    "fault",
    [
        "a RREQ counted but never sent",
        "two TX_STATUS lost",
        "two frames the medium never took",
        "a data packet broadcast",
    ],
)
def test_a_fault_between_router_and_medium_fails(tmp_path: Path, fault: str) -> None:
    routers = copy.deepcopy(ROUTERS)
    c, io = routers[2]["counters"], routers[2]["io"]
    if fault == "a RREQ counted but never sent":
        c["routing_forwarded"]["rreq"] += 2
        c["routing_packets"] += 2
    elif fault == "two TX_STATUS lost":
        c["mac"]["tx_ok"] -= 2
    elif fault == "two frames the medium never took":
        io["medium_tx"] += 2
    else:  # the medium's broadcasts exceed the router's routing packets
        c["routing_forwarded"]["rrep"] = 0
        c["routing_packets"] = 5
    with pytest.raises(AssertionError):
        check_against_medium(write(tmp_path, routers), SUMMARY, "dsr")


@pytest.mark.parametrize("routing_packets", [10, 10**6])
def test_overhead_outside_the_medium_counts_fails(tmp_path: Path, routing_packets: int) -> None:
    """Fewer routing packets than the medium's broadcasts (14), or more than its frames (461)."""
    with pytest.raises(AssertionError):
        check_against_medium(write(tmp_path, ROUTERS), dict(SUMMARY, routing_packets=routing_packets), "dsr")


def test_more_bytes_than_deliveries_or_the_path_carries_fails() -> None:
    counters = {s: r["counters"] for s, r in ROUTERS.items()}
    with pytest.raises(AssertionError):  # 118 packets of at most 1460 bytes
        check_flow_against_delivery(
            {"flows": [{"dst": 1, "bytes_received": 118 * 1460 + 1}]}, counters, PathTruth(10.0, 1e9)
        )
    with pytest.raises(AssertionError):  # the path carried at most 1 Mbit
        check_flow_against_delivery(SUMMARY, counters, PathTruth(0.5, 1e6))
