"""Multi-host sweeps over real SSH (issue 17): a bed of 3 hosts on this machine (``testbed.hostbed``:
namespaces on a bridge, each with its own sshd and install directory), provisioned by
``playbooks/provision.yml``; ``playbooks/sweep.yml`` runs the smoke sweep on them through
Dask (``experiments.distributed``), with an unreachable host, a host reached with the wrong key
and a host on another git revision in the inventory: each gets an error naming it and its cause,
and the sweep completes on the others with the rows a one-host run gives. Then a host is killed
mid-run: its run is handed out again, and no run is lost or recorded twice.

The hosts share this machine's two cores: the sweep is the 2-point smoke sweep, one run at a time
per host. About 2 minutes in all (provisioning ~30 s, each sweep ~30-40 s).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import netns
from testbed.hostbed import BedHost, HostBed

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
MEDIUM = ROOT / "medium" / "target" / "release" / "manet-medium"
SWEEP = "experiments/sweeps/smoke.yaml"

pytestmark = [
    pytest.mark.netns,
    pytest.mark.timeout(400),
    pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook"),
    pytest.mark.skipif(not Path("/usr/sbin/sshd").exists(), reason="needs openssh-server"),
]


def head() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        port: int = s.getsockname()[1]
        return port


def playbook(
    inventory: Path, name: str, *extra: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        ["ansible-playbook", "-i", str(inventory), name, *extra],
        cwd=PLAYBOOKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostBed, Path]]:
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("needs a git checkout (the hosts get its HEAD)")
    tmp = tmp_path_factory.mktemp("multihost")
    with HostBed(3) as b:
        inv = b.inventory(tmp / "hosts.yml", host_vars=b.shared_machine_vars())
        res = playbook(inv, "provision.yml", timeout=300)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        for h in b.hosts:
            rev = b.ssh(h, f"git -C {h.dest} rev-parse --short=12 HEAD")
            assert rev.returncode == 0 and rev.stdout.strip() == head(), (h.name, rev)
        yield b, tmp


def controller_vars(b: HostBed, tmp: Path, name: str) -> list[str]:
    return [
        "-e",
        f"manet_sweep={SWEEP}",
        "-e",
        f"testbed_sweep_scheduler={b.controller_address}:{free_port(b.controller_address)}",
        "-e",
        f"testbed_sweep_data={tmp / name / 'data'}",
        "-e",
        f"testbed_sweep_controller_results={tmp / name / 'results'}",
        "-e",
        "testbed_sweep_poll_s=2",
    ]


def one_host_rows(tmp: Path) -> list[dict[str, str]]:
    out = tmp / "one"
    res = subprocess.run(
        [sys.executable, "-m", "experiments.sweep", SWEEP, "--out", str(out), "--data", str(out / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return rows(out / "data" / "smoke.csv")


@pytest.mark.slow  # ~2 min with the provisioning; CI: tests/unit/test_distributed.py (tests/README.md)
def test_three_hosts_over_ssh_with_bad_hosts(bed: tuple[HostBed, Path]) -> None:
    b, tmp = bed
    h1, h2, h3 = b.hosts
    # h3 is on another revision: a commit the controller does not have
    other = b.ssh(h3, f"git -C {h3.dest} -c user.name=t -c user.email=t@t commit -q --allow-empty -m other")
    assert other.returncode == 0, other.stderr
    wrong_key = b.dir / "wrong_key"
    wrong_key.unlink(missing_ok=True)
    Path(f"{wrong_key}.pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong_key)], check=True)
    base = {"manet_dest": str(h1.dest)}
    inv = b.inventory(
        tmp / "faulty.yml",
        extra_hosts={
            "gone": {**base, "ansible_host": f"{b.subnet}.99"},  # nothing answers there
            # h2's address with another key; not over the SSH master connection Ansible keeps to h2
            "badkey": {
                **base,
                "ansible_host": h2.address,
                "ansible_ssh_private_key_file": str(wrong_key),
                "ansible_ssh_args": "-o ControlMaster=no -o ControlPath=none",
            },
        },
        host_vars=b.shared_machine_vars(),
    )
    try:
        res = playbook(inv, "sweep.yml", *controller_vars(b, tmp, "three"))
    finally:
        b.ssh(h3, f"git -C {h3.dest} reset -q --hard HEAD~1")
    out = res.stdout + res.stderr
    # each bad host: an error naming it and its cause; the others went on
    assert re.search(r"gone.*UNREACHABLE.*(No route to host|timed out)", out), out[-4000:]
    assert re.search(r"badkey.*UNREACHABLE.*Permission denied", out), out[-4000:]
    assert re.search(rf"h3.*git revision [0-9a-f]{{12}}, the controller's is {head()}", out), out[-4000:]
    assert "PLAY RECAP" in out
    recap = out[out.index("PLAY RECAP") :]
    assert re.search(r"h1\s*: ok=\d+ .*failed=0", recap) and re.search(r"h2\s*: ok=\d+ .*failed=0", recap), (
        recap
    )

    got = rows(tmp / "three" / "data" / "smoke.csv")
    valid = [r for r in got if r["valid"] == "true"]
    assert len({r["point_id"] for r in valid}) == len(valid) == 2, got
    assert {r["host"] for r in got} <= {"h1", "h2"}, got
    assert all(r["revision"] == head() for r in got), got
    # collect: the hosts' run directories came home; aggregate: over the controller's rows
    for r in valid:
        home = tmp / "three" / "results" / "smoke" / "hosts" / r["host"]
        assert (home / r["run_id"] / "summary.json").exists(), (
            sorted(home.parent.rglob("*"))[:20],
            out[-5000:],
        )
    assert len(rows(tmp / "three" / "results" / "smoke" / "aggregate.csv")) == 2

    # the same sweep on one host: the same points and seeds, metrics within noise
    one = {r["point_id"]: r for r in one_host_rows(tmp) if r["valid"] == "true"}
    assert set(one) == {r["point_id"] for r in valid}
    for r in valid:
        assert r["seed"] == one[r["point_id"]]["seed"]
        ratio = float(r["throughput_total_bps"]) / float(one[r["point_id"]]["throughput_total_bps"])
        assert 0.5 < ratio < 2.0, (r, one[r["point_id"]])


def busy_host(b: HostBed) -> BedHost | None:
    """A host whose namespace has a run in progress (an ``experiments.worker`` process)."""
    found = netns.pids_in([h.netns for h in b.hosts])
    for h in b.hosts:
        for pid in found.get(h.netns, []):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"experiments.worker" in cmd:
                return h
    return None


@pytest.mark.slow
def test_host_killed_mid_sweep(bed: tuple[HostBed, Path]) -> None:
    from testbed.cleanup import clean_leftovers

    b, tmp = bed
    data = tmp / "kill" / "data"
    port = free_port(b.controller_address)
    ctl = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "experiments.sweep",
            SWEEP,
            "--scheduler",
            f"{b.controller_address}:{port}",
            "--out",
            str(tmp / "kill" / "results"),
            "--data",
            str(data),
            "--json-report",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        inv = tmp / "hosts.yml"
        res = playbook(
            inv,
            "workers.yml",
            "-e",
            f"manet_sweep={SWEEP}",
            "-e",
            f"testbed_sweep_scheduler={b.controller_address}:{port}",
        )
        assert res.returncode == 0, res.stdout[-3000:]
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:
            victim = busy_host(b)
            time.sleep(0.5)
        assert victim is not None, "no host started a run"
        time.sleep(3)  # mid-run
        assert b.kill(victim)
        stdout, stderr = ctl.communicate(timeout=180)
    finally:
        if ctl.poll() is None:
            ctl.kill()
            ctl.wait()
        clean_leftovers()  # the killed host's run: its runner is gone
    assert ctl.returncode == 0, stderr[-3000:]
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["completed"] == 2, report
    assert f"host {victim.name} left" in stderr, stderr[-3000:]
    got = rows(data / "smoke.csv")
    valid = [r for r in got if r["valid"] == "true"]
    assert len(valid) == len({r["point_id"] for r in valid}) == 2, got  # none lost, none twice
    assert victim.name not in {r["host"] for r in got}, got


def test_killed_bed_is_cleaned_by_make_clean() -> None:
    """SIGKILL the bed's process: ``make clean`` (``testbed.clean``) removes its sshd processes,
    namespaces, bridge and folder, found by its run id."""

    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.hostbed", "up", "--hosts", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(3)]
    assert lines[-1].startswith("controller "), lines
    rid = re.search(r"ns mt([0-9a-f]{6})-h1", lines[0])
    assert rid is not None, lines
    run_id = rid.group(1)
    sshd = [pid for pids in netns.pids_in([f"mt{run_id}-h1", f"mt{run_id}-h2"]).values() for pid in pids]
    assert len(sshd) >= 2
    proc.kill()
    proc.wait()
    res = subprocess.run(
        [sys.executable, "-m", "testbed.clean"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"mt{run_id}-" not in links
    assert not netns.list_ours(run_id)
    assert not Path(f"/run/manet/{run_id}").exists()
    deadline = time.monotonic() + 10  # killed; init reaps them
    while any(alive(pid) for pid in sshd) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in sshd)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
