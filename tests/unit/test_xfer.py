"""testbed/xfer.py (the file-transfer tool) over loopback with real kernel TCP, and its parsing."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from testbed.traffic import XFER, parse_transfer
from testbed.xfer import TransferRecord
from topologies.scenario import TcpFlow

SIZE = 300_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, timeout_s: float = 5.0) -> None:
    """Until ``port`` is in LISTEN state (/proc/net/tcp), without connecting to it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return
        time.sleep(0.02)
    raise AssertionError(f"nothing listens on {port}")


def _spec(n: int = SIZE) -> TcpFlow:
    return TcpFlow(src=1, dst=2, transfer_bytes=n)


def test_a_transfer_arrives_whole_and_is_timed_to_the_receivers_eof(tmp_path: Path) -> None:
    port = _free_port()
    rj, sj = tmp_path / "r.json", tmp_path / "s.json"
    recv = subprocess.Popen([sys.executable, str(XFER), "recv", "--port", str(port), "--json", str(rj)])
    # the sender retries while the receiver is not yet listening
    send = subprocess.run(
        [sys.executable, str(XFER), "send", "--to", "127.0.0.1", "--port", str(port), "--json", str(sj)]
        + ["--bytes", str(SIZE), "--cc", "reno", "--mss", "500", "--window", "20000"],
        timeout=30,
    )
    assert send.returncode == 0 and recv.wait(10) == 0
    r, s = TransferRecord.load(rj), TransferRecord.load(sj)
    assert r is not None and s is not None
    assert (r.bytes, r.complete, s.bytes, s.complete) == (SIZE, True, SIZE, True)
    assert s.retransmits == 0  # loopback loses nothing
    assert s.start_mono_s is not None and r.start_mono_s is not None and r.end_mono_s is not None
    assert s.start_mono_s <= r.start_mono_s <= r.end_mono_s
    row = parse_transfer(_spec(), s, r)
    assert row["bytes_received"] == SIZE and row["error"] is None and not row["interrupted"]
    assert row["transfer_time_s"] == r.end_mono_s - s.start_mono_s
    assert row["throughput_bps"] == 8 * SIZE / row["transfer_time_s"]


def test_an_interrupted_receiver_writes_what_it_had(tmp_path: Path) -> None:
    port = _free_port()
    rj = tmp_path / "r.json"
    recv = subprocess.Popen([sys.executable, str(XFER), "recv", "--port", str(port), "--json", str(rj)])
    _wait_listening(port)  # no sender: interrupted while waiting in accept()
    recv.send_signal(signal.SIGINT)
    assert recv.wait(10) == 1
    r = TransferRecord.load(rj)
    assert r is not None and r.error is not None and "interrupted (SIGINT)" in r.error
    assert not r.complete


def test_parse_transfer_incomplete_and_missing() -> None:
    spec = _spec(1000)
    sender = TransferRecord("sender", bytes=1000, start_mono_s=10.0)
    part = TransferRecord(
        "receiver", bytes=400, start_mono_s=10.5, end_mono_s=14.0, error="interrupted (SIGINT)"
    )
    row = parse_transfer(spec, sender, part)
    assert "transfer_time_s" not in row and row["interrupted"]
    assert row["bytes_received"] == 400 and row["throughput_bps"] == 8 * 400 / 4.0
    never = TransferRecord("receiver", error="interrupted (SIGINT)")
    row = parse_transfer(spec, sender, never)
    assert row["throughput_bps"] == 0.0 and row["no_data"]
    assert parse_transfer(spec, sender, None)["error"] == "no transfer receiver output"
    cut = TransferRecord("receiver", bytes=400, start_mono_s=10.5, end_mono_s=14.0, complete=True)
    assert "closed after 400 of 1000" in parse_transfer(spec, sender, cut)["error"]
    # the kernel gave the connection up mid-file (seen: ETIMEDOUT in a Liu partition): the sender's
    # own failure is the flow's error, not a silent partial transfer
    gave_up = TransferRecord(
        "sender", bytes=600, start_mono_s=10.0, error="TimeoutError: [Errno 110] Connection timed out"
    )
    row = parse_transfer(spec, gave_up, part)
    assert row["error"] == "TimeoutError: [Errno 110] Connection timed out" and not row["file_delivered"]


def test_a_file_that_is_not_a_record_loads_as_none(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    for text in ("", "{", '{"role": "server"}', '{"role": "sender", "colour": 1}', "[1]"):
        bad.write_text(text)
        assert TransferRecord.load(bad) is None
    assert TransferRecord.load(tmp_path / "missing.json") is None


def test_the_sender_retries_until_its_limit_then_writes_its_record(tmp_path: Path) -> None:
    sj = tmp_path / "s.json"
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, str(XFER), "send", "--to", "127.0.0.1", "--port", str(_free_port())]
        + ["--json", str(sj), "--bytes", "1000", "--limit", "0.5"],
        timeout=20,
    )
    took = time.monotonic() - t0
    s = TransferRecord.load(sj)
    assert res.returncode == 1 and s is not None
    assert s.error == "interrupted (SIGALRM)" and s.bytes == 0 and not s.complete
    assert s.start_mono_s is not None  # connection refused, retried until the limit
    assert 0.5 <= took < 10


def test_parse_transfer_from_the_sender_alone_and_a_senders_own_failure() -> None:
    spec = _spec(1000)
    done = TransferRecord("sender", bytes=1000, start_mono_s=10.0, end_mono_s=12.0, complete=True)
    row = parse_transfer(spec, done, None)  # the receiver's record lost: the sender saw its close
    assert row["file_delivered"] and row["transfer_time_s"] == 2.0 and row["error"] is None
    row = parse_transfer(spec, TransferRecord("sender", error="interrupted (SIGINT)"), None)
    assert row["file_delivered"] is False and row["error"] == "interrupted (SIGINT)"
    failed = TransferRecord("sender", start_mono_s=10.0, error="OSError: [Errno 2] No such file or directory")
    waiting = TransferRecord("receiver", error="interrupted (SIGINT)")
    row = parse_transfer(spec, failed, waiting)
    assert row["no_data"] and row["error"] == "OSError: [Errno 2] No such file or directory"
