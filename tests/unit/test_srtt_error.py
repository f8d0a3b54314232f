"""nodes.tcpctl.observe.srtt_error: Cohen & Levin's Var(SRTT)/E[RTT] from the BPF sums, and the
BPF state layout's tail (tcpctl.h) as kernel.py unpacks it."""

from __future__ import annotations

import math
import struct

from nodes.tcpctl import kernel as K
from nodes.tcpctl.observe import srtt_error


def _sums(pairs: list[tuple[int, int]], unit: int) -> dict[str, int]:
    """The sums on_rtt() keeps for (srtt_before_us, sample_us) pairs."""
    return {
        "rtt_err_n": len(pairs),
        "rtt_sum_us": sum(m for _, m in pairs),
        "rtt_sqerr": sum((abs(s - m) // unit) ** 2 for s, m in pairs),
    }


def test_constant_error_gives_its_square_over_the_mean() -> None:
    # every sample 100 ms above an estimate of 200 ms: E[(SRTT-RTT)^2] = 0.01 s^2, E[RTT] = 0.3 s
    st = _sums([(200_000, 300_000)] * 50, K.RTT_ERR_UNIT_US)
    e = srtt_error(st, K.RTT_ERR_UNIT_US)
    assert e["samples"] == 50
    assert e["mean_rtt_ms"] == 300.0 and e["rmse_ms"] == 100.0
    assert math.isclose(e["norm_var_s"], 0.01 / 0.3, rel_tol=1e-4)


def test_a_perfect_estimator_has_zero_variance_and_no_samples_give_nothing() -> None:
    assert srtt_error(_sums([(150_000, 150_000)] * 10, 10), 10)["norm_var_s"] == 0.0
    assert srtt_error({"rtt_err_n": 0, "rtt_sum_us": 0, "rtt_sqerr": 0}, 10) == {}
    assert srtt_error({}, 10) == {}


def test_large_errors_weigh_quadratically() -> None:
    # the paper's point: a path change (RTT doubles) the estimator follows slowly
    small = srtt_error(_sums([(100_000, 110_000)] * 10, 10), 10)["norm_var_s"]
    big = srtt_error(_sums([(100_000, 200_000)] * 10, 10), 10)["norm_var_s"]
    assert big > 50 * small


def test_state_tail_unpacks_after_the_rto_log() -> None:
    n = len(K._ST_SCALARS)
    vals = [0] * n + [0] * K.RTO_LOG * 3 + [123_456, 789, 42, 0, 5_000_000, 3]
    raw = K._ST.pack(*vals)
    assert K._ST.size == 4 * n + 16 * K.RTO_LOG + 16 + 16  # tcpctl.h: 2 u64 then 4 u32 at the end
    assert K._ST.size % 8 == 0  # no tail padding in the C struct (it has u64 members)
    d = K.unpack_st(raw)
    assert (d["rtt_sum_us"], d["rtt_sqerr"], d["rtt_err_n"]) == (123_456, 789, 42)
    assert (d["thaw_rto_us"], d["thaws"]) == (5_000_000, 3)
    assert struct.calcsize("<2Q4I") == 32


def test_run_metric_pools_the_flows_samples() -> None:
    from experiments.aggregate import run_metrics

    def flow(n: int, mean_ms: float, rmse_ms: float) -> dict[str, object]:
        return {
            "throughput_bps": 1e5,
            "tcp": {"srtt_error": {"samples": n, "mean_rtt_ms": mean_ms, "rmse_ms": rmse_ms}},
        }

    # flow 1: 100 samples, E[RTT] 0.2 s, MSE 0.01 s^2; flow 2: 300 samples, 0.4 s, 0.04 s^2
    m, _ = run_metrics({"flows": [flow(100, 200, 100), flow(300, 400, 200)]})
    pooled_mse = (100 * 0.01 + 300 * 0.04) / 400
    pooled_rtt = (100 * 0.2 + 300 * 0.4) / 400
    assert math.isclose(m["srtt_norm_var_s"], pooled_mse / pooled_rtt, rel_tol=1e-9)
    # without the BPF side (no srtt_error) the metric is missing, not zero
    m, _ = run_metrics({"flows": [{"throughput_bps": 1e5, "tcp": {"samples": 10}}]})
    assert math.isnan(m["srtt_norm_var_s"])
