"""The set-up scripts (docs/setup.md): the quickstart that ``make test-fresh`` runs, the cargo
wrapper's choice of index, and setup's messages when something is missing.

The full proof is ``make test-fresh`` (a clean Debian 12 root file system); these check the
scripts' logic in a second, with fake tools on a PATH of our own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_names_real_make_targets_setup_first() -> None:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test-fresh.sh"), "--print-commands"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    make_cmds = [c.split()[1] for c in out if c.startswith("make ")]
    assert make_cmds[:2] == ["setup", "run"], out
    assert "test-unit" in make_cmds, out
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    assert set(make_cmds) <= targets, (
        f"README's quickstart names {set(make_cmds) - targets}, not in the Makefile"
    )
    # Every other line only prepares the system (apt-get), it does not bypass make.
    assert all(c.startswith(("make ", "apt-get ")) for c in out), out


def _fake_bin(tmp: Path, tools: dict[str, str]) -> Path:
    """A PATH folder with bash, the coreutils the scripts use, and fake tools (name -> script)."""
    b = tmp / "bin"
    b.mkdir()
    for real in ("bash", "dirname", "awk", "cat", "sort", "head", "id", "env"):
        path = shutil.which(real)
        assert path, real
        (b / real).symlink_to(path)
    for name, body in tools.items():
        (b / name).write_text("#!/bin/bash\n" + body + "\n")
        (b / name).chmod(0o755)
    return b


@pytest.mark.parametrize(
    ("version", "sparse"), [("1.65.0", True), ("1.67.1", True), ("1.68.0", False), ("1.95.0", False)]
)
def test_cargo_wrapper_turns_on_the_sparse_index_only_for_old_cargo(
    tmp_path: Path, version: str, sparse: bool
) -> None:
    fake = f"""if [ "$1" = --version ]; then echo "cargo {version} (debian)"; exit 0; fi
echo "sparse=${{CARGO_UNSTABLE_SPARSE_REGISTRY:-}} bootstrap=${{RUSTC_BOOTSTRAP:-}} args=$*" """
    b = _fake_bin(tmp_path, {"cargo": fake})
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "cargo.sh"), "build", "--release"],
        env={"PATH": str(b)},
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    want = "sparse=true bootstrap=1" if sparse else "sparse= bootstrap="
    assert res.stdout.strip() == f"{want} args=build --release"


def test_cargo_wrapper_without_cargo_says_how_to_get_it(tmp_path: Path) -> None:
    b = _fake_bin(tmp_path, {})
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "cargo.sh"), "build"],
        env={"PATH": str(b)},
        capture_output=True,
        text=True,
    )
    assert res.returncode == 127
    assert "cargo not found on PATH" in res.stderr and "Rust >= 1.63" in res.stderr


def _setup(tmp_path: Path, tools: dict[str, str]) -> subprocess.CompletedProcess[str]:
    b = _fake_bin(tmp_path, tools)
    env = {"PATH": str(b), "HOME": str(tmp_path)}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup.sh")], env=env, capture_output=True, text=True, timeout=30
    )


def test_setup_without_cargo_or_apt_says_install_rust(tmp_path: Path) -> None:
    res = _setup(tmp_path, {})
    assert res.returncode == 1
    assert "cargo not found and apt-get unavailable: install Rust >= 1.63" in res.stderr, res.stderr


def test_setup_names_rustup_cargo_missing_from_path(tmp_path: Path) -> None:
    """A rustup toolchain off the PATH is named, and Debian's cargo is what setup would install."""
    (tmp_path / ".cargo" / "bin").mkdir(parents=True)
    (tmp_path / ".cargo" / "bin" / "cargo").write_text("#!/bin/sh\n")
    (tmp_path / ".cargo" / "bin" / "cargo").chmod(0o755)
    res = _setup(tmp_path, {"apt-get": "exit 1"})  # apt-get present, dpkg-query absent
    assert f"cargo not found on the PATH ({tmp_path}/.cargo/bin is not on the PATH)" in res.stdout, res.stdout
    assert res.returncode == 1
    assert "apt-get unavailable: install these Debian packages" in res.stderr
    assert re.search(r"by hand, .*\bcargo\b", res.stderr), res.stderr


def test_setup_without_apt_lists_the_missing_packages(tmp_path: Path) -> None:
    res = _setup(tmp_path, {"cargo": "exit 0"})
    assert res.returncode == 1
    assert "apt-get unavailable: install these Debian packages" in res.stderr
    for pkg in ("iperf3", "python3-venv", "ca-certificates", "python3-apt"):
        assert re.search(rf"\b{re.escape(pkg)}\b", res.stderr), (pkg, res.stderr)
    assert not re.search(r"\bcargo\b", res.stderr.split("by hand")[1]), "cargo is on the PATH: not needed"


def test_makefile_uses_the_venv_python() -> None:
    """`make -n` shows the commands: the venv's interpreter, never a python3 found on the PATH."""
    res = subprocess.run(
        ["make", "-n", "-s", "test-unit", "lint", "clean"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in ("PY", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")},
    )
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    if not (ROOT / ".venv" / "bin" / "python").exists():
        assert res.returncode != 0 and "run 'make setup' first" in res.stderr
        return
    assert lines and all(line.startswith(".venv/bin/python -m ") for line in lines), lines
