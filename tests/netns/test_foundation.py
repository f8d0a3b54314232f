"""Issue 2 "done means" for the foundation: stations, runner, teardown (tests/netns, root).

(a) the 5-station chain over the real medium with static routes: TCP works, throughput does not
    grow with hop count, tcpdump on sta3 shows the frames it forwards;
(b) SIGKILL of the runner, three times, then ``python -m testbed.clean``: nothing of ours is
    left and a namespace that is not ours is untouched;
(c) a wrong scenario field fails with file, field and reason.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import idleguard, netns, procs
from testbed import run as tbrun
from testbed.naming import RUN_ROOT

ROOT = Path(__file__).resolve().parents[2]
CHAIN5 = ROOT / "topologies" / "chain5.yaml"
NOISE = 1.10  # throughput at h+1 hops may exceed that at h hops by 10% at most


def wait_for(pred, timeout_s: float, what: str, step: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def iperf(tb: tbrun.Testbed, src: int, dst: int, seconds: int, port: int) -> dict:  # type: ignore[type-arg]
    server = tb.station(dst).popen(
        ["iperf3", "-s", "-1", "-J", "-p", str(port)],
        role="iperf3-server",
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    from testbed.traffic import listening_ports

    wait_for(lambda: port in listening_ports(tb.station(dst).netns), 10, f"iperf3 server in sta{dst}", 0.02)
    res = tb.station(src).cmd(
        [
            "iperf3",
            "-c",
            tb.station(dst).ip,
            "-p",
            str(port),
            "-t",
            str(seconds),
            "-J",
            "-C",
            "reno",
            "-M",
            "1460",
            "-w",
            str(8 * 1460),
        ],
        timeout=seconds + 20,
    )
    out, _ = server.communicate(timeout=10)
    assert res.rc == 0, res.stdout[-2000:] + res.stderr
    return json.loads(out)


@pytest.mark.netns
def test_chain_tcp_throughput_does_not_grow_with_hops(tmp_path: Path) -> None:
    with tbrun.Testbed(CHAIN5, experiment="test-foundation", out_root=tmp_path, quiet=True) as tb:
        assert set(tb.stations) == {1, 2, 3, 4, 5}
        assert tb.sta1.cmd("cat /proc/sys/net/ipv4/tcp_congestion_control").stdout.strip() == "reno"
        assert tb.sta3.cmd("ip -o link show tun0").ok
        # routers run at the nice that keeps their loops on time beside other runs (procs.py)
        for sid, st in tb.stations.items():
            assert st.router_pid is not None
            assert os.getpriority(os.PRIO_PROCESS, st.router_pid) == procs.router_nice(), f"sta{sid}"
        ping = tb.sta1.cmd(f"ping -c 3 -i 0.3 -W 3 {tb.sta5.ip}", timeout=30)
        assert ping.rc == 0, ping.stdout + ping.stderr
        thr = {}
        pcap = tmp_path / "sta3.pcap"
        for hops in (1, 2, 3, 4):
            dump = None
            if hops == 4:
                dump = tb.sta3.popen(
                    ["tcpdump", "-ni", tb.sta3.wlan, "-U", "-Z", "root", "-w", str(pcap)],
                    role="tcpdump",
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.5)
            data = iperf(tb, 1, 1 + hops, seconds=4, port=5300 + hops)
            thr[hops] = data["end"]["sum_received"]["bits_per_second"]
            if dump is not None:
                dump.send_signal(signal.SIGINT)
                dump.wait(10)
        (tmp_path / "throughput.json").write_text(json.dumps(thr))
        # static routing: the relays forwarded in the native fast path (docs/router.md), except sta3
        # while tcpdump listened on its TAP (every frame through Python, to be mirrored)
        time.sleep(1.5)  # the counters file is rewritten every second
        fp = {}
        for sid in (2, 3):
            snap = json.loads((tb.dir / "routers" / f"sta{sid}.counters.json").read_text())
            fp[sid] = (snap["fastpath"], snap["counters"]["data_forwarded"])
        (tmp_path / "fastpath.json").write_text(json.dumps(fp))
        assert fp[2][0]["on"] and fp[2][0]["forwarded"] > 100 and fp[2][0]["forwarded"] <= fp[2][1], fp
        assert fp[3][0]["on"] and 100 < fp[3][0]["forwarded"] < fp[3][1] - 20, fp
        assert all(v > 0 for v in thr.values()), thr
        for h in (1, 2, 3):
            assert thr[h + 1] <= thr[h] * NOISE, f"throughput grew from {h} to {h + 1} hops: {thr}"
        text = subprocess.run(["tcpdump", "-nr", str(pcap)], capture_output=True, text=True).stdout
        flow = [ln for ln in text.splitlines() if "IP 10.0.0.1." in ln and "> 10.0.0.5." in ln]
        # the mirror shows sta3's transmissions with a TX power field and receptions with signal
        forwarded = [ln for ln in flow if "tx power" in ln]
        received = [ln for ln in flow if "tx power" not in ln]
        assert forwarded and received, f"{len(flow)} frames sta1->sta5 on sta3-wlan0:\n{text[:2000]}"


def run_ids_in(out_root: Path) -> set[str]:
    return {p.name for p in out_root.glob("*/*") if re.fullmatch(r"[0-9a-f]{6}", p.name)}


@pytest.mark.netns
def test_sigkill_runner_then_clean_leaves_nothing_of_ours(tmp_path: Path) -> None:
    other = f"othertest-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", other], check=True)
    try:
        killed: dict[str, dict] = {}  # type: ignore[type-arg]
        for i in range(3):
            before = run_ids_in(tmp_path)
            runner = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "testbed.run",
                    str(CHAIN5),
                    "--experiment",
                    "killed",
                    "--out",
                    str(tmp_path),
                    "--seed",
                    str(i + 1),
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # the first run with its idle guards (testbed/idleguard.py): SIGKILL must not leave them
                env={**os.environ, idleguard.IDLE_GUARD_ENV: "1" if i == 0 else "0"},
            )

            # mid-run: the iperf3 client of the chain's flow (start_s 1) is running
            def flow_started(before: set[str] = before) -> str | None:
                for rid in run_ids_in(tmp_path) - before:
                    reg = RUN_ROOT / rid / "registry.json"
                    if reg.exists() and "iperf3-client" in reg.read_text():
                        return rid
                return None

            rid = wait_for(flow_started, 40, "the runner to start its flow")
            time.sleep(1.0)
            killed[rid] = json.loads((RUN_ROOT / rid / "registry.json").read_text())
            guards = [e for e in killed[rid]["processes"] if e["role"] == "idle-guard"]
            want = idleguard.guard_cpus(os.sched_getaffinity(0)) if i == 0 else []
            assert len(guards) == len(want), killed[rid]["processes"]
            for e, cpu in zip(guards, want, strict=True):
                assert Path(f"/proc/{e['pid']}/comm").read_text().strip() == f"mt{rid}-idle{cpu}"
                assert os.sched_getscheduler(e["pid"]) == os.SCHED_IDLE
                assert os.sched_getaffinity(e["pid"]) == {cpu}
            runner.send_signal(signal.SIGKILL)
            runner.wait(10)
            assert netns.list_ours(rid), "the killed run should have left its namespaces behind"
        res = subprocess.run(
            [sys.executable, "-m", "testbed.clean"], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, res.stderr
        for rid, reg in killed.items():
            assert netns.list_ours(rid) == [], f"namespaces of {rid} left: {netns.list_ours(rid)}"
            assert not (RUN_ROOT / rid).exists()
            for entry in reg["processes"]:
                assert not procs.is_same(entry["pid"], entry["start_time"]), f"{entry} still running"
            links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
            assert f"mt{rid}" not in links
            summary = json.loads(next(tmp_path.glob(f"*/{rid}/summary.json")).read_text())
            assert summary["complete"] is False  # kept, and marked incomplete
        assert netns.exists(other), "clean touched a namespace that is not ours"
    finally:
        subprocess.run(["ip", "netns", "del", other], check=False)


def test_wrong_field_fails_naming_file_field_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = CHAIN5.read_text().replace("duration_s: 30", "duration_s: -5")
    bad.write_text(text + "colour: blue\n")
    before = set(os.listdir(RUN_ROOT)) if RUN_ROOT.exists() else set()
    res = subprocess.run(
        [sys.executable, "-m", "testbed.run", str(bad), "--out", str(tmp_path / "res")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0
    assert str(bad) in res.stderr
    assert "duration_s" in res.stderr and "greater than 0" in res.stderr, res.stderr
    assert "colour" in res.stderr, res.stderr  # unknown keys are errors
    assert not (tmp_path / "res").exists()  # nothing was created
    after = set(os.listdir(RUN_ROOT)) if RUN_ROOT.exists() else set()
    assert after <= before
