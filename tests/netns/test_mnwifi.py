"""Mininet-WiFi scripts run unchanged through ``python3 -m testbed.mnwifi`` (issue 15).

Each test runs one script of tests/mnwifi/scripts/ (written in Mininet-WiFi's example style) in a
subprocess, on real namespaces, routers and the medium, and checks what the script printed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "mnwifi" / "scripts"


def mnwifi(tmp: Path, script: str, *args: str, stdin: str = "", timeout: float = 180) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "testbed.mnwifi", "--out", str(tmp), str(SCRIPTS / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return out


def run_dirs(tmp: Path) -> list[Path]:
    return sorted(p for p in (tmp / "mnwifi").iterdir() if p.is_dir())


@pytest.mark.netns
def test_adhoc_line_of_three_pings_over_two_hops(tmp_path: Path) -> None:
    out = mnwifi(tmp_path, "adhoc_line.py", "dsr")
    assert "5 packets transmitted, 5 received" in out or re.search(
        r"5 packets transmitted, [45] received", out
    ), out
    assert "ttl=63" in out  # one forwarding hop: sta2 relays (sta1 and sta3 are 240 m apart)
    m = re.search(r"([\d.]+) ([KM])bits/sec\s+receiver", out)  # kernel TCP over 2 DSR hops
    assert m, out[-2000:]
    assert float(m.group(1)) * (1e3 if m.group(2) == "K" else 1e6) > 50e3
    (run,) = run_dirs(tmp_path)
    assert (run / "summary.json").exists() and (run / "mnwifi.json").exists()
    assert '"ht_cap"' in (run / "mnwifi.json").read_text()  # recorded, not silently dropped


@pytest.mark.netns
def test_cli_reads_commands_from_stdin(tmp_path: Path) -> None:
    stdin = "sta1 ping -c2 -i0.3 -W2 sta3\nnodes\npy sta2.IP()\nfrobnicate\nexit\n"
    out = mnwifi(tmp_path, "adhoc_line.py", "aodv", "-c", stdin=stdin)
    assert "PING 10.0.0.3" in out and "2 packets transmitted" in out  # sta3 became its address
    assert "available nodes are: \nsta1 sta2 sta3" in out
    assert "\n10.0.0.2\n" in out
    assert "*** Unknown command: frobnicate" in out


@pytest.mark.netns
def test_wired_host_through_gateway_station(tmp_path: Path) -> None:
    out = mnwifi(tmp_path, "wired_gateway.py")
    assert out.count(" 0% packet loss") == 2, out  # h1 -> sta3 and sta3 -> h1, two MANET hops
    (run,) = run_dirs(tmp_path)
    assert '"backend"' in (run / "summary.json").read_text()


@pytest.mark.netns
def test_ten_mobile_stations_random_waypoint_plot_saved(tmp_path: Path) -> None:
    out = mnwifi(tmp_path, "mobility_rwp.py", "3")
    (run,) = run_dirs(tmp_path)
    png = run / "plotgraph.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"saved to {png}" in out
    m = re.search(r"sta1 moved from \(([\d.]+), ([\d.]+)\) to \(([\d.]+), ([\d.]+)\)", out)
    assert m, out
    x0, y0, x1, y1 = map(float, m.groups())
    moved = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
    assert 1.0 < moved < 3.0 * 10  # speeds 1-3 m/s for a few seconds
    assert re.search(r"\*\*\* Results: \d+% dropped \(\d+/90 received\)", out), out
    assert (run / "mnwifi.movements").exists()


@pytest.mark.netns
def test_each_propagation_model(tmp_path: Path) -> None:
    out = mnwifi(tmp_path, "propagation_models.py", timeout=300)
    for model in ("logDistance", "friis", "twoRayGround", "logNormalShadowing", "ITU"):
        assert f"MODEL {model} near=ok far=unreachable" in out, out[-2000:]
    overrides = [
        (run / "medium" / "config.json").read_text() for run in run_dirs(tmp_path)
    ]  # the medium got each model
    for name in ("log_distance", "free_space", "two_ray_ground", "log_normal_shadowing", "itu_indoor"):
        assert any(f'"propagation": "{name}"' in o for o in overrides), name
