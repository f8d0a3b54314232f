"""End-to-end tests of manet-medium through its sockets (docs/interfaces.md section 2).

Needs the release binary: `cargo build --release` in medium/. Runs in real time, so the
assertions are on counts and states, never on tight timings.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "medium" / "py"))
import mmclient as mm  # noqa: E402

BINARY = ROOT / "medium" / "target" / "release" / "manet-medium"

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="build medium/ first (cargo build --release)")


def wait_for(pred, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("timed out")


class Medium:
    def __init__(self, tmp: Path, stations: list[tuple[int, float, float]], **extra: object) -> None:
        self.dir = tmp
        self.sock = str(tmp / "medium.sock")
        self.ctl = str(tmp / "control.sock")
        cfg = {
            "run_id": "abc123",
            "seed": 1,
            "socket": self.sock,
            "control_socket": self.ctl,
            "out_dir": str(tmp / "out"),
            "radio": {"preset": "ns2-wavelan", "overrides": {}},
            "stations": [{"id": i, "trajectory": [[0.0, x, y]]} for i, x, y in stations],
            "event_log": True,
            **extra,
        }
        (tmp / "medium.json").write_text(json.dumps(cfg))
        self.proc = subprocess.Popen([str(BINARY), "--config", str(tmp / "medium.json")])
        wait_for(lambda: os.path.exists(self.ctl) and os.path.exists(self.sock))

    def control(self) -> mm.Control:
        return mm.Control(self.ctl)

    def stop(self) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        return json.loads((self.dir / "out" / "counters.json").read_text())


@pytest.fixture
def medium(tmp_path: Path) -> Iterator[Medium]:
    m = Medium(tmp_path, [(1, 0.0, 0.0), (2, 100.0, 0.0), (3, 200.0, 0.0), (4, 5000.0, 0.0)])
    yield m
    if m.proc.poll() is None:
        m.proc.kill()
        m.proc.wait()


def test_sockets_are_private(medium: Medium) -> None:
    for p in (medium.sock, medium.ctl):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_unicast_broadcast_and_status(medium: Medium) -> None:
    r1, r2 = mm.Router(medium.sock, 1), mm.Router(medium.sock, 2)
    assert r1.welcome.station_id == 1 and r1.welcome.n_stations == 4
    r1.send_tx(1, 2, b"hello")
    st = r1.wait_status(1)
    assert st.status == "acked" and st.rts_attempts == 1 and st.data_attempts == 1
    assert st.t_end_ns > st.t_start_ns
    rx = r2.recv()
    assert isinstance(rx, mm.Rx) and rx.payload == b"hello" and rx.src == 1 and rx.flags == 0
    assert rx.rssi_dbm > -64.4 and rx.snr_db > 10
    # RX comes at the end of the DATA frame, TX_STATUS at the end of the ACK.
    assert rx.time_ns < st.t_end_ns
    r1.send_tx(2, mm.BROADCAST, b"x" * 100)
    assert r1.wait_status(2).status == "sent"
    # Station 4 is 5 km away: failure after 7 RTS, cause out of range.
    r1.send_tx(3, 4, b"y")
    st = r1.wait_status(3)
    assert (st.status, st.rts_attempts, st.cause) == ("failed", 7, 1)
    c = medium.stop()
    assert c["frames"]["acked"] == 1 and c["failed_by_cause"]["out_of_range"] == 1
    assert c["lag"]["count"] > 0
    assert (medium.dir / "out" / "events.log").exists()


def test_bad_messages_counted_and_dropped(medium: Medium) -> None:
    r1, r2 = mm.Router(medium.sock, 1), mm.Router(medium.sock, 2)
    r1.send_raw(b"\x00" * 5)  # short
    bad = bytearray(mm.tx(r1.next_seq(), 9, 2, b"z"))
    bad[0] = 0  # wrong magic (its seq is consumed)
    r1.send_raw(bytes(bad))
    r1.send_raw(mm.tx(r1.seq + 5, 10, 2, b"z"))  # out of order
    r1.seq += 5
    r1.send_tx(11, 2, b"z" * 2305)  # oversized: REJECTED
    st = r1.wait_status(11)
    assert st.status == "rejected"
    r1.send_tx(12, 2, b"ok")  # the connection still works
    assert r1.wait_status(12).status == "acked"
    # A TX while one is pending is rejected.
    r2.send_tx(1, 1, b"a" * 1000)
    r2.send_tx(2, 1, b"b")
    st = r2.wait_status(2)
    assert st.status == "rejected"
    assert r2.wait_status(1).status == "acked"
    c = medium.stop()
    io = c["io"]["per_station"]["1"]
    assert io["malformed"] == 2 and io["out_of_order"] == 1 and io["oversized"] == 1


def test_disconnect_affects_only_its_station(medium: Medium) -> None:
    r1, r2, r3 = (mm.Router(medium.sock, i) for i in (1, 2, 3))
    r3.send_tx(1, 2, b"a" * 1500)
    r3.close()  # crash in the middle of an exchange
    for k in range(20):
        r1.send_tx(k, 2, b"p" * 200)
        assert r1.wait_status(k).status == "acked"
    ctl = medium.control()
    pos = ctl.call(op="positions")
    assert pos["ok"] and pos["positions"]["3"]["radio_on"] is False
    assert pos["positions"]["1"]["radio_on"] is True
    # A frame to the departed station fails.
    r1.send_tx(99, 3, b"q")
    st = r1.wait_status(99)
    assert st.status == "failed" and st.cause == 1
    # A second HELLO for a live station is refused; the original keeps working.
    with pytest.raises((AssertionError, OSError, ValueError)):
        mm.Router(medium.sock, 1, timeout=1.0)
    r1.send_tx(100, 2, b"still")
    assert r1.wait_status(100).status == "acked"
    c = medium.stop()
    assert c["per_station"]["3"]["dropped_on_disconnect"] == 1


def test_control_ops(medium: Medium) -> None:
    r1, _r2 = mm.Router(medium.sock, 1), mm.Router(medium.sock, 2)
    ctl = medium.control()
    assert ctl.call(op="move", station=2, x=0.0, y=900.0)["ok"]
    r1.send_tx(1, 2, b"a")
    assert r1.wait_status(1).status == "failed"
    assert ctl.call(op="move", station=2, x=50.0, y=0.0)["ok"]
    assert ctl.call(op="set_link", a=1, b=2, loss=1.0)["ok"]
    r1.send_tx(2, 2, b"a")
    st = r1.wait_status(2)
    assert st.status == "failed" and st.cause == 4
    assert ctl.call(op="set_link", a=1, b=2, loss=None)["ok"]
    # long enough that a stalled test process still sends inside it (the medium runs in real time)
    assert ctl.call(op="partition", a=[1], b=[2, 3], duration_s=2.0)["ok"]
    r1.send_tx(3, 2, b"a")
    assert r1.wait_status(3).cause == 4
    time.sleep(2.1)
    r1.send_tx(4, 2, b"a")
    assert r1.wait_status(4).status == "acked"
    assert not ctl.call(op="move", station=77, x=0, y=0)["ok"]
    assert not ctl.call(op="nope")["ok"]
    counters = ctl.call(op="counters")
    assert counters["ok"] and counters["counters"]["frames"]["acked"] == 1
    assert ctl.call(op="stop")["ok"]
    medium.proc.wait(timeout=10)
    assert (medium.dir / "out" / "counters.json").exists()


def test_promiscuous_and_power(medium: Medium) -> None:
    r1, r2 = mm.Router(medium.sock, 1), mm.Router(medium.sock, 2)
    r3 = mm.Router(medium.sock, 3, flags=1)
    r1.send_tx(1, 2, b"snoop")
    assert r1.wait_status(1).status == "acked"
    m = r3.recv()
    assert isinstance(m, mm.Rx) and m.flags & 1 and m.dst == 2 and m.payload == b"snoop"
    # SET_POWER to a neighbour: 2 -> 1 at 0 dBm does not reach 100 m.
    r2.send_raw(mm.set_power(r2.next_seq(), 1, 0.0))
    r2.send_tx(5, 1, b"weak")
    st = r2.wait_status(5)
    assert st.status == "failed"
    r2.send_raw(mm.set_power(r2.next_seq(), mm.BROADCAST, float("nan")))
    r2.send_tx(6, 1, b"strong")
    assert r2.wait_status(6).status == "acked"


def test_replay_of_realtime_log_is_identical(medium: Medium, tmp_path: Path) -> None:
    r1, r2, r3 = (mm.Router(medium.sock, i) for i in (1, 2, 3))
    for k in range(30):
        r1.send_tx(k, 2, b"a" * 300)
        r3.send_tx(k, 2, b"b" * 800)
        r1.wait_status(k)
        r3.wait_status(k)
    medium.stop()
    log = medium.dir / "out" / "events.log"
    replay = tmp_path / "replay.log"
    subprocess.run(
        [
            str(BINARY),
            "--config",
            str(medium.dir / "medium.json"),
            "--virtual",
            "--offered",
            str(log),
            "--event-log",
            str(replay),
            "--counters",
            str(tmp_path / "replay.json"),
        ],
        check=True,
    )
    assert log.read_text() == replay.read_text()
