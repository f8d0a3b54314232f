"""Run validity (testbed/validity.py): judge, the counters parsers, /proc parsers. No I/O."""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace
from typing import Any

import pytest

from nodes.router.loop import LagHistogram
from testbed.validity import (
    HostSampler,
    Measurements,
    Thresholds,
    cpu_times,
    iperf3_cpu_s,
    judge,
    medium_lag,
    psi_some_total_us,
    router_lag,
    run_cpu_s,
    tun_drops_from_net_dev,
)

T = Thresholds(
    medium_lag_p99_ms=1.0,
    medium_lag_max_ms=20.0,
    medium_late_ms=1.0,
    medium_late_share=0.001,
    router_lag_p99_ms=5.0,
    router_lag_max_ms=50.0,
    tun_drops=0,
    medium_socket_drops=0,
    host_cpu_busy_share=0.9,
    cpu_pressure_share=0.5,
)
GOOD = Measurements(
    medium_lag_p99_ms=0.12,
    medium_lag_max_ms=1.6,
    medium_late_share=0.0002,
    medium_events=70_000,
    router_lag_p99_ms=1.1,
    router_lag_max_ms=3.0,
    router_lag_station=2,
    tun_drops=0,
    medium_socket_drops=0,
    host_cpu_busy_share=0.3,
    cpu_pressure_share=0.1,
    run_cpu_s=4.2,
)


def test_a_run_within_every_threshold_is_valid() -> None:
    v = judge(GOOD, T)
    assert v.valid
    assert v.reasons == ()
    d = v.to_dict()
    assert d["reasons"] == []
    assert d["medium_lag_p99_ms"] == 0.12
    assert d["run_cpu_s"] == 4.2
    assert d["thresholds"]["medium_lag_p99_ms"] == 1.0


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"medium_lag_p99_ms": 2.31}, "medium lag p99 2.31 ms > 1.00 ms"),
        ({"medium_lag_max_ms": 500.4}, "medium lag max 500.40 ms > 20.00 ms"),
        ({"medium_late_share": 0.0123}, "medium late share (>= 1 ms) 1.230 % > 0.100 %"),
        ({"router_lag_p99_ms": 7.0}, "router loop lag p99 7.00 ms > 5.00 ms (sta2)"),
        ({"router_lag_max_ms": 148.64}, "router loop lag max 148.64 ms > 50.00 ms (sta2)"),
        ({"tun_drops": 3}, "TUN drops 3 > 0"),
        ({"medium_socket_drops": 1}, "medium socket drops 1 > 0"),
        ({"host_cpu_busy_share": 0.95}, "host CPU saturated share 0.95 > 0.90"),
        ({"cpu_pressure_share": 0.75}, "CPU pressure share 0.75 > 0.50"),
    ],
)
def test_each_signal_beyond_its_threshold_makes_the_run_invalid_naming_it(
    change: dict[str, Any], reason: str
) -> None:
    v = judge(replace(GOOD, **change), T)
    assert not v.valid
    assert v.reasons == (reason,)


def test_a_value_equal_to_the_threshold_is_still_valid() -> None:
    assert judge(replace(GOOD, medium_lag_p99_ms=1.0, router_lag_max_ms=50.0, tun_drops=0), T).valid


def test_several_reasons_are_all_given() -> None:
    v = judge(replace(GOOD, medium_lag_p99_ms=3.0, medium_lag_max_ms=480.0, tun_drops=5), T)
    assert [r.split(" ")[0:3] for r in v.reasons] == [
        ["medium", "lag", "p99"],
        ["medium", "lag", "max"],
        ["TUN", "drops", "5"],
    ]


def test_lags_not_measured_make_the_run_invalid_other_signals_are_optional() -> None:
    v = judge(Measurements(), T)
    assert not v.valid
    assert v.reasons == (
        "medium lag not measured (no medium counters, or no event ran)",
        "router loop lag not measured (no router counters)",
    )
    only_lags = Measurements(
        medium_lag_p99_ms=0.1, medium_lag_max_ms=0.5, medium_events=10, router_lag_p99_ms=1.0
    )
    assert judge(only_lags, T).valid


def test_the_late_threshold_must_be_one_the_medium_counts() -> None:
    with pytest.raises(ValueError, match="medium_late_ms: 3.0"):
        Thresholds(medium_late_ms=3.0)


MEDIUM = {
    "lag": {
        "count": 2000,
        "p50_ns": 20_000,
        "p99_ns": 141_000,
        "max_ns": 5_300_000,
        "late": {"500000": 9, "1000000": 4, "2000000": 2, "5000000": 1, "10000000": 0, "50000000": 0},
    },
    "io": {"per_station": {"1": {"send_dropped": 0}, "2": {"send_dropped": 3}}},
    "rusage": {"utime_s": 1.5, "stime_s": 0.5},
}


def test_medium_lag_reads_quantiles_share_and_send_drops() -> None:
    ml = medium_lag(MEDIUM, 1.0)
    assert ml is not None
    assert (ml.p99_ms, ml.max_ms, ml.events, ml.socket_drops) == (0.141, 5.3, 2000, 3)
    assert ml.late_share == 4 / 2000
    assert medium_lag(MEDIUM, 0.5).late_share == 9 / 2000  # type: ignore[union-attr]
    old = {"lag": {k: v for k, v in MEDIUM["lag"].items() if k != "late"}}  # type: ignore[attr-defined]
    assert medium_lag(old, 1.0).late_share is None  # type: ignore[union-attr]
    assert medium_lag({}, 1.0) is None


def _router(sid: int, p99_ns: int, max_ns: int, dropped: int = 0) -> dict[str, Any]:
    return {
        "station": sid,
        "io": {"medium_send_dropped": dropped},
        "loop_lag": {"count": 50, "p99_ns": p99_ns, "max_ns": max_ns},
        "rusage": {"utime_s": 0.2, "stime_s": 0.1},
    }


def test_router_lag_is_the_worst_station() -> None:
    rl = router_lag(
        [
            _router(1, 1_000_000, 2_000_000),
            _router(3, 4_000_000, 4_500_000, 2),
            _router(2, 900_000, 9_000_000),
        ]
    )
    assert rl is not None
    assert (rl.p99_ms, rl.max_ms, rl.station, rl.send_dropped) == (4.0, 9.0, 3, 2)
    assert router_lag([{"station": 1, "io": {}}]) is None


def _station(station: int, lags_ms: list[float]) -> dict[str, Any]:
    """A router's counters whose loop woke once per entry of ``lags_ms``, that late."""
    h = LagHistogram()
    for lag in lags_ms:
        h.record(round(lag * 1e6))
    return {"station": station, "io": {}, "loop_lag": h.to_dict()}


def test_router_lag_pools_the_stations_that_woke_fewer_than_100_times() -> None:
    # 30 off-path stations that woke 20 times each, one of them once 60 ms late: on its own that
    # station's "p99" is its maximum; pooled (600 wake-ups) the p99 is 1 ms. sta1 woke 5000 times.
    busy = _station(1, [0.5] * 4900 + [10.0] * 100)
    quiet = [_station(s, [0.5] * 19 + [60.0 if s == 7 else 0.5]) for s in range(2, 32)]
    assert quiet[5]["loop_lag"]["p99_ns"] == 60_000_000  # sta7 alone
    rl = router_lag([busy, *quiet])
    assert rl is not None
    assert (rl.p99_ms, rl.max_ms, rl.station) == (10.0, 60.0, 1)
    m = replace(GOOD, router_lag_p99_ms=rl.p99_ms, router_lag_max_ms=rl.max_ms, router_lag_station=rl.station)
    assert judge(m).valid  # one 60 ms wake-up is within the max rule (200 ms)
    # lag sustained over the quiet stations (2 % of their wake-ups 60 ms late) is still caught,
    # and named by the pooled station with the latest wake-up
    slow = [
        _station(s, [0.5] * 19 + [60.0 + s if s in (7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29) else 0.5])
        for s in range(2, 32)
    ]
    rl = router_lag([busy, *slow])
    assert rl is not None and rl.station == 29 and rl.p99_ms > 50.0
    assert judge(replace(GOOD, router_lag_p99_ms=rl.p99_ms, router_lag_station=rl.station)).reasons == (
        f"router loop lag p99 {rl.p99_ms:.2f} ms > 50.00 ms (sta29)",
    )
    # from 100 wake-ups on, a station is judged on its own
    rl = router_lag([busy, _station(7, [0.5] * 98 + [60.0, 60.0])])
    assert rl is not None and (rl.p99_ms, rl.station) == (60.0, 7)


def test_a_station_without_a_histogram_is_judged_on_its_own_as_before() -> None:
    old = _router(7, 60_000_000, 60_000_000)  # count 50, no buckets (counters before 2026-11-29)
    rl = router_lag([_station(1, [0.5] * 5000), old])
    assert rl is not None and (rl.p99_ms, rl.station) == (60.0, 7)


def test_a_malformed_histogram_is_an_error_naming_the_bucket() -> None:
    snap = _station(1, [0.5] * 10)
    snap["loop_lag"]["buckets"] = {"5000": 3}
    with pytest.raises(ValueError, match="bucket '5000'"):
        router_lag([snap])


def test_run_cpu_sums_medium_routers_iperf3_and_others() -> None:
    client = {"end": {"cpu_utilization_percent": {"host_total": 2.0}, "sum_sent": {"seconds": 25.0}}}
    server = {"end": {"cpu_utilization_percent": {"host_total": 1.0}, "sum_received": {"seconds": 20.0}}}
    assert iperf3_cpu_s(client) == pytest.approx(0.5)
    assert iperf3_cpu_s(None) == 0.0
    routers = [_router(1, 0, 0), _router(2, 0, 0)]
    assert run_cpu_s(MEDIUM, routers, [client, server, None], 0.25) == pytest.approx(
        2.0 + 0.6 + 0.5 + 0.2 + 0.25
    )
    assert run_cpu_s(None, routers) is None
    assert run_cpu_s(MEDIUM, [{"station": 1}]) is None


NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  tun0: 1234567    1000    0    2    0     0          0         0  7654321    2000    0    5    0     0       0          0
sta3-wlan0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
"""


def test_tun_drops_are_rx_drop_plus_tx_drop() -> None:
    assert tun_drops_from_net_dev(NET_DEV) == 7
    assert tun_drops_from_net_dev(NET_DEV, "sta3-wlan0") == 0
    assert tun_drops_from_net_dev(NET_DEV, "eth0") is None


def test_proc_stat_and_psi_parsers() -> None:
    stat = "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n"
    assert cpu_times(stat) == (160, 980)
    with pytest.raises(ValueError):
        cpu_times("intr 1 2 3\n")
    psi = "some avg10=3.14 avg60=17.30 avg300=14.18 total=71598637\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert psi_some_total_us(psi) == 71598637
    assert psi_some_total_us("") is None


def test_the_printed_line_says_yes_or_the_reasons() -> None:
    from testbed.run import validity_line

    assert validity_line({"valid": True, "validity": {"reasons": []}}) == "valid: yes"
    bad = {"valid": False, "validity": {"reasons": ["medium lag p99 2.31 ms > 2.00 ms", "TUN drops 3 > 0"]}}
    assert validity_line(bad) == "valid: NO (medium lag p99 2.31 ms > 2.00 ms; TUN drops 3 > 0)"
    assert validity_line({"complete": False}) == "valid: unknown (not judged)"


def test_host_sampler_counts_saturated_intervals_and_psi_over_wall_time() -> None:
    """Fake /proc (three 1-s intervals: 100 %, 50 %, 97 % busy) and a clock ticking 1 s per read."""
    stats = iter(
        [
            "cpu  0 0 0 0 0 0 0 0\n",
            "cpu  100 0 0 0 0 0 0 0\n",  # +100 busy of 100: saturated
            "cpu  150 0 0 50 0 0 0 0\n",  # +50 of 100
            "cpu  247 0 0 53 0 0 0 0\n",  # +97 of 100: saturated (>= 95 %)
        ]
    )
    psi = iter(
        ["some avg10=0 avg60=0 avg300=0 total=1000000\n", "some avg10=0 avg60=0 avg300=0 total=2500000\n"]
    )
    done = threading.Event()

    def read(path: str) -> str | None:
        if path == "/proc/pressure/cpu":
            return next(psi)
        text = next(stats, None)
        if text is None:
            done.set()
        return text  # None ends the sampling loop

    ticks = itertools.count()
    smp = HostSampler(interval_s=0.001, read=read, clock=lambda: float(next(ticks))).start()
    assert done.wait(5)
    smp.stop()
    assert smp.sampled_s == 3.0
    assert smp.busy_s == 2.0
    assert smp.busy_share == pytest.approx(2 / 3)
    assert smp.pressure_share == pytest.approx(1.5 / smp.wall_s)
