"""The point-to-point link mode (ATCP's testbed, topologies/liu2001-atcp.yaml) on the real testbed.

A scenario's ``p2p`` section is typed (topologies/schema.py ``P2p``) and becomes one medium link
per hop (testbed/medium.py); until that seam was typed the scenario's ``hops`` form never reached
the medium, which refused it at start-up. This runs a short transfer over the 4 hops of 32 kbit/s
and checks the physics coarsely: every byte arrives, and no faster than the links allow; and that
a run of file transfers ends when the file has arrived, its duration being only a limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed import run as tbrun

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "topologies" / "liu2001-atcp.yaml"
TRANSFER_BYTES = 20_000
MSS = 100  # the scenario's 100-byte segments
#: bytes on the wire per segment: MSS + IPv4 20 + TCP 20 + timestamps 12
WIRE_BYTES = MSS + 52
RATE_BPS = 32_000
#: the run's time limit; the file takes 8-30 s, and the run ends when it has arrived
LIMIT_S = 120


@pytest.mark.netns
def test_p2p_chain_transfers_no_faster_than_its_links(tmp_path: Path) -> None:
    overrides = {
        "duration_s": LIMIT_S,
        "traffic.tcp[0].duration_s": LIMIT_S - 2,
        "traffic.tcp[0].transfer_bytes": TRANSFER_BYTES,
    }
    with tbrun.Testbed(
        SCENARIO, experiment="test-p2p", out_root=tmp_path, overrides=overrides, quiet=True
    ) as tb:
        summary = tb.run()
    flow = summary["flows"][0]
    assert flow["bytes_received"] >= TRANSFER_BYTES, flow
    t = flow["transfer_time_s"]
    # a pipelined chain cannot beat one link's serialisation of every segment
    floor = (TRANSFER_BYTES / MSS) * WIRE_BYTES * 8 / RATE_BPS
    assert floor <= t <= 4 * floor, f"transfer {t:.1f} s against a floor of {floor:.1f} s: {flow}"
    # a run of file transfers ends when the last file has arrived, not at its limit
    assert summary["duration_s"] < LIMIT_S / 2, summary["duration_s"]
