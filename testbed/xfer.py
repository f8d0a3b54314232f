"""A timed file transfer over real kernel TCP: the traffic tool of flows with ``transfer_bytes``.

Why not ``iperf3 -n``: iperf3 ends a byte-count test when the *sender has written* the bytes into
its socket, then tells the server over its control connection to stop; on a slow path (Liu &
Singh's 4 hops of 32 kbit/s) nearly all of the file is still in the sender's socket buffer then,
and the server counted 176 of 20000 bytes in 0.8 s (tests/netns/test_p2p_netns.py). A file
transfer time is the time until the receiver has the whole file, so this tool times exactly that:

- ``recv``: listen on ``--port``, accept one connection, read until EOF, close.
- ``send``: connect (with the flow's congestion control, MSS and window), write ``--bytes``,
  shut the write side, wait for the receiver's close (so the process ends when the file has
  arrived), read the kernel's total retransmissions (``TCP_INFO``).

Each writes one JSON record (``TransferRecord``) to ``--json`` when it ends, also on SIGINT or
SIGTERM (the runner stops a flow still running at the end of a run that way). Times are
``CLOCK_MONOTONIC``, which every network namespace shares, so the runner takes the transfer
time as the receiver's EOF minus the sender's connect. Standard library only: it runs as
``python3 xfer.py`` inside a station's namespace.
"""

from __future__ import annotations

import argparse
import errno
import json
import signal
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

#: bytes per ``send``/``recv`` call
CHUNK = 65536
#: ``struct tcp_info`` (include/uapi/linux/tcp.h): 8 bytes of u8 fields, then u32 fields;
#: ``tcpi_total_retrans`` is the 24th u32.
TCP_INFO_TOTAL_RETRANS_OFFSET = 8 + 23 * 4
TCP_INFO_LEN = 104
#: errors of ``connect`` the sender retries (until its ``--limit``): the receiver not yet listening,
#: no route yet (an ICMP Destination Unreachable aborts a SYN_SENT socket), the SYNs timed out
RETRY_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT})
#: pause between two connection attempts, s
CONNECT_RETRY_PAUSE_S = 0.05


@dataclass
class TransferRecord:
    """What one side of a transfer saw (the JSON the runner parses, testbed/traffic.py)."""

    role: str  # "sender" | "receiver"
    bytes: int = 0  # written (sender) or read (receiver)
    start_mono_s: float | None = None  # sender: connect() called; receiver: accept() returned
    end_mono_s: float | None = None  # sender: the receiver closed; receiver: EOF read
    complete: bool = False  # sender: all written and the receiver closed; receiver: EOF read
    retransmits: int | None = None  # sender: tcpi_total_retrans at the end
    error: str | None = None

    @staticmethod
    def load(path: Path) -> TransferRecord | None:
        """The record in ``path``; None if the file is missing, empty or not a record."""
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("role") not in ("sender", "receiver"):
            return None
        try:
            return TransferRecord(**raw)
        except TypeError:
            return None


class _Stop(Exception):
    """SIGINT or SIGTERM arrived."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _window(sock: socket.socket, window_bytes: int | None) -> None:
    if window_bytes:  # as iperf3 -w: both buffers (the kernel doubles the value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, window_bytes)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, window_bytes)


def receive(port: int, rec: TransferRecord, window_bytes: int | None) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ls:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        _window(ls, window_bytes)  # before listen: inherited, and the window scale follows it
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        conn, _ = ls.accept()
    with conn:
        rec.start_mono_s = time.monotonic()
        while True:
            data = conn.recv(CHUNK)
            if not data:
                break
            rec.bytes += len(data)
        rec.end_mono_s = time.monotonic()
        rec.complete = True


def send(
    dst: str,
    port: int,
    total: int,
    rec: TransferRecord,
    cc: str | None,
    mss: int | None,
    window_bytes: int | None,
) -> None:
    while True:  # until connected, or the --limit alarm (main) stops it
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if cc:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        if mss:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        _window(sock, window_bytes)
        if rec.start_mono_s is None:  # the transfer's time starts at the first attempt
            rec.start_mono_s = time.monotonic()
        try:
            sock.connect((dst, port))
            break
        except OSError as e:
            sock.close()
            if e.errno not in RETRY_ERRNOS:
                raise
            time.sleep(CONNECT_RETRY_PAUSE_S)
    with sock:
        try:
            block = b"\0" * CHUNK
            while rec.bytes < total:
                n = sock.send(block[: min(CHUNK, total - rec.bytes)])
                rec.bytes += n
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(CHUNK):  # the receiver sends nothing; EOF is its close
                pass
            rec.end_mono_s = time.monotonic()
            rec.complete = True
        finally:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
            if len(info) >= TCP_INFO_TOTAL_RETRANS_OFFSET + 4:
                (rec.retransmits,) = struct.unpack_from("I", info, TCP_INFO_TOTAL_RETRANS_OFFSET)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="xfer", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = ap.add_subparsers(dest="role", required=True)
    r = sub.add_parser("recv", help="receive one transfer")
    s = sub.add_parser("send", help="send one transfer")
    for p in (r, s):
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--json", type=Path, required=True, help="where to write the record")
        p.add_argument("--window", type=int, default=None, help="socket buffer bytes (iperf3 -w)")
    s.add_argument("--to", required=True, help="receiver address")
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--cc", default=None, help="congestion control (TCP_CONGESTION)")
    s.add_argument("--mss", type=int, default=None, help="TCP_MAXSEG")
    s.add_argument(
        "--limit", type=float, default=None, help="stop after this many seconds (the flow's limit)"
    )
    a = ap.parse_args(argv)
    rec = TransferRecord(role="sender" if a.role == "send" else "receiver")
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # no stop before the handlers are in place
    for sig in stops:
        signal.signal(sig, _on_signal)
    if a.role == "send" and a.limit:
        signal.setitimer(signal.ITIMER_REAL, a.limit)
    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        if a.role == "send":
            send(a.to, a.port, a.bytes, rec, a.cc, a.mss, a.window)
        else:
            receive(a.port, rec, a.window)
    except _Stop as e:
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # a second signal must not cut the record
        rec.error = f"interrupted ({e})"
        if rec.start_mono_s is not None and rec.end_mono_s is None:
            rec.end_mono_s = time.monotonic()  # what arrived so far, over the time it took
        code = 1
    except Exception as e:  # noqa: BLE001 - any failure goes into the record, not lost
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        rec.error = f"{type(e).__name__}: {e}"
        code = 1
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        a.json.write_text(json.dumps(asdict(rec)) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
