"""Netns tests: real namespaces, real kernel TCP, the real medium. Skipped unless root and the
medium binary is built (``make medium``)."""

from __future__ import annotations

import os

import pytest

from testbed.medium import MEDIUM_BIN


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
