"""The kernel's RTT estimator error per flow (``flows[].tcp.srtt_error``, Cohen & Levin's
normalised SRTT variance) on a real run: 4 static stations in a line, TCP sta1 -> sta4 with the
BPF side loaded (``tcpctl.enabled``), a UDP burst from sta1 midway that queues behind the window
and stretches the RTT (the estimator then lags the samples).

Checked against what the BPF code does not compute: the tcp_info time series the observer samples
over netlink every 100 ms (``tcp/sta1.csv``, the kernel's own srtt).
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest
from stack_run import chain_scenario

from testbed.run import run_scenario

pytestmark = [pytest.mark.netns]

TCP_FLOW = {"src": 1, "dst": 4, "start_s": 1, "duration_s": 12, "cc": "reno", "max_window_pkts": 8}
UDP_BURST = {"src": 1, "dst": 4, "start_s": 6, "duration_s": 2, "rate_bps": 600000, "size_bytes": 1000}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("srtt-error")
    routing = {"protocol": "static", "routes": "auto"}
    path = chain_scenario(tmp, "srtt-error", 14, [TCP_FLOW], routing, tcpctl=True, udp=[UDP_BURST])
    return run_scenario(str(path), seed=1, experiment="test-srtt-error", out_root=tmp)


def test_estimator_error_is_measured_against_the_kernels_srtt(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    tcp = summary["flows"][0]["tcp"]
    err = tcp["srtt_error"]
    assert err["conn"] == tcp["conn"], (err, tcp)  # the data connection, not iperf3's control one
    # the kernel calls RTT_CB once per round trip: about the flow's 12 s over the mean RTT
    per_rtt = 12.0 / (err["mean_rtt_ms"] / 1e3)
    assert err["samples"] >= 15 and 0.3 * per_rtt < err["samples"] < 1.5 * per_rtt, (err, per_rtt)
    with (run_dir / "tcp" / "sta1.csv").open() as f:
        srtt = [
            float(r["srtt_ms"])
            for r in csv.DictReader(f)
            if r["conn"] == tcp["conn"] and r["state"] == "ESTAB"
        ]
    assert len(srtt) > 50
    # the samples' mean and the kernel's srtt describe one path: same order of size
    med = statistics.median(srtt)
    assert 0.4 * med < err["mean_rtt_ms"] < 2.5 * med, (err, med)
    # the burst made the estimator lag: a nonzero error, but not beyond the RTT's own size
    assert 0 < err["rmse_ms"] < 3 * max(srtt), (err, max(srtt))
    assert err["norm_var_s"] > 0
