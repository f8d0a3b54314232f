"""The run's pinned tcpctl maps hold the papers' largest fields (real BPF, root only)."""

from __future__ import annotations

import errno
import os

import pytest

from nodes.tcpctl import kernel as K
from tests.netns.stack_run import skip_without_stack


@pytest.fixture(autouse=True)
def _skip_without_prereq() -> None:
    skip_without_stack()


def test_netns_map_takes_a_100_station_run_and_names_its_limit() -> None:
    """Cohen's and Yu's 100-station fields register every station's netns (the map held 64 before:
    station 65 of a Cohen run with route control failed with E2BIG); one past the limit is a clear
    error naming the station and the limit."""
    run_id = f"t{os.getpid() % 100000:05d}"
    K.cleanup(run_id)
    K.load(run_id, vegas=False)
    try:
        maps = K.Maps(run_id)
        try:
            for station in range(1, K.MAX_STATIONS + 1):
                maps.register_netns(cookie=10**9 + station, station=station)
            with pytest.raises(K.BpfError) as e:
                maps.register_netns(cookie=10**9 + K.MAX_STATIONS + 1, station=K.MAX_STATIONS + 1)
            assert e.value.errno == errno.E2BIG
            assert f"station {K.MAX_STATIONS + 1}" in str(e.value)
            assert f"at most {K.MAX_STATIONS} stations" in str(e.value)
        finally:
            maps.close()
    finally:
        K.cleanup(run_id)
    assert not K.run_dir(run_id).exists()
