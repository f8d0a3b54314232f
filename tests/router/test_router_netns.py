"""The router daemon end to end in real namespaces, over the fake medium (tests/router/fake_medium.py).

A 3-station chain sta1 - sta2 - sta3 with static routes: ping and iperf3 TCP (Reno) from sta1 to
sta3 through sta2, tcpdump on sta2-wlan0 decodes the frames sta2 forwards as IP, SIGTERM writes the
counters and says BYE. Namespaces carry a unique ``mtt<hex>-`` prefix and are removed in a finally.
Skipped unless root.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_medium import FakeMedium  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, TUN/TAP)"),
    pytest.mark.skipif(not os.path.exists("/dev/net/tun"), reason="no /dev/net/tun"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 not installed"),
]

ROUTES = {1: {"3": 2}, 2: {}, 3: {"1": 2}}


def wait_for(pred: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


@dataclass
class Chain:
    prefix: str
    workdir: Path
    medium: FakeMedium
    routers: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def ns(self, station: int) -> str:
        return f"{self.prefix}-sta{station}"

    def run(
        self, station: int, *cmd: str, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.ns(station), *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def popen(self, station: int, *cmd: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["ip", "netns", "exec", self.ns(station), *cmd],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def counters(self, station: int) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.workdir / "routers" / f"sta{station}.counters.json").read_text()
        )
        return data


@pytest.fixture(scope="module")
def chain() -> Iterator[Chain]:
    prefix = "mtt" + secrets.token_hex(3)
    workdir = Path(f"/tmp/{prefix}")
    workdir.mkdir(mode=0o700)
    medium = FakeMedium(str(workdir / "medium.sock"), 3).start()
    c = Chain(prefix, workdir, medium)
    made: list[str] = []
    try:
        for s in (1, 2, 3):
            subprocess.run(["ip", "netns", "add", c.ns(s)], check=True)
            made.append(c.ns(s))
            c.run(s, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno")
            cfg = {
                "run_id": prefix,
                "station_id": s,
                "n_stations": 3,
                "seed": 1,
                "medium_socket": str(workdir / "medium.sock"),
                "protocol": {"name": "static", "params": {}, "routes": ROUTES[s]},
                "extensions": [],
                "ifq_len": 50,
                "promiscuous": False,
                "out_dir": str(workdir / "routers"),
            }
            path = workdir / f"sta{s}.json"
            path.write_text(json.dumps(cfg))
            c.routers[s] = subprocess.Popen(
                [sys.executable, "-m", "nodes.router", "--config", str(path), "--netns", c.ns(s)], cwd=ROOT
            )
        medium.wait_connected([1, 2, 3], timeout_s=30)
        for s in (1, 2, 3):
            wait_for(
                lambda s=s: (workdir / "routers" / f"sta{s}.counters.json").exists(), 10, f"sta{s} counters"
            )
        yield c
    finally:
        for p in c.routers.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in c.routers.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        try:
            medium.stop()
        finally:
            for name in made:
                subprocess.run(["ip", "netns", "del", name], check=False)
            shutil.rmtree(workdir, ignore_errors=True)


def test_devices(chain: Chain) -> None:
    link = chain.run(2, "ip", "-d", "link", "show", "sta2-wlan0").stdout
    assert "link/ieee802.11/radiotap" in link and "mtu 2304" in link and "UP" in link
    addr = chain.run(2, "ip", "-4", "addr", "show", "tun0").stdout
    assert "10.0.0.2/16" in addr
    assert chain.run(2, "ip", "-4", "addr", "show", "sta2-wlan0").stdout.count("inet ") == 0
    assert "10.0.0.0/16 dev tun0" in chain.run(2, "ip", "route").stdout
    assert chain.run(2, "sysctl", "-n", "net.ipv6.conf.sta2-wlan0.disable_ipv6").stdout.strip() == "1"


@pytest.mark.skipif(shutil.which("ping") is None, reason="ping (iputils-ping) not installed")
def test_ping_through_relay(chain: Chain) -> None:
    r = chain.run(1, "ping", "-c", "3", "-i", "0.2", "-W", "2", "10.0.0.3", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 received" in r.stdout
    assert "ttl=63" in r.stdout  # one relay decremented the TTL


@pytest.mark.skipif(
    shutil.which("tcpdump") is None or shutil.which("ping") is None, reason="tcpdump/ping missing"
)
def test_tcpdump_on_relay_decodes_forwarded_frames(chain: Chain) -> None:
    td = chain.popen(2, "tcpdump", "-l", "-nn", "-e", "-i", "sta2-wlan0", "-c", "4", "icmp")
    try:
        wait_for(lambda: chain.run(2, "ip", "-s", "link", "show", "sta2-wlan0").returncode == 0, 5, "tap")
        # tcpdump has attached once its packet socket is listed in the station's /proc/net/packet
        wait_for(lambda: len(chain.run(2, "cat", "/proc/net/packet").stdout.splitlines()) > 1, 10, "tcpdump")
        chain.run(1, "ping", "-c", "2", "-i", "0.2", "10.0.0.3", check=False)
        out, _ = td.communicate(timeout=20)
    finally:
        if td.poll() is None:
            td.kill()
            td.wait()
    assert "link-type IEEE802_11_RADIO" in out
    lines = [ln for ln in out.splitlines() if "ICMP echo request" in ln]
    received = [ln for ln in lines if "SA:02:00:00:00:00:01" in ln and "DA:02:00:00:00:00:02" in ln]
    forwarded = [ln for ln in lines if "SA:02:00:00:00:00:02" in ln and "DA:02:00:00:00:00:03" in ln]
    assert received and forwarded, out
    assert all("10.0.0.1 > 10.0.0.3" in ln for ln in received + forwarded)
    assert "dBm signal" in received[0] and "tx power" in forwarded[0]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")
def test_iperf3_tcp_reno_through_relay(chain: Chain) -> None:
    port = "5299"
    server = chain.popen(3, "iperf3", "-s", "-1", "-p", port)
    try:
        wait_for(lambda: f":{port} " in chain.run(3, "ss", "-ltnH").stdout, 10, "iperf3 server listening")
        r = chain.run(
            1, "iperf3", "-c", "10.0.0.3", "-p", port, "-t", "3", "-C", "reno", "-J", timeout=60, check=False
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        result = json.loads(r.stdout)
        bps = result["end"]["sum_received"]["bits_per_second"]
        assert bps > 0
        assert result["start"]["tcp_mss_default"] > 0
    finally:
        server.wait(10) if server.poll() is None else None
    data = wait_for(
        lambda: chain.counters(2)["counters"]["data_forwarded"] > 100 and chain.counters(2),
        5,
        "sta2 counters",
    )
    assert data["counters"]["mac"]["tx_ok"] > 100
    assert not data["counters"]["malformed"]


def test_sigterm_writes_counters_and_says_bye(chain: Chain) -> None:
    before = chain.medium.bye.copy()
    p = chain.routers[3]
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0
    data = chain.counters(3)
    assert data["station"] == 3
    assert "counters" in data and "runtime" in data
    assert data["runtime"]["ifq_capacity"] == 50
    wait_for(lambda: 3 in chain.medium.bye and 3 not in before, 5, "BYE from sta3")
    # the devices vanish with the router: nothing left in the namespace
    assert "sta3-wlan0" not in chain.run(3, "ip", "link").stdout


def test_medium_gone_exits_with_distinct_code(chain: Chain) -> None:
    chain.medium.stop()
    from nodes.router import EXIT_MEDIUM_GONE

    for s in (1, 2):
        assert chain.routers[s].wait(10) == EXIT_MEDIUM_GONE
        assert chain.counters(s)["station"] == s
