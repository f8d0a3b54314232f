"""An RTO policy that caps the RTO keeps the baseline's give-up time (issue 47, item 1).

Fixed RTO (Dyer & Boppana, Ghanem 2008) holds the RTO after its second expiration; on Linux the
cap is TCP_RTO_MAX_MS, whose floor is 1 s, and since Linux 6.15 the retransmission budget of
tcp_retries2 is modelled with the socket's rto_max: with a 1 s cap a connection gave up after
about 14 s of outage where plain Reno waits about 925 s. tcpctl's sock_ops program now sets
TCP_USER_TIMEOUT to the namespace's baseline budget whenever a policy caps the RTO.

One run over one point-to-point hop with a 22 s outage: the connection lives through it (no
TcpExtTCPAbortOnTimeout, the flow's ``tcp_aborts`` 0), the RTO stayed capped (expirations about
a second apart, far more than doubling would give), and data flows again after the outage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from stack_run import skip_without_stack

from testbed import run as tbrun

pytestmark = [pytest.mark.netns]
RESULTS = Path(os.environ.get("TCPCTL_RESULTS", "results"))
OUTAGE = (5.0, 22.0)


@pytest.fixture(autouse=True)
def _prereq() -> None:
    skip_without_stack()


def test_fixed_rto_outlives_a_22_s_outage(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "name": "fixed-rto-give-up",
        "duration_s": 40,
        "stations": {"count": 2, "placement": {"kind": "line", "spacing_m": 100}},
        "mobility": {"model": "static"},
        "p2p": {"hops": [[1, 2]], "rate_bps": 2_000_000, "delay_ms": [5, 5]},
        "traffic": {"tcp": [{"src": 1, "dst": 2, "start_s": 0.5, "duration_s": 38}]},
        "routing": {"protocol": "static", "extensions": ["fixed_rto"]},
        "events": [{"t_s": OUTAGE[0], "op": "partition", "a": [1], "b": [2], "duration_s": OUTAGE[1]}],
    }
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps(data))
    with tbrun.Testbed(path, experiment="rto-policy-netns", out_root=RESULTS, quiet=True) as tb:
        summary = tb.run()
    d = tb.dir
    flow = summary["flows"][0]
    nstat = json.loads((d / "nstat" / "after.json").read_text())["sta1"]
    info = {
        "flow": flow,
        "aborts": nstat.get("TcpExtTCPAbortOnTimeout"),
        "timeouts": nstat.get("TcpExtTCPTimeouts"),
    }
    assert nstat.get("TcpExtTCPAbortOnTimeout", 0) == 0 and flow["tcp_aborts"] == 0, info
    # capped: about one expiration a second through the outage (doubling from 0.2 s: 6 or 7)
    assert nstat["TcpExtTCPTimeouts"] >= 14, info
    rows = [json.loads(line) for line in (d / "tcp" / "sta1.jsonl").read_text().splitlines()]
    after = [r for r in rows if r["t_s"] > OUTAGE[0] + OUTAGE[1] + 3 and r["state"] == "ESTAB"]
    assert after and max(int(r["bytes_acked"]) for r in after) > min(int(r["bytes_acked"]) for r in after), (
        info
    )
