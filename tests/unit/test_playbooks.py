"""The Ansible playbooks: syntax, house rules (STYLE "Ansible"), a check-mode provision of this
machine, and collect.yml bringing a fake host's results to the controller (twice: idempotent).

Skipped when ansible-playbook is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
# The ansible-playbook of the interpreter running the tests (the project's .venv, where
# requirements.txt puts ansible-core), else one on the PATH.
_VENV_ANSIBLE = Path(sys.executable).parent / "ansible-playbook"
ANSIBLE = str(_VENV_ANSIBLE) if _VENV_ANSIBLE.exists() else shutil.which("ansible-playbook")

pytestmark = pytest.mark.skipif(ANSIBLE is None, reason="ansible-playbook is not installed")

PLAYS = ["provision.yml", "sweep.yml", "collect.yml"]
INVENTORIES = ["local", "example"]

#: Task keys that are not the module.
KEYWORDS = {
    "name", "when", "register", "changed_when", "failed_when", "delegate_to", "become", "run_once",
    "until", "retries", "delay", "async", "poll", "loop", "loop_control", "vars", "tags", "notify",
    "check_mode", "ignore_errors", "args", "no_log", "environment", "become_user", "block", "rescue",
    "always", "listen", "diff", "throttle", "timeout", "any_errors_fatal",
}  # fmt: skip
#: Modules that manage something that exists or not: their tasks say which (``state:``).
STATEFUL = {"ansible.builtin.apt", "ansible.builtin.pip", "ansible.builtin.file", "ansible.builtin.package"}


def run_playbook(*args: str, cwd: Path = PLAYBOOKS, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    assert ANSIBLE is not None
    return subprocess.run([ANSIBLE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def recap(out: str) -> dict[str, dict[str, int]]:
    hosts: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", out, re.M):
        hosts[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return hosts


@pytest.mark.parametrize("inventory", INVENTORIES)
@pytest.mark.parametrize("play", PLAYS)
def test_syntax_check(play: str, inventory: str) -> None:
    res = run_playbook("--syntax-check", "-i", f"inventories/{inventory}/hosts.yml", play, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def _tasks(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, list):
        for item in node:
            out += _tasks(item)
    elif isinstance(node, dict):
        if "hosts" in node:  # a play
            out += _tasks(node.get("tasks", []))
        else:
            out.append(node)
            for key in ("block", "rescue", "always"):
                out += _tasks(node.get(key, []))
    return out


def all_tasks() -> list[tuple[str, dict[str, Any]]]:
    files = [PLAYBOOKS / p for p in PLAYS] + sorted(PLAYBOOKS.glob("roles/*/tasks/*.yml"))
    return [(str(f.relative_to(PLAYBOOKS)), t) for f in files for t in _tasks(yaml.safe_load(f.read_text()))]


def test_tasks_follow_the_house_rules() -> None:
    tasks = all_tasks()
    assert len(tasks) > 20
    for where, task in tasks:
        if "block" in task:
            continue
        assert task.get("name"), f"{where}: unnamed task {task}"
        modules = [k for k in task if k not in KEYWORDS]
        assert len(modules) == 1, f"{where}: {task['name']}: modules {modules}"
        module = modules[0]
        assert module.startswith("ansible.builtin."), (
            f"{where}: {task['name']}: {module} is not fully qualified"
        )
        args = task[module] if isinstance(task[module], dict) else {}
        if module in ("ansible.builtin.command", "ansible.builtin.shell"):
            assert "changed_when" in task or "creates" in args, (
                f"{where}: {task['name']}: no changed_when/creates"
            )
        if module in STATEFUL:
            assert "state" in args, f"{where}: {task['name']}: no state"
        if task.get("poll") == 0:
            assert "async" in task, f"{where}: {task['name']}"


def test_role_variables_carry_the_role_prefix() -> None:
    for defaults in PLAYBOOKS.glob("roles/*/defaults/main.yml"):
        role = defaults.parent.parent.name
        for var in yaml.safe_load(defaults.read_text()):
            assert var.startswith(f"{role}_"), f"{defaults}: {var}"
    for tasks in PLAYBOOKS.glob("roles/*/tasks/*.yml"):
        role = tasks.parent.parent.name
        for task in _tasks(yaml.safe_load(tasks.read_text())):
            reg = task.get("register")
            assert reg is None or reg.startswith(f"{role}_"), f"{tasks}: register {reg}"
            for fact in (task.get("ansible.builtin.set_fact") or {}) if isinstance(task, dict) else {}:
                assert fact.startswith(f"{role}_"), f"{tasks}: set_fact {fact}"


def test_apt_packages_match_setup_script() -> None:
    script = (ROOT / "scripts" / "setup.sh").read_text()
    m = re.search(r"APT_PKGS=\(([^)]*)\)", script)
    assert m, "APT_PKGS not found in scripts/setup.sh"
    setup = m.group(1).split()
    role = yaml.safe_load((PLAYBOOKS / "roles/testbed_common/defaults/main.yml").read_text())
    assert role["testbed_common_apt_packages"] == setup


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/etc/debian_version").exists(), reason="needs root on Debian"
)
def test_provision_check_mode_on_this_machine() -> None:
    res = run_playbook("-i", "inventories/local/hosts.yml", "provision.yml", "--check", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert recap(res.stdout)["localhost"]["failed"] == 0


def _fake_host_results(dest: Path, experiment: str, n: int) -> None:
    """What a host's sweep leaves: run dirs with summary.json and sweep-point.json, and the index."""
    from experiments import sweep as sw
    from experiments.spec import expand, load_sweep

    def fake(req: sw.RunRequest) -> Path:
        run_dir = Path(req.out_root) / req.experiment / uuid.uuid4().hex[:6]
        run_dir.mkdir(parents=True)
        flow = {
            "proto": "tcp",
            "src": 1,
            "dst": 5,
            "throughput_bps": 1e5,
            "tcp_timeouts": 0,
            "retransmits": 3,
        }
        (run_dir / "summary.json").write_text(
            json.dumps({"complete": True, "routing_packets": 0, "flows": [flow]})
        )
        return run_dir

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        sweep = load_sweep("experiments/sweeps/smoke.yaml")
        points = expand(sweep)
        sw.run_points(
            sweep, points[:n], out_root=dest / "results", data_dir=dest / "docs/results/data", run_fn=fake
        )
        sw.copy_sweep_file("experiments/sweeps/smoke.yaml", dest / "results" / experiment)
    finally:
        os.chdir(cwd)


def test_collect_brings_results_home_and_is_idempotent(tmp_path: Path) -> None:
    host_dest, ctl = tmp_path / "host", tmp_path / "ctl-results"
    _fake_host_results(host_dest, "smoke", 2)
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        yaml.safe_dump(
            {
                "testbed_hosts": {
                    "hosts": {
                        "fakehost": {
                            "ansible_connection": "local",
                            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                            "ansible_become": False,
                        }
                    }
                }
            }
        )
    )
    extra = {
        "manet_dest": str(host_dest),
        "manet_sweep": "experiments/sweeps/smoke.yaml",
        "testbed_sweep_controller_results": str(ctl),
        "testbed_sweep_controller_reports": str(tmp_path / "ctl-reports"),
        "testbed_sweep_tmp": str(tmp_path),
        "testbed_sweep_fetch": True,
        # the controller's rows: the host's are merged into them (fake runs record no revision)
        "testbed_sweep_data": str(tmp_path / "ctl-data"),
        "testbed_sweep_merge_any_revision": True,
    }
    args = ("-i", str(inv), "collect.yml", "-e", json.dumps(extra))
    first = run_playbook(*args)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert recap(first.stdout)["fakehost"]["changed"] > 0
    runs = list((ctl / "smoke" / "hosts" / "fakehost").glob("*/summary.json"))
    assert len(runs) == 2
    lines = (ctl / "smoke" / "aggregate.csv").read_text().strip().splitlines()
    assert len(lines) == 3  # header + 2 runs
    assert len((tmp_path / "ctl-data" / "smoke.csv").read_text().splitlines()) == 3  # merged once

    second = run_playbook(*args)
    assert second.returncode == 0, second.stdout[-3000:]
    assert recap(second.stdout)["fakehost"]["changed"] == 0, second.stdout[-3000:]
