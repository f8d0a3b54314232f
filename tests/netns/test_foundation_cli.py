"""The interactive CLI on the 5-station chain: station names become addresses, exit codes shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testbed import netns

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.netns
def test_cli_ping_stations_links_move_quit(tmp_path: Path) -> None:
    script = (
        "\n".join(
            [
                "stations",
                "links",
                "sta1 ping -c2 -i0.3 -W3 sta3",
                "sta2 false",
                "move sta5 1000 50",
                "links",
                "quit",
            ]
        )
        + "\n"
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            str(ROOT / "topologies" / "chain5.yaml"),
            "--out",
            str(tmp_path),
        ],
        input=script,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=90,
    )
    out = res.stdout
    assert res.returncode == 0, res.stderr[-3000:]
    assert "10.0.0.3" in out and "2 received" in out, out
    assert "[exit 0]" in out and "[exit 1]" in out
    assert "4 links" in out and "3 links" in out, out
    assert "sta5" in out and "(800.0, 50.0)" in out
    assert not [n for n in netns.list_ours() if any(tmp_path.glob(f"*/{n[2:8]}"))]
