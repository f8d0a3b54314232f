"""testbed.explain and testbed.timeline on a real run with known losses (docs/explain.md).

One short run (3 static stations in a line, TCP sta1 -> sta3, ~20 s wall clock): a UDP burst
from sta1 overflows its interface queue of 5 packets (segments die in the queue: ``ifq_overflow``),
then a scripted partition cuts sta2 from sta3 for 4 s (every copy sent meanwhile dies at sta2's MAC,
ground truth ``scripted``: the RTOs of that outage are ``event``). The same run's timeline page is
loaded in headless Chromium: it must draw the map and the plots without a JavaScript error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from testbed import explain, timeline
from testbed.run import run_scenario

PARTITION_S = (9.0, 4.0)  # start, duration
UDP_BURST_S = (3.0, 2.0)
SCENARIO = {
    "name": "explain-known-losses",
    "duration_s": 17,
    "seed": 1,
    "field": {"x_m": 500, "y_m": 100},
    "stations": {"count": 3, "placement": {"kind": "line", "spacing_m": 200, "origin": [0, 50]}},
    "radio": {"preset": "ns2-wavelan"},
    "mobility": {"model": "static"},
    "traffic": {
        "tcp": [
            {
                "src": 1,
                "dst": 3,
                "start_s": 1,
                "duration_s": 15,
                "cc": "reno",
                "max_window_pkts": 16,
                "mss": 1460,
            }
        ],
        "udp": [
            {
                "src": 1,
                "dst": 3,
                "start_s": UDP_BURST_S[0],
                "duration_s": UDP_BURST_S[1],
                "rate_bps": 1_500_000,
                "size_bytes": 1200,
            }
        ],
    },
    "routing": {"protocol": "static", "routes": "auto", "ifq_len": 5, "trace": "on"},
    "tcp": {"cc": "reno", "sack": True, "timestamps": True},
    "events": [{"t_s": PARTITION_S[0], "op": "partition", "a": [2], "b": [3], "duration_s": PARTITION_S[1]}],
}
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("explain")
    path = tmp / "known-losses.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return run_scenario(str(path), seed=1, experiment="test-explain", out_root=tmp)


@pytest.mark.netns
def test_known_losses_get_their_causes(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    rep = json.loads((run_dir / "explain.json").read_text())
    assert summary.get("timeouts_by_cause") == rep["by_cause"], summary.get("explain_error")
    losses = rep["losses_by_cause"]
    assert losses.get("ifq_overflow", 0) > 0 and losses.get("event", 0) > 0, losses
    t0, t1 = PARTITION_S[0], PARTITION_S[0] + PARTITION_S[1]
    during = [r for r in rep["rtos"] if t0 < r["t_s"] <= t1]
    assert during, rep["rtos"]  # a 4 s outage makes TCP time out
    # the copy the timer ran out on died at the cut link: at the MAC (a segment at sta2 towards
    # sta3, or an ACK at sta3 towards sta2, the stations 200 m apart), or in sta2's queue of 5,
    # full behind a head frame that sta2's MAC retries into the cut (timing decides which); or in
    # sta1's own queue of 5, which the window of 16 can overflow at any time: an RTO just after the
    # cut may be for a segment lost there before it (2026-11-28: an RTO at 9.22 s, data ifq_full at
    # sta1). Any other cause, or a queue off the path to the cut, fails.
    causes = [(r["t_s"], r["cause"], r["station"], r["detail"]) for r in during]
    assert any(r["cause"] == "event" for r in during), causes
    for r in during:
        assert r["cause"] == "event" or (r["cause"] == "ifq_overflow" and r["station"] in (1, 2)), causes
        if r["cause"] == "event":
            f = next(c for c in r["copies"] if c["cause"] == "event")
            assert f["layer"] == "mac" and {f["station"], f["next_hop"]} == {2, 3}, r
            assert round(f["distance_m"]) == 200, r
    # before the partition the only losses are the UDP burst's: a timeout then is the queue's
    before_partition = [r for r in rep["rtos"] if r["t_s"] <= t0]
    assert all(r["cause"] in ("ifq_overflow", "delayed") for r in before_partition), before_partition
    assert rep["unknown_pct"] < 50, rep["rtos"]
    # the explain command on the finished run rewrites only its own file
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file() and p.name != "explain.json"}
    assert explain.main([str(run_dir)]) == 0
    assert {p: p.stat().st_mtime_ns for p in before} == before


@pytest.mark.netns
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed (make setup)")
def test_timeline_page_loads_in_a_headless_browser(run_dir: Path) -> None:
    assert timeline.main([str(run_dir)]) == 0
    page = run_dir / "timeline.html"
    with tempfile.TemporaryDirectory() as profile:
        res = subprocess.run(
            [
                "chromium",
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    dom = res.stdout
    assert 'data-ready="1"' in dom, (res.returncode, res.stderr[-2000:])
    errors = dom.split('<div id="errors">', 1)[1].split("</div>", 1)[0]
    assert errors == "", errors
    the_map = dom.split('<div id="map"', 1)[1].split('<div id="plots"', 1)[0]
    plots = dom.split('<div id="plots"', 1)[1].split('<div id="path"', 1)[0]
    assert "main-svg" in the_map and "sta3" in the_map and "slider" in the_map
    assert "main-svg" in plots and "RTO: event" in plots and "cwnd" in plots
    # the first timeout's path is shown (what a click shows)
    assert "RTO #1" in dom.split('<div id="path">', 1)[1]
