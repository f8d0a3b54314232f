"""Shared helpers of the medium benchmarks: paths, running the binary, writing results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "medium" / "target" / "release" / "manet-medium"
RESULTS = ROOT / "results" / "bench"


def ensure_binary() -> None:
    """Build the release binary if it is missing (cargo is incremental, so this is cheap)."""
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "cargo.sh"), "build", "--release", "--quiet"],
        cwd=ROOT / "medium",
        check=True,
    )


def write_result(
    name: str, value: float, unit: str, target: str, meets: bool, command: str, **extra: object
) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.json"
    rec = {
        "name": name,
        "value": value,
        "unit": unit,
        "target": target,
        "meets_target": bool(meets),
        "command": command,
        **extra,
    }
    out.write_text(json.dumps(rec, indent=2) + "\n")
    return out


def command_line() -> str:
    return " ".join([os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]])
