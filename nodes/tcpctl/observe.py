"""Per-connection observability of kernel TCP: a time series of cwnd, ssthresh, srtt, rto, backoff,
retransmissions and RTO timeouts, and the per-station nstat counters.

Sources: ``ss -tin`` (inet_diag + tcp_info) sampled inside the station's netns every
``interval_s`` (default 100 ms), joined with the BPF per-connection state (RTO expirations seen by
BPF_SOCK_OPS_RTO_CB, the exact RTO of each expiration) when the run loaded nodes.tcpctl.kernel;
``nstat -az`` (TcpExtTCPTimeouts = kernel RTO expirations, TcpRetransSegs, ...). Written as JSON
lines (one sample per line) and CSV; ``summary()`` gives the numbers for summary.json.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIELDS = (
    "t_s",
    "conn",
    "state",
    "cc",
    "cwnd",
    "ssthresh",
    "srtt_ms",
    "rttvar_ms",
    "rto_ms",
    "backoff",
    "retrans_total",
    "retrans_now",
    "lost",
    "unacked",
    "bytes_acked",
    "bytes_sent",
    "n_rto_bpf",
)
_NUM = r"([0-9.]+)"
_PATTERNS = {
    "cwnd": re.compile(r"\bcwnd:(\d+)"),
    "ssthresh": re.compile(r"\bssthresh:(\d+)"),
    "rtt": re.compile(rf"\brtt:{_NUM}/{_NUM}"),
    "rto_ms": re.compile(rf"\brto:{_NUM}"),
    "backoff": re.compile(r"\bbackoff:(\d+)"),
    "retrans": re.compile(r"\bretrans:(\d+)/(\d+)"),
    "lost": re.compile(r"\blost:(\d+)"),
    "unacked": re.compile(r"\bunacked:(\d+)"),
    "bytes_acked": re.compile(r"\bbytes_acked:(\d+)"),
    "bytes_sent": re.compile(r"\bbytes_sent:(\d+)"),
}
_ADDR = re.compile(r"^(\S+)\s+\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)")


def parse_ss(text: str) -> list[dict[str, Any]]:
    """Parse ``ss -tinH`` output (a header-less pair of lines per socket) into dicts."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _ADDR.match(line.strip())
        if m and not line.startswith(("\t", " ")):
            cur = {
                "state": m.group(1),
                "local": f"{m.group(2)}:{m.group(3)}",
                "remote": f"{m.group(4)}:{m.group(5)}",
            }
            cur["conn"] = f"{cur['local']}->{cur['remote']}"
            out.append(cur)
            continue
        if cur is None:
            continue
        info = line.strip()
        cc = info.split()[0] if info else ""
        cur["cc"] = cc if ":" not in cc else ""
        for k, pat in _PATTERNS.items():
            mm = pat.search(info)
            if not mm:
                continue
            if k == "rtt":
                cur["srtt_ms"], cur["rttvar_ms"] = float(mm.group(1)), float(mm.group(2))
            elif k == "retrans":
                cur["retrans_now"], cur["retrans_total"] = int(mm.group(1)), int(mm.group(2))
            elif k == "rto_ms":
                cur[k] = float(mm.group(1))
            else:
                cur[k] = int(mm.group(1))
        cur.setdefault("backoff", 0)
        cur.setdefault("retrans_total", 0)
    return out


def parse_nstat(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0][0].isalpha() and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def nstat(netns: str | None) -> dict[str, int]:
    """Absolute counters of a network namespace (``nstat -az``, which does not touch history)."""
    cmd = ["nstat", "-az", "--json"]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    try:
        d = json.loads(r.stdout)
        return {k: int(v) for k, v in d.get("kernel", d).items()}
    except json.JSONDecodeError:
        return parse_nstat(r.stdout)


@dataclass
class Sampler:
    """Samples ``ss -tin`` of one netns in a thread; ``bpf_state(conn_str)`` adds BPF fields."""

    netns: str | None
    interval_s: float = 0.1
    filter: str = ""
    bpf_state: Callable[[str], dict[str, Any] | None] | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    t0: float = field(default_factory=time.monotonic)

    def sample_once(self) -> list[dict[str, Any]]:
        cmd = ["ss", "-tinH", *shlex.split(self.filter)]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True)
        t = time.monotonic() - self.t0
        rows = parse_ss(r.stdout)
        for row in rows:
            row["t_s"] = round(t, 4)
            if self.bpf_state is not None:
                st = self.bpf_state(row["conn"])
                if st is not None:
                    row["n_rto_bpf"] = st.get("n_rto")
        self.samples.extend(rows)
        return rows

    def start(self) -> Sampler:
        def loop() -> None:
            while not self._stop.is_set():
                t = time.monotonic()
                self.sample_once()
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - t)))

        self._thread = threading.Thread(target=loop, daemon=True, name="ss-sampler")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)

    def series(self, conn: str) -> list[dict[str, Any]]:
        return [s for s in self.samples if s["conn"] == conn]

    def busiest(self) -> str | None:
        """The connection that sent the most bytes (an iperf3 data connection)."""
        best: dict[str, int] = {}
        for s in self.samples:
            best[s["conn"]] = max(
                best.get(s["conn"], 0), int(s.get("bytes_sent", s.get("bytes_acked", 0)) or 0)
            )
        return max(best, key=lambda k: best[k]) if best else None

    def write(self, out_dir: Path, name: str = "tcp") -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        with open(out_dir / f"{name}.jsonl", "w") as f:
            for s in self.samples:
                f.write(json.dumps(s) + "\n")
        with open(out_dir / f"{name}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.samples)


def rto_intervals(series: list[dict[str, Any]]) -> list[float]:
    """Distinct RTO values (ms) while backoff grows, in order: the exponential backoff made visible."""
    out: list[float] = []
    last_b = 0
    for s in series:
        b = int(s.get("backoff", 0))
        if b > last_b and "rto_ms" in s:
            out.append(float(s["rto_ms"]))
        last_b = b
    return out


def summary(
    before: dict[str, int], after: dict[str, int], series: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Numbers for summary.json: timeouts = kernel RTO expirations (TcpExtTCPTimeouts)."""
    keys = (
        "TcpExtTCPTimeouts",
        "TcpRetransSegs",
        "TcpExtTCPLossProbes",
        "TcpExtTCPSpuriousRTOs",
        "TcpExtTCPLostRetransmit",
        "TcpExtTCPFastRetrans",
        "TcpOutSegs",
        "TcpInSegs",
    )
    d: dict[str, Any] = {k: after.get(k, 0) - before.get(k, 0) for k in keys}
    d["timeouts"] = d["TcpExtTCPTimeouts"]
    if series:
        d["max_backoff"] = max(int(s.get("backoff", 0)) for s in series)
        d["max_rto_ms"] = max(float(s.get("rto_ms", 0)) for s in series)
    return d
