"""Liu & Singh 2001's network events on the real stack (issue 12, item 4), in short p2p chains:

    sta1 (sender, ATCP) -- sta2 -- sta3 -- sta4 (iperf3 server), point-to-point links

- a partition (scripted ``partition`` event) cuts sta2-sta3: sta2's router sends a real ICMP
  Destination Unreachable (host) to sta1 (nodes/core/icmp.py), which tshark decodes on sta1's
  air interface and sta1's ATCP takes as ``disconnected``; the flow goes on after the cut heals;
- congestion windows on sta2 -> sta3 (``p2p.congestion``) mark the ECN-capable data segments CE
  in the medium: sta4's kernel counts CE packets and echoes ECE, sta1's ATCP enters
  ``congested`` and Linux Reno enters CWR (ssthresh set) before any retransmission.

One run each, ~15 s, coarse invariants. Results: ``results/liu-events-netns/<runid>/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodes.tcpctl import kernel as K
from testbed import run as tbrun
from testbed.medium import MEDIUM_BIN

pytestmark = [pytest.mark.netns]
RESULTS = Path(os.environ.get("TCPCTL_RESULTS", "results"))
INFINITE_SSTHRESH = 0x7FFFFFFF
"""Linux's TCP_INFINITE_SSTHRESH: ssthresh before the first reduction."""
TCP_CA_CWR = 2
"""Linux's tcp_ca_state: the sender reduces its window after an ECN echo (RFC 3168 6.1.2)."""


@pytest.fixture(autouse=True)
def _prereq() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not K.TCPCTL_OBJ.exists() or not MEDIUM_BIN.exists():
        pytest.skip("BPF objects or the medium not built (make setup)")


def scenario(tmp: Path, name: str, duration_s: float, **extra: Any) -> Path:
    """4 stations on p2p hops of 512 kbit/s, 5 ms; Reno from sta1 to sta4 at 1 s; ATCP."""
    data: dict[str, Any] = {
        "name": name,
        "duration_s": duration_s,
        "stations": {"count": 4, "placement": {"kind": "line", "spacing_m": 200}},
        "mobility": {"model": "static"},
        "p2p": {"hops": [[1, 2], [2, 3], [3, 4]], "rate_bps": 512000, "delay_ms": [5, 5]},
        "traffic": {"tcp": [{"src": 1, "dst": 4, "start_s": 1, "cc": "reno"}]},
        "routing": {"protocol": "static", "extensions": ["atcp"]},
        "tcp": {"cc": "reno"},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    p = tmp / f"{name}.json"
    p.write_text(json.dumps(data))
    return p


def run(path: Path) -> tuple[dict[str, Any], Path]:
    with tbrun.Testbed(
        path,
        experiment="liu-events-netns",
        out_root=RESULTS,
        router_target="nodes.router.main:run",
        quiet=True,
    ) as tb:
        summary = tb.run()
        return summary, tb.dir


def router(run_dir: Path, sid: int) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((run_dir / "routers" / f"sta{sid}.counters.json").read_text())
    return out


def atcp_history(c: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(old, new, cause) of every ATCP transition of the station's connections."""
    conns = c["extensions"]["atcp"]["conns"]
    return [(h[1], h[2], h[3]) for v in conns.values() for h in v["history"]]


def test_partition_sends_a_real_icmp_host_unreachable_and_atcp_disconnects(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "liu-partition",
        14,
        routing={"icmp": {"unreachable": True}},
        events=[{"t_s": 5, "op": "partition", "a": [1, 2], "b": [3, 4], "duration_s": 3}],
        capture={"pcap": True, "stations": [1]},
    )
    summary, run_dir = run(path)
    r1, r2 = router(run_dir, 1), router(run_dir, 2)
    record = {"sta2_extra": r2["counters"]["extra"], "atcp": r1.get("extensions", {}).get("atcp", {})}
    (run_dir / "liu_events_test.json").write_text(json.dumps(record, indent=1))
    # sta2 lost its next hop and told the source (rate-limited: a burst, then ~1 a second)
    assert r2["counters"]["drops"].get("link_failure", 0) > 0, record
    sent = r2["counters"]["extra"].get("icmp_unreachable_sent", 0)
    assert 1 <= sent <= 6 + 4, record
    # ATCP at sta1: disconnected on the ICMP, back to normal when a probe is answered
    hist = atcp_history(r1)
    assert r1["extensions"]["atcp"]["counters"]["disconnected"] >= 1, record
    assert ("NORMAL", "DISCONNECTED", "ICMP Destination Unreachable") in hist or any(
        new == "DISCONNECTED" for _, new, _ in hist
    ), hist
    i = max(k for k, (_, new, _) in enumerate(hist) if new == "DISCONNECTED")
    assert any(new == "NORMAL" for _, new, _ in hist[i:]), hist
    assert r1["counters"]["drops"].get("tcpctl_icmp_consumed", 0) >= 1, r1["counters"]["drops"]
    assert summary["flows"][0]["bytes_received"] > 0
    # a real packet on sta1's air interface: tshark decodes type 3 code 1 from sta2, quoting the flow
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    (pcap,) = sorted(run_dir.rglob("*sta1*.pcap*"))
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(pcap),
            "-Y",
            "icmp.type == 3 && icmp.code == 1",
            "-T",
            "fields",
            "-e",
            "ip.src",
            "-e",
            "tcp.dstport",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split("\n")
    rows = [line.split("\t") for line in out if line.strip()]
    assert rows, "no ICMP host unreachable on sta1's air interface"
    assert all(r[0] == "10.0.0.2,10.0.0.1" and r[1] == "5201" for r in rows), rows  # outer, quoted


def test_congestion_windows_mark_ce_and_atcp_enters_congested(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "liu-congestion",
        12,
        p2p={"congestion": [{"hop": [2, 3], "period_s": 2, "duration_s": 0.3, "start_s": 3}]},
        tcp={"ecn": True},
    )
    summary, run_dir = run(path)
    med = json.loads((run_dir / "medium" / "counters.json").read_text())["p2p"]
    r1 = router(run_dir, 1)
    nstat = json.loads((run_dir / "nstat" / "after.json").read_text())
    series = [
        json.loads(line) for line in (run_dir / "tcp" / "sta1.jsonl").read_text().splitlines() if line.strip()
    ]
    data_conn = max(
        {s["conn"] for s in series},
        key=lambda c: max(s.get("bytes_sent") or 0 for s in series if s["conn"] == c),
    )
    # Linux's reaction to ECE: CWR (ca_state 2) with ssthresh set before any retransmission
    cwr = [
        (s["t_s"], s["cwnd"], s["ssthresh"])
        for s in series
        if s["conn"] == data_conn and s["ca_state"] == TCP_CA_CWR and s["retrans_total"] == 0
    ]
    record = {
        "medium_p2p": med,
        "atcp": r1.get("extensions", {}).get("atcp", {}),
        "sta4_InCE": nstat["sta4"].get("IpExtInCEPkts"),
        "sta1_DeliveredCE": nstat["sta1"].get("TcpExtTCPDeliveredCE"),
        "cwr_before_any_retransmission": cwr,
    }
    (run_dir / "liu_events_test.json").write_text(json.dumps(record, indent=1))
    assert med["ce_marked"] >= 2, record  # windows at 3, 5, 7, 9 s
    assert nstat["sta4"].get("IpExtInCEPkts", 0) >= 2, record  # the receiver's kernel saw CE
    assert nstat["sta1"].get("TcpExtTCPDeliveredCE", 0) > 0, record  # ... and echoed it (ECE)
    # sta1's ATCP: the ECE the receiver echoed moved it to congested (Fig. 2)
    assert r1["extensions"]["atcp"]["counters"]["congested"] >= 1, record
    assert any(new == "CONGESTED" and cause == "ECN" for _, new, cause in atcp_history(r1)), record
    # Linux Reno reduced its window on ECE: CWR with ssthresh set, nothing retransmitted yet
    assert cwr and cwr[0][0] >= 3.0 and cwr[0][2] < INFINITE_SSTHRESH, record
    assert summary["flows"][0]["bytes_received"] > 0
