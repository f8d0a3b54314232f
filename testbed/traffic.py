"""Scenario traffic with iperf3: one server and one client per flow, started at the flow's time.

TCP flow ``i``: ``iperf3 -s -1 -J -p 5201+i`` in the destination, then at ``start_s``
``iperf3 -c <dst ip> -p <port> -t <duration> -J -C <cc> -M <mss> [-w <window bytes>]`` in the
source (iperf3 3.12 supports ``--congestion``). ``max_window_pkts`` becomes ``-w
max_window_pkts * mss``: the socket buffers on both ends, which bounds the advertised window and
so the flight size to about that many segments (an approximation of ns-2's ``window_``). UDP
flows are iperf3 ``-u -b <rate> -l <size>`` CBR. Each process writes its JSON straight into
``results/.../flows/``. A TCP flow with ``transfer_bytes`` (a file transfer) uses
testbed/xfer.py instead of iperf3, whose byte-count mode stops the receiver before a slow path
has delivered the file; its records are parsed by ``parse_flow`` as well.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed import netns
from testbed.station import Station
from testbed.xfer import TransferRecord
from topologies.scenario import Scenario, TcpFlow, UdpFlow

BASE_PORT = 5201
#: the file-transfer tool run in the stations (standard library only)
XFER = Path(__file__).resolve().parent / "xfer.py"
RCV_TIMEOUT_MIN_MS = 120_000
"""iperf3's default ``--rcv-timeout`` (ms): a server never waits less for data than that."""


def node_label(end: int | str) -> str:
    """``sta3`` for station 3, the name for a wired host."""
    return f"sta{end}" if isinstance(end, int) else end


@dataclass
class Flow:
    id: str
    proto: str  # "tcp" | "udp"
    spec: TcpFlow | UdpFlow
    port: int
    client_json: Path
    server_json: Path
    server: subprocess.Popen[bytes] | None = None
    client: subprocess.Popen[bytes] | None = None
    started_at_s: float | None = None  # run time at which the client started
    done: bool = False
    result: dict[str, Any] = field(default_factory=dict)
    cc_name: str | None = None  # the kernel's name for spec.cc when it differs (vegas_<runid>, ...)

    @property
    def src(self) -> int | str:
        return self.spec.src

    @property
    def dst(self) -> int | str:
        return self.spec.dst

    @property
    def file_transfer(self) -> TcpFlow | None:
        """The spec of a TCP flow that moves ``transfer_bytes`` (timed by testbed/xfer.py, not
        iperf3: see there why), else None."""
        s = self.spec
        return s if isinstance(s, TcpFlow) and s.transfer_bytes is not None else None

    @property
    def tool(self) -> str:
        """The program that runs this flow: ``xfer`` for a file transfer, else ``iperf3``."""
        return "xfer" if self.file_transfer is not None else "iperf3"

    def stdout_path(self, record: Path) -> Path:
        """Where a process of this flow writes its output: iperf3's JSON is its stdout; xfer
        writes its record itself (at exit, also when signalled), so its output goes beside it."""
        return record if self.file_transfer is None else record.with_suffix(".log")

    def _window_bytes(self) -> int | None:
        s = self.spec
        return (
            s.max_window_pkts * s.segment_bytes
            if isinstance(s, TcpFlow) and s.max_window_pkts is not None
            else None
        )

    def server_argv(self) -> list[str]:
        if self.file_transfer is not None:
            argv = [
                sys.executable,
                str(XFER),
                "recv",
                "--port",
                str(self.port),
                "--json",
                str(self.server_json),
            ]
            w = self._window_bytes()
            return argv + (["--window", str(w)] if w else [])
        # a TCP receiver waits for data as long as the flow may last (iperf3's own 120 s would end
        # the test in a long outage, e.g. a partition with the sender's probes 60-120 s apart)
        argv = ["iperf3", "-s", "-1", "-J", "-p", str(self.port)]
        if self.proto == "tcp" and self.spec.duration_s is not None:
            argv += ["--rcv-timeout", str(max(RCV_TIMEOUT_MIN_MS, round(self.spec.duration_s * 1000)))]
        return argv

    def client_argv(self, dst_ip: str, default_duration_s: float) -> list[str]:
        s = self.spec
        ft = self.file_transfer
        if ft is not None:
            argv = [sys.executable, str(XFER), "send", "--to", dst_ip, "--port", str(self.port)]
            argv += [
                "--json",
                str(self.client_json),
                "--bytes",
                str(ft.transfer_bytes),
                "--mss",
                str(ft.segment_bytes),
            ]
            limit = ft.duration_s if ft.duration_s is not None else default_duration_s
            argv += ["--limit", f"{limit:g}"]
            if ft.cc:
                argv += ["--cc", self.cc_name or ft.cc]
            w = self._window_bytes()
            return argv + (["--window", str(w)] if w else [])
        argv = ["iperf3", "-c", dst_ip, "-p", str(self.port), "-J"]
        dur = s.duration_s if s.duration_s is not None else default_duration_s
        argv += ["-t", f"{max(1, round(dur))}"]
        if isinstance(s, TcpFlow):
            if s.cc:
                argv += ["-C", self.cc_name or s.cc]
            argv += ["-M", str(s.segment_bytes)]
            w = self._window_bytes()
            if w is not None:
                argv += ["-w", str(w)]
        else:
            argv += ["-u", "-b", str(int(s.rate_bps)), "-l", str(s.size_bytes)]
        return argv


def make_flows(scenario: Scenario, flows_dir: Path) -> list[Flow]:
    flows: list[Flow] = []
    specs: list[tuple[str, TcpFlow | UdpFlow]] = [("tcp", f) for f in scenario.traffic.tcp]
    specs += [("udp", f) for f in scenario.traffic.udp]
    counts = {"tcp": 0, "udp": 0}
    for i, (proto, spec) in enumerate(specs):
        fid = f"{proto}{counts[proto]}"
        counts[proto] += 1
        flows.append(
            Flow(
                fid,
                proto,
                spec,
                BASE_PORT + i,
                flows_dir / f"{fid}.client.json",
                flows_dir / f"{fid}.server.json",
            )
        )
    return flows


def listening_ports(ns: str) -> set[int]:
    """TCP ports in LISTEN state in namespace ``ns`` (its own /proc/net/tcp and tcp6)."""

    def read() -> list[str]:
        lines = []
        for name in ("tcp", "tcp6"):
            try:
                with open(f"/proc/thread-self/net/{name}") as f:
                    lines += f.read().splitlines()[1:]
            except FileNotFoundError:
                pass
        return lines

    ports = set()
    for line in netns.in_netns(ns, read):
        parts = line.split()
        if len(parts) > 3 and parts[3] == "0A":
            ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def start_servers(flows: list[Flow], stations: Mapping[int | str, Station], timeout_s: float = 10.0) -> None:
    for fl in flows:
        out = open(fl.stdout_path(fl.server_json), "wb")
        fl.server = stations[fl.dst].popen(
            fl.server_argv(),
            role=f"{fl.tool}-server:{fl.id}",
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()
    deadline = time.monotonic() + timeout_s
    pending: dict[int | str, set[int]] = {fl.dst: set() for fl in flows}
    for fl in flows:
        pending[fl.dst].add(fl.port)
    while pending and time.monotonic() < deadline:
        for dst in list(pending):
            pending[dst] -= listening_ports(stations[dst].netns)
            if not pending[dst]:
                del pending[dst]
        if pending:
            time.sleep(0.02)
    if pending:
        raise RuntimeError(f"flow servers not listening after {timeout_s} s: {pending}")


def start_client(
    fl: Flow, stations: Mapping[int | str, Station], default_duration_s: float, now_s: float
) -> None:
    out = open(fl.stdout_path(fl.client_json), "wb")
    fl.client = stations[fl.src].popen(
        fl.client_argv(stations[fl.dst].ip, default_duration_s),
        role=f"{fl.tool}-client:{fl.id}",
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    fl.started_at_s = now_s


def stop_proc(proc: subprocess.Popen[bytes] | None, grace_s: float = 2.0) -> None:
    """SIGINT (iperf3 and tcpdump then write their output), SIGTERM, SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def load_json(path: Path) -> dict[str, Any] | None:
    """An iperf3 ``-J`` output file (text before the JSON skipped); None if absent or cut short."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    start = text.find("{")
    if start < 0:
        return None
    try:
        data: dict[str, Any] = json.loads(text[start:])
        return data
    except ValueError:
        return None


def bytes_in_window(server: dict[str, Any], window_s: float) -> tuple[int, bool]:
    """Bytes the receiver got in the intervals that began within the flow's ``window_s``.

    The server's per-interval records are the receiver-side truth for TCP and UDP alike; they
    survive an interrupted test (iperf3's end-of-test exchange runs over the same lossy multi-hop
    path and may not finish), and iperf3 3.12's UDP server ``end.sum`` reports 0 bytes.
    Returns (bytes, whether any interval was found).
    """
    total = 0
    found = False
    for iv in server.get("intervals") or []:
        s = iv.get("sum") or {}
        if s.get("omitted"):
            continue
        found = True
        if float(s.get("start", 0.0)) < window_s - 1e-6:
            total += int(s.get("bytes", 0))
    return total, found


def parse_flow(fl: Flow) -> dict[str, Any]:
    """Receiver-side throughput over the flow's duration, and sender retransmits.

    throughput_bps = 8 x (bytes the receiver got in the flow's nominal duration) / duration.
    A test whose final iperf3 exchange did not complete (path broken at the end, runner stopped
    it) keeps its numbers and is flagged ``interrupted``; ``error`` is set only when there is no
    receiver data at all.
    """
    if fl.file_transfer is not None:
        return parse_transfer(
            fl.file_transfer, TransferRecord.load(fl.client_json), TransferRecord.load(fl.server_json)
        )
    client, server = load_json(fl.client_json), load_json(fl.server_json)
    res: dict[str, Any] = {
        "throughput_bps": None,
        "retransmits": None,
        "bytes_received": None,
        "interrupted": False,
        "error": None,
    }
    errors = [d["error"] for d in (client, server) if d and "error" in d]
    res["interrupted"] = any("interrupt" in e for e in errors)
    s = fl.spec
    window = float(s.duration_s) if s.duration_s is not None else 0.0
    got, found = bytes_in_window(server or {}, window) if window > 0 else (0, False)
    if found:
        res["bytes_received"] = got
        res["throughput_bps"] = 8.0 * got / window
    else:
        recv = (server or {}).get("end", {}).get("sum_received") or (client or {}).get("end", {}).get(
            "sum_received"
        )
        if recv:
            res["throughput_bps"] = float(recv.get("bits_per_second") or 0.0)
            res["bytes_received"] = int(recv.get("bytes") or 0)
        elif server is not None and window > 0:
            # the receiver ran but no data reached it in the flow's time (e.g. no route ever
            # found in a partitioned topology): a measured zero, not a failure of the tool
            res["bytes_received"] = 0
            res["throughput_bps"] = 0.0
            res["no_data"] = True
    if fl.proto == "tcp":
        sent = (client or {}).get("end", {}).get("sum_sent")
        if sent and "retransmits" in sent:
            res["retransmits"] = int(sent["retransmits"])
    else:
        rsum = (server or {}).get("end", {}).get("sum_received") or {}
        res["lost_percent"] = rsum.get("lost_percent")
    if res["throughput_bps"] is None:
        res["error"] = "; ".join(errors) if errors else "no iperf3 receiver output"
    return res


def parse_transfer(
    spec: TcpFlow, sender: TransferRecord | None, receiver: TransferRecord | None
) -> dict[str, Any]:
    """A file transfer's row (testbed/xfer.py records): ``transfer_time_s`` from the sender's
    connect to the receiver's EOF, only when the receiver got every byte; throughput over that
    time, or over the receiver's time so far when the run stopped it (``interrupted``)."""
    res: dict[str, Any] = {
        "throughput_bps": None,
        "retransmits": sender.retransmits if sender else None,
        "bytes_received": receiver.bytes if receiver else None,
        "interrupted": False,
        "error": None,
    }
    errors = [r.error for r in (sender, receiver) if r is not None and r.error]
    res["interrupted"] = any("interrupted" in e for e in errors)
    failures = [e for e in errors if "interrupted" not in e]  # a tool or socket error, not the run's end
    if receiver is None:
        # the sender completes only after the receiver's close, i.e. after it had every byte
        done = sender is not None and sender.complete and sender.start_mono_s is not None
        res["file_delivered"] = done
        if done and sender is not None and sender.end_mono_s is not None and sender.start_mono_s is not None:
            res["transfer_time_s"] = sender.end_mono_s - sender.start_mono_s
            res["throughput_bps"] = 8.0 * sender.bytes / res["transfer_time_s"]
        else:
            res["error"] = "; ".join(errors) if errors else "no transfer receiver output"
        return res
    start = sender.start_mono_s if sender and sender.start_mono_s is not None else receiver.start_mono_s
    whole = receiver.complete and receiver.bytes >= (spec.transfer_bytes or 0)
    res["file_delivered"] = whole  # experiments.aggregate: no transfer time, and a failed flow, if not
    if whole and start is not None and receiver.end_mono_s is not None:
        t = receiver.end_mono_s - start
        res["transfer_time_s"] = t
        res["throughput_bps"] = 8.0 * receiver.bytes / t if t > 0 else None
    elif receiver.start_mono_s is None:
        res["throughput_bps"] = 0.0  # never connected (no route in the run's time): a measured zero
        res["no_data"] = True
        if failures:  # ... unless the sender failed for a reason of its own: say so
            res["error"] = "; ".join(failures)
    else:
        t = (receiver.end_mono_s or receiver.start_mono_s) - (
            start if start is not None else receiver.start_mono_s
        )
        res["throughput_bps"] = 8.0 * receiver.bytes / t if t > 0 else 0.0
        if failures:  # the sender's socket failed (e.g. ETIMEDOUT: the kernel gave the connection up)
            res["error"] = "; ".join(failures)
        elif not res["interrupted"] and receiver.complete:
            res["error"] = f"the connection closed after {receiver.bytes} of {spec.transfer_bytes} bytes"
    return res
