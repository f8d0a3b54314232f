"""Per-connection observability of kernel TCP: a time series of cwnd, ssthresh, srtt, rto, backoff,
retransmissions and RTO timeouts, and the per-station nstat counters.

Sources: tcp_info over NETLINK_SOCK_DIAG (``DiagSampler``) inside each station's netns every
``interval_s`` (default 100 ms), joined with the BPF per-connection state (RTO expirations seen by
BPF_SOCK_OPS_RTO_CB, the exact RTO of each expiration) when the run loaded nodes.tcpctl.kernel;
``nstat -az`` (TcpExtTCPTimeouts = kernel RTO expirations, TcpRetransSegs, ...). Written as JSON
lines (one sample per line) and CSV; ``summary()`` gives the numbers for summary.json.
"""

from __future__ import annotations

import csv
import json
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

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


# ------------------------------------------------------------------ inet_diag without a subprocess

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
INET_DIAG_INFO, INET_DIAG_CONG = 2, 4
TCP_STATES = {
    1: "ESTAB",
    2: "SYN-SENT",
    3: "SYN-RECV",
    4: "FIN-WAIT-1",
    5: "FIN-WAIT-2",
    6: "TIME-WAIT",
    7: "CLOSE",
    8: "CLOSE-WAIT",
    9: "LAST-ACK",
    10: "LISTEN",
    11: "CLOSING",
}
_NLH = struct.Struct("=IHHII")
_REQ = struct.Struct("=BBBxI HH16s16sI8s")  # inet_diag_req_v2 (ports are big-endian in the id)
_MSG = struct.Struct("=BBBB HH16s16sI8s IIIII")  # inet_diag_msg
_ATTR = struct.Struct("=HH")
# struct tcp_info (include/uapi/linux/tcp.h): offsets of the fields we keep
_TI_U8 = {"ca_state": 1, "retransmits": 2, "probes": 3, "backoff": 4, "options": 5, "wscale": 6}
_TI_U32 = {
    "rto": 8,
    "snd_mss": 16,
    "rcv_mss": 20,
    "unacked": 24,
    "sacked": 28,
    "lost": 32,
    "retrans": 36,
    "rtt": 68,
    "rttvar": 72,
    "ssthresh": 76,
    "cwnd": 80,
    "total_retrans": 100,
    "snd_wnd": 228,
}
_TI_U64 = {"bytes_acked": 120, "bytes_sent": 200, "bytes_retrans": 208}
_TI_TOTAL_RTO = 240  # __u16 tcpi_total_rto (Linux 6.7): RTO timeouts of this connection
TS_FIELDS = (
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
    "rto_timeouts",
    "ca_state",
    "snd_wnd",
)
"""Columns of the per-connection time series written by ``DiagSampler`` (``rto_timeouts`` =
tcpi_total_rto, the kernel's count of RTO expirations of the connection)."""


def diag_socket() -> socket.socket:
    """A NETLINK_SOCK_DIAG socket; it queries the network namespace it was created in."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
    s.bind((0, 0))
    return s


_EXT = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1))


def diag_dump(
    sock: socket.socket, sport_filter: Callable[[int, int], bool] | None = None
) -> list[dict[str, Any]]:
    """All IPv4 TCP sockets (except LISTEN) with tcp_info and congestion control, as rows.

    A dump walks the kernel's whole established hash table, which every namespace shares unless
    ``tcp_child_ehash_entries`` is set: about 4 ms of kernel time here, whatever the namespace
    holds. ``diag_get`` asks for one known connection instead (a hash lookup).
    """
    states = 0xFFF & ~(1 << 10)
    req = _REQ.pack(socket.AF_INET, socket.IPPROTO_TCP, _EXT, states, 0, 0, b"", b"", 0, b"\xff" * 8)
    sock.send(_NLH.pack(_NLH.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + req)
    return _read_rows(sock, sport_filter)


def diag_get(sock: socket.socket, conn: str) -> dict[str, Any] | None:
    """One connection (``"10.0.0.1:40000->10.0.0.4:5201"``, local end first), or None if gone."""
    local, remote = conn.split("->")
    lip, lport = local.rsplit(":", 1)
    rip, rport = remote.rsplit(":", 1)
    req = _REQ.pack(
        socket.AF_INET,
        socket.IPPROTO_TCP,
        _EXT,
        0xFFF,
        socket.htons(int(lport)),
        socket.htons(int(rport)),
        socket.inet_aton(lip),
        socket.inet_aton(rip),
        0,
        b"\xff" * 8,
    )
    sock.send(_NLH.pack(_NLH.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 2, 0) + req)
    rows = _read_rows(sock, None, single=True)
    return rows[0] if rows else None


def _read_rows(
    sock: socket.socket, sport_filter: Callable[[int, int], bool] | None, single: bool = False
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        buf = sock.recv(1 << 17)
        off = 0
        while off + _NLH.size <= len(buf):
            ln, typ, _, _, _ = _NLH.unpack_from(buf, off)
            if typ == NLMSG_DONE or typ == NLMSG_ERROR or ln < _NLH.size:
                return rows
            row = _parse_diag(buf, off + _NLH.size, off + ln, sport_filter)
            if row is not None:
                rows.append(row)
            off += (ln + 3) & ~3
        if single:
            return rows


def _parse_diag(
    buf: bytes, start: int, end: int, keep: Callable[[int, int], bool] | None
) -> dict[str, Any] | None:
    fam, st, _, _, sp, dp, src, dst, _, _, _, _, _, _, _ = _MSG.unpack_from(buf, start)
    sport, dport = socket.ntohs(sp), socket.ntohs(dp)
    if keep is not None and not keep(sport, dport):
        return None
    local = f"{socket.inet_ntoa(src[:4])}:{sport}"
    remote = f"{socket.inet_ntoa(dst[:4])}:{dport}"
    row: dict[str, Any] = {"state": TCP_STATES.get(st, str(st)), "conn": f"{local}->{remote}"}
    off = start + _MSG.size
    while off + _ATTR.size <= end:
        alen, atype = _ATTR.unpack_from(buf, off)
        if alen < _ATTR.size:
            break
        data = buf[off + _ATTR.size : off + alen]
        if atype == INET_DIAG_CONG:
            row["cc"] = data.split(b"\0", 1)[0].decode()
        elif atype == INET_DIAG_INFO and len(data) >= 104:
            u32 = {k: struct.unpack_from("=I", data, o)[0] for k, o in _TI_U32.items() if o + 4 <= len(data)}
            u8 = {k: data[o] for k, o in _TI_U8.items()}
            row.update(
                cwnd=u32["cwnd"],
                ssthresh=u32["ssthresh"],
                srtt_ms=u32["rtt"] / 1000,
                rttvar_ms=u32["rttvar"] / 1000,
                rto_ms=u32["rto"] / 1000,
                backoff=u8["backoff"],
                retrans_total=u32["total_retrans"],
                retrans_now=u32["retrans"],
                lost=u32["lost"],
                unacked=u32["unacked"],
                ca_state=u8["ca_state"],
                snd_wnd=u32.get("snd_wnd"),
                options=u8["options"],  # TCPI_OPT_* bits: what the handshake negotiated
                snd_wscale=u8["wscale"] & 0x0F,
                rcv_wscale=u8["wscale"] >> 4,
                snd_mss=u32["snd_mss"],
                rcv_mss=u32["rcv_mss"],
            )
            for k, o in _TI_U64.items():
                if o + 8 <= len(data):
                    row[k] = struct.unpack_from("=Q", data, o)[0]
            if _TI_TOTAL_RTO + 2 <= len(data):
                row["rto_timeouts"] = struct.unpack_from("=H", data, _TI_TOTAL_RTO)[0]
        off += (alen + 3) & ~3
    return row


class DiagSampler:
    """Per-connection time series of several stations, one thread, no subprocesses.

    ``stations`` maps a label (``sta3``) to a network namespace name; one NETLINK_SOCK_DIAG socket
    is opened inside each (a socket keeps its namespace), then every ``interval_s`` one dump per
    station. ``ports`` limits the rows to connections with one of these ports at either end.
    ``clock`` gives the sample time (the run time of the orchestrator).

    Connections are discovered by a dump every ``discover_s`` (a dump costs ~4 ms of kernel time:
    see ``diag_dump``), and at every sample for ``kick_s`` after ``kick()`` (call it when a flow
    starts); known connections are sampled by one lookup each (~0.1 ms) every ``interval_s``.
    """

    def __init__(
        self,
        stations: dict[str, str],
        interval_s: float = 0.1,
        ports: set[int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        discover_s: float = 2.0,
        kick_s: float = 1.5,
    ) -> None:
        from nodes.tcpctl import nsutil

        self.interval_s = interval_s
        self.discover_s = discover_s
        self.known: dict[str, set[str]] = {label: set() for label in stations}
        self.kick_s = kick_s
        self._last_dump = -1e9
        self._kick_until = time.monotonic() + kick_s

        self.ports = ports
        self.clock = clock
        self.socks = {label: nsutil.in_netns(ns, diag_socket) for label, ns in stations.items()}
        self.samples: dict[str, list[dict[str, Any]]] = {label: [] for label in stations}
        self.cpu_s = 0.0
        self.n_dumps = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        """Discover connections at every sample for the next ``kick_s`` (a flow is starting)."""
        self._kick_until = time.monotonic() + self.kick_s

    def _keep(self, sport: int, dport: int) -> bool:
        return self.ports is None or sport in self.ports or dport in self.ports

    def sample_once(self) -> None:
        c0 = time.thread_time()
        mono = time.monotonic()
        dump = mono - self._last_dump >= self.discover_s or mono < self._kick_until
        if dump:
            self._last_dump = time.monotonic()
        for label, s in self.socks.items():
            t = round(self.clock(), 4)
            rows: list[dict[str, Any]] = []
            try:
                if dump:
                    rows = diag_dump(s, self._keep)
                    self.known[label] = {r["conn"] for r in rows if r["state"] not in ("TIME-WAIT", "CLOSE")}
                    self.n_dumps += 1
                else:
                    for conn in list(self.known[label]):
                        r = diag_get(s, conn)
                        if r is None:
                            self.known[label].discard(conn)
                        else:
                            rows.append(r)
            except OSError:
                continue
            for r in rows:
                r["t_s"] = t
            self.samples[label].extend(rows)
        self.cpu_s += time.thread_time() - c0

    def start(self) -> DiagSampler:
        def loop() -> None:
            nxt = time.monotonic()
            while not self._stop.is_set():
                self.sample_once()
                nxt += self.interval_s
                self._stop.wait(max(0.0, nxt - time.monotonic()))

        self._thread = threading.Thread(target=loop, daemon=True, name="tcp-diag-sampler")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for s in self.socks.values():
            s.close()
        self.socks = {}

    def series(self, label: str, conn: str) -> list[dict[str, Any]]:
        return [s for s in self.samples.get(label, []) if s["conn"] == conn]

    def write(self, out_dir: Path) -> list[str]:
        """``<label>.csv`` and ``<label>.jsonl`` per station with samples; returns the labels."""
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for label, rows in self.samples.items():
            if not rows:
                continue
            with open(out_dir / f"{label}.jsonl", "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            with open(out_dir / f"{label}.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=TS_FIELDS, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
            written.append(label)
        return written


def _estimator_rto_p50(series: list[dict[str, Any]]) -> float | None:
    """The median over the samples of the RTO the estimator set (samples at backoff 0: a
    backed-off RTO is the timer's, not the estimator's), ms; None without such a sample. Tells
    an estimator inflated by long RTT samples (an agent's copies) from earlier repair."""
    rtos = sorted(float(s["rto_ms"]) for s in series if s.get("rto_ms") and not s.get("backoff"))
    if not rtos:
        return None
    mid = len(rtos) // 2
    return rtos[mid] if len(rtos) % 2 else (rtos[mid - 1] + rtos[mid]) / 2


def conn_summary(series: list[dict[str, Any]]) -> dict[str, Any]:
    """One connection's time series in numbers (for summary.json)."""
    if not series:
        return {}
    last = series[-1]
    return {
        "samples": len(series),
        "cc": last.get("cc"),
        "rto_timeouts": max(int(s.get("rto_timeouts", 0) or 0) for s in series),
        "max_backoff": max(int(s.get("backoff", 0) or 0) for s in series),
        "max_rto_ms": max(float(s.get("rto_ms", 0) or 0) for s in series),
        "p50_rto_ms": _estimator_rto_p50(series),
        "retrans_total": max(int(s.get("retrans_total", 0) or 0) for s in series),
        "max_cwnd": max(int(s.get("cwnd", 0) or 0) for s in series),
        "bytes_acked": int(last.get("bytes_acked", 0) or 0),
    }


#: A sampled congestion-control state out of range (bpf/common.bpf.h ``cc_repair``): ssthresh
#: above TCP_INFINITE_SSTHRESH, or cwnd above 2^20 packets. Not an ssthresh above 2^20 below
#: 0x7fffffff: ABRA's "ssthresh/4" (tcpctl.bpf.c) of a never-reduced ssthresh is 0x1fffffff, a
#: value the paper's algorithm produces. A fault's inflated cwnd that reaches ssthresh through
#: prior_ssthresh is caught by the cwnd repair instead (``tcp_cc_repairs``, which makes a run invalid).
SSTHRESH_MAX: Final = 0x7FFFFFFF
CWND_SANE_MAX: Final = 1 << 20


def out_of_range(sample: Mapping[str, Any]) -> bool:
    """Whether one tcp_info sample shows a congestion-control state no implementation produces
    (docs/tcpctl.md "Out-of-range ssthresh and cwnd")."""
    try:
        ssthresh = int(float(sample.get("ssthresh") or 0))
        cwnd = int(float(sample.get("cwnd") or 0))
    except (TypeError, ValueError):
        return False
    return ssthresh > SSTHRESH_MAX or cwnd > CWND_SANE_MAX


def out_of_range_episodes(samples: Iterable[Mapping[str, Any]]) -> int:
    """Episodes (runs of consecutive samples of one connection) with the state out of range: what
    the sampler saw of faults the BPF repair did not catch first (runs made before it: all)."""
    n = 0
    bad: dict[str, bool] = {}
    for s in samples:
        conn = str(s.get("conn", ""))
        now = out_of_range(s)
        if now and not bad.get(conn, False):
            n += 1
        bad[conn] = now
    return n


def srtt_error(st: dict[str, Any], err_unit_us: int) -> dict[str, Any]:
    """The kernel estimator's error over one connection, from its BPF state (``tcpctl_st``).

    Cohen & Levin Fig. 7(b): "the variance of the SRTT normalized with respect to the RTT
    expectation, i.e. Var(SRTT)/E[RTT] = E[(SRTT - RTT)^2]/E[RTT]", over every RTT sample the
    kernel took (RTT_CB), SRTT being the estimate that sample found. ``norm_var_s`` is that ratio
    with times in seconds (s^2 / s); ``rmse_ms`` its numerator's root. Empty without samples.
    """
    n = int(st.get("rtt_err_n", 0) or 0)
    if n <= 0:
        return {}
    mean_rtt_s = int(st["rtt_sum_us"]) / n / 1e6
    mse_s2 = int(st["rtt_sqerr"]) * (err_unit_us / 1e6) ** 2 / n
    return {
        "samples": n,
        "mean_rtt_ms": round(mean_rtt_s * 1e3, 3),
        "rmse_ms": round(mse_s2**0.5 * 1e3, 3),
        "norm_var_s": round(mse_s2 / mean_rtt_s, 6) if mean_rtt_s > 0 else None,
    }
