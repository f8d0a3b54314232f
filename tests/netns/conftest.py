"""Netns tests: real namespaces, real kernel TCP, the real medium. Skipped unless root and the
medium binary is built (``make medium``).

These tests run in wall-clock time on a 2-core machine, against real TCP and the medium's random
draws, so a rare physical event (a frame the medium loses after 7 retries, a spurious RTO of a
connection the test does not watch, a scheduling stall of the router) can break a coarse bound that
holds in every other run. Each failing netns test is therefore run once more (pytest-rerunfailures,
``NETNS_RERUNS``, default 1; 0 turns it off): a real regression fails both times, and every rerun is
listed in the summary (``-rR``) and appended to ``results/test-reruns.jsonl`` with the first
failure, so that a test that needs its rerun shows up and gets its cause fixed. Unit, packet and
virtual-time tests are deterministic and never rerun."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from testbed.medium import MEDIUM_BIN

NETNS_RERUNS = int(os.environ.get("NETNS_RERUNS", "1"))
"""Reruns of a failing netns test (see the module docstring)."""
RERUN_LOG = Path(__file__).resolve().parents[2] / "results" / "test-reruns.jsonl"


def _has_rerun_plugin(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("rerunfailures")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome != "rerun":
        return
    RERUN_LOG.parent.mkdir(parents=True, exist_ok=True)
    rec = {
        "t_unix_s": round(time.time(), 3),
        "test": report.nodeid,
        "when": report.when,
        "failure": str(report.longreprtext)[-4000:],
    }
    with RERUN_LOG.open("a") as f:
        f.write(json.dumps(rec) + "\n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if NETNS_RERUNS > 0 and _has_rerun_plugin(config):
        for item in items:
            if item.get_closest_marker("netns") is not None and item.get_closest_marker("flaky") is None:
                item.add_marker(pytest.mark.flaky(reruns=NETNS_RERUNS, reruns_delay=2))
    reasons = []
    if os.geteuid() != 0:
        reasons.append("needs root")
    if not MEDIUM_BIN.exists():
        reasons.append(f"needs the medium binary {MEDIUM_BIN} (make medium)")
    if not reasons:
        return
    skip = pytest.mark.skip(reason="; ".join(reasons))
    for item in items:
        if item.get_closest_marker("netns") is not None:
            item.add_marker(skip)
