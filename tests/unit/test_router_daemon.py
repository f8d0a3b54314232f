"""The router daemon's I/O shell without root: a socketpair plays the medium, pipes play TUN/TAP.

These drive the real ``Router`` callbacks (the event loop's readiness handlers) and ``serve()``.
The end-to-end test with real namespaces is tests/router/test_router_netns.py.
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodes.core import ipv4
from nodes.core.addr import station_ip_bytes
from nodes.core.events import Action, CancelTimer, Event, SetTimer, Timer
from nodes.formats import medium as wire
from nodes.router.config import RouterConfig
from nodes.router.loop import EpollLoop
from nodes.router.main import EXIT_CONFIG, EXIT_MEDIUM_GONE, EXIT_OK, Router, run


def ip_packet(src: int, dst: int, ttl: int = 64, payload: bytes = b"hello") -> bytes:
    hdr = bytearray(20)
    hdr[0] = 0x45
    hdr[2:4] = (20 + len(payload)).to_bytes(2, "big")
    hdr[8] = ttl
    hdr[9] = ipv4.IPPROTO_UDP
    hdr[12:16] = station_ip_bytes(src)
    hdr[16:20] = station_ip_bytes(dst)
    ipv4.set_header_checksum(hdr)
    return bytes(hdr) + payload


class Harness:
    def __init__(
        self,
        tmp: Path,
        routes: dict[str, int] | None = None,
        mirror: bool | str = True,
        packet_sockets: Path | None = None,
    ) -> None:
        config = {
            "run_id": "t",
            "station_id": 2,
            "n_stations": 3,
            "seed": 1,
            "medium_socket": "unused",
            "protocol": {"name": "static", "params": {}, "routes": routes or {}},
            "extensions": [],
            "ifq_len": 3,
            "promiscuous": False,
            "out_dir": str(tmp),
            "mirror": mirror,
        }
        self.router = r = Router(RouterConfig.from_json(config), logging.getLogger("nodes.router.sta2"))
        self.tun_r, r.tun_fd = os.pipe()
        os.set_blocking(self.tun_r, False)
        # the TAP keeps frame boundaries: a datagram socketpair does too
        tap_socks = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.tap_r = tap_socks[0].detach()
        r.tap_fd = tap_socks[1].detach()
        os.set_blocking(self.tap_r, False)
        ours, self.medium = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.medium.settimeout(2)
        r.welcome = wire.Welcome(1, 0, 2, 3, time.monotonic_ns(), 15.0, 0)
        r.attach_medium(ours, r.welcome.epoch_monotonic_ns)
        if packet_sockets is not None:
            r.packet_sockets_path = str(packet_sockets)
            r.tap_ifindex = 7
        r.build_core()
        self.loop = EpollLoop()
        r.loop = self.loop
        self.seq = 0

    def send(self, raw: bytes) -> None:
        self.medium.send(raw)
        self.router.on_medium_readable()

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def rx(self, src: int, dst: int, payload: bytes, flags: int = 0) -> None:
        self.send(wire.encode_rx(self.next_seq(), 0, src, dst, payload, flags, -60.0, 35.0, -95.0))

    def status(self, cookie: int, status: int, cause: int = 0) -> None:
        self.send(wire.encode_tx_status(self.next_seq(), 0, cookie, status, 1, 1, cause))

    def recv(self) -> wire.Message:
        return wire.decode(self.medium.recv(65536))

    def nothing_sent(self) -> bool:
        return not select.select([self.medium], [], [], 0)[0]

    def taps(self) -> list[bytes]:
        out = []
        while True:
            try:
                out.append(os.read(self.tap_r, 65536))
            except BlockingIOError:
                return out

    def close(self) -> None:
        self.router.close()
        self.medium.close()
        os.close(self.tun_r)
        os.close(self.tap_r)
        self.loop.close()


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path, routes={"1": 1, "3": 3})
    yield harness
    harness.close()


def test_forward_rx_to_tx_with_mirror(h: Harness) -> None:
    p = ip_packet(1, 3)
    h.rx(1, 2, p)
    tx = h.recv()
    assert isinstance(tx, wire.Tx)
    assert (tx.seq, tx.dst, tx.retry_limit, tx.flags) == (1, 3, 0, 0)  # no HELLO in this harness
    assert math.isnan(tx.tx_power_dbm)
    assert tx.payload[8] == 63 and ipv4.header_checksum_ok(tx.payload)
    rx_copy, tx_copy = h.taps()
    assert rx_copy.endswith(p) and rx_copy[14] == (-60) & 0xFF
    assert tx_copy.endswith(tx.payload) and tx_copy[14] == 15  # WELCOME's default power
    h.status(tx.cookie, wire.ACKED)
    c = h.router.ctx.counters  # type: ignore[union-attr]
    assert c.data_forwarded == 1 and c.mac["tx_ok"] == 1
    assert h.router.mac.n_pending == 0 and h.router.mac.busy is None


def test_one_frame_at_a_time_and_queue(h: Harness) -> None:
    for i in range(3):
        h.rx(1, 2, ip_packet(1, 3, payload=bytes([i])))
    first = h.recv()
    assert isinstance(first, wire.Tx) and first.payload.endswith(b"\x00")
    assert h.nothing_sent()
    assert len(h.router.ctx.ifq) == 2  # type: ignore[union-attr]
    h.status(first.cookie, wire.ACKED)
    second = h.recv()
    assert isinstance(second, wire.Tx) and second.payload.endswith(b"\x01")


def test_failed_cause_is_counted_and_link_failure_reported(h: Harness) -> None:
    h.rx(1, 2, ip_packet(1, 3))
    tx = h.recv()
    assert isinstance(tx, wire.Tx)
    h.status(tx.cookie, wire.FAILED, wire.CAUSE_COLLISION)
    c = h.router.ctx.counters  # type: ignore[union-attr]
    assert c.mac["failed_cause_collision"] == 1
    assert c.mac["tx_failed"] == 1
    assert c.drops["link_failure"] == 1


def test_rejected_frees_the_mac_without_telling_the_core(h: Harness) -> None:
    h.rx(1, 2, ip_packet(1, 3, payload=b"a"))
    h.rx(1, 2, ip_packet(1, 3, payload=b"b"))
    first = h.recv()
    assert isinstance(first, wire.Tx)
    h.status(first.cookie, wire.REJECTED)
    second = h.recv()
    assert isinstance(second, wire.Tx) and second.payload.endswith(b"b")
    c = h.router.ctx.counters  # type: ignore[union-attr]
    assert c.mac["rejected"] == 1 and c.drops["mac_rejected"] == 1
    assert "link_failure" not in c.drops


@pytest.mark.parametrize(
    "garbage,reason",
    [
        (b"\x00", "short_header"),
        (b"XX" + wire.encode_bye(1)[2:], "bad_magic"),
        (wire.encode_rx(1, 0, 1, 2, b"abc")[:-1], "bad_length"),
        (wire.encode_bye(1)[:3] + b"\x7f" + wire.encode_bye(1)[4:], "bad_type"),
        (
            wire.encode_rx(1, 0, 1, 2, b"abc")[:2] + b"\x02" + wire.encode_rx(1, 0, 1, 2, b"abc")[3:],
            "bad_version",
        ),
        (wire.encode_rx(1, 0, 1, 2, b"abc") + b"d", "bad_length"),
        (wire.RX_ST.pack(wire.MAGIC, 1, wire.RX, 1, 0, 1, 2, 0, 0, 0, 0, 2305) + bytes(2305), "oversized"),
        (wire.encode_tx_status(1, 0, 1, wire.ACKED) + b"\x00", "bad_length"),
        (b"XX" + wire.encode_tx_status(1, 0, 1, wire.ACKED)[2:], "bad_magic"),
    ],
)
def test_malformed_messages_are_counted_and_dropped(h: Harness, garbage: bytes, reason: str) -> None:
    h.send(garbage)
    assert h.router.ctx.counters.malformed[reason] == 1  # type: ignore[union-attr]
    # still alive and in sequence
    h.rx(1, 2, ip_packet(1, 3))
    assert isinstance(h.recv(), wire.Tx)


@pytest.mark.parametrize(
    "message,reason",
    [
        (lambda seq: wire.encode_welcome(seq, 0, 2, 3, 0, 15.0), "duplicate_welcome"),
        (lambda seq: wire.encode_tx(seq, 1, 3, b"x"), "unexpected_type"),  # router -> medium only
        (lambda seq: wire.encode_bye(seq), "unexpected_type"),
    ],
)
def test_well_formed_but_unexpected_messages_are_counted(h: Harness, message: Any, reason: str) -> None:
    h.send(message(h.next_seq()))
    assert h.router.ctx.counters.malformed[reason] == 1  # type: ignore[union-attr]
    h.rx(1, 2, ip_packet(1, 3))  # in sequence after it
    assert isinstance(h.recv(), wire.Tx)


def test_bad_tx_status_fails_the_frame_and_is_counted(h: Harness) -> None:
    h.rx(1, 2, ip_packet(1, 3, payload=b"a"))
    tx = h.recv()
    assert isinstance(tx, wire.Tx)
    h.status(tx.cookie, 77)  # no such status
    c = h.router.ctx.counters  # type: ignore[union-attr]
    assert c.malformed["bad_status"] == 1 and c.mac["tx_failed"] == 1
    assert h.router.mac.busy is None and h.router.mac.n_pending == 0


def test_out_of_order_and_unknown_cookie(h: Harness) -> None:
    h.seq += 5
    h.rx(1, 2, ip_packet(1, 3))
    assert h.router.ctx.counters.malformed["out_of_order"] == 1  # type: ignore[union-attr]
    assert h.nothing_sent()
    h.status(12345, wire.ACKED)  # resynchronised on the previous seq: in order, unknown cookie
    assert h.router.ctx.counters.malformed["unknown_cookie"] == 1  # type: ignore[union-attr]


def test_malformed_ip_packet_from_air_is_dropped(h: Harness) -> None:
    h.rx(1, 2, b"\x45\x00garbage")
    c = h.router.ctx.counters  # type: ignore[union-attr]
    assert c.drops["malformed"] == 1
    assert h.nothing_sent()


def test_local_delivery_writes_tun(h: Harness) -> None:
    p = ip_packet(1, 2)
    h.rx(1, 2, p)
    assert os.read(h.tun_r, 65536) == p
    assert h.router.ctx.counters.data_delivered == 1  # type: ignore[union-attr]


def test_tun_packet_is_routed(h: Harness) -> None:
    r = h.router
    a, b = os.pipe()
    os.set_blocking(a, False)
    os.close(r.tun_fd)
    r.tun_fd = a
    os.write(b, ip_packet(2, 3))
    r.on_tun_readable()
    tx = h.recv()
    assert isinstance(tx, wire.Tx) and tx.dst == 3 and tx.payload[8] == 64
    assert r.ctx.counters.data_originated == 1  # type: ignore[union-attr]
    os.close(b)


def test_set_power_message(h: Harness) -> None:
    h.router.set_power(None, None)
    h.router.set_power(3, 7.5)
    a, b = h.recv(), h.recv()
    assert isinstance(a, wire.SetPower) and a.neighbour == wire.ALL_NEIGHBOURS and math.isnan(a.tx_power_dbm)
    assert isinstance(b, wire.SetPower) and (b.neighbour, b.tx_power_dbm) == (3, 7.5)


def test_one_loop_timer_for_the_earliest_runtime_timer(h: Harness) -> None:
    r = h.router
    rt = r.rt
    assert rt is not None
    now = r.clock.now_ns()
    rt.timers.set("a", now + 10_000_000_000)
    r._rearm()
    first = r._timer
    assert first is not None and r._timer_at == now + 10_000_000_000
    rt.timers.set("b", now + 5_000_000_000)
    r._rearm()
    assert r._timer is not first and first.cancelled()
    assert r._timer_at == now + 5_000_000_000
    assert r._timer.when_ns == now + r.clock.epoch_ns + 5_000_000_000
    same = r._timer
    r._rearm()
    assert r._timer is same
    rt.timers.cancel("a")
    rt.timers.cancel("b")
    r._rearm()
    assert r._timer is None and same.cancelled()


def test_loop_timer_follows_timers_set_and_cancelled_while_handling_a_message(h: Harness) -> None:
    """The medium callback re-arms the loop timer only when the runtime's timers changed
    (``Scheduler.changes``): a timer the core sets while handling an RX gets the loop timer and
    fires; one set and cancelled in the same event leaves none; an event that changes nothing
    keeps the handle; replacing the earliest timer by another at the same time keeps it too and
    the new one fires."""
    r = h.router
    rt = r.rt
    assert rt is not None and r.ctx is not None
    at = r.clock.now_ns() + 10_000_000_000
    script: list[list[Action]] = []
    fired: list[object] = []
    core_on_event = rt.protocol.on_event

    def on_event(event: Event, now_ns: int) -> list[Action]:
        if isinstance(event, Timer):
            fired.append(event.key)
        return (script.pop(0) if script else []) + core_on_event(event, now_ns)

    rt.protocol.on_event = on_event  # type: ignore[method-assign]
    r._rearm()
    assert r._timer is None
    script.append([SetTimer("t", at), CancelTimer("t")])  # set and cancelled in one event
    h.rx(1, 2, ip_packet(1, 2))
    assert r._timer is None and r._timer_at is None and len(rt.timers) == 0
    script.append([SetTimer("a", at)])
    h.rx(1, 2, ip_packet(1, 2))
    first = r._timer
    assert first is not None and r._timer_at == at and not first.cancelled()
    h.rx(1, 2, ip_packet(1, 2))  # nothing changed: the same handle
    assert r._timer is first and not first.cancelled()
    script.append([CancelTimer("a"), SetTimer("b", at)])  # same earliest time, another key
    h.rx(1, 2, ip_packet(1, 2))
    assert r._timer is first and r._timer_at == at
    r._on_timer()  # the loop fires it (at its due time: virtual "now" is ``at``)
    assert fired == ["b"] and r._timer is None and len(rt.timers) == 0
    script.append([SetTimer("c", at + 1), CancelTimer("c"), SetTimer("c", at + 2)])
    h.rx(1, 2, ip_packet(1, 2))
    assert r._timer is not None and r._timer_at == at + 2
    r._on_timer()
    assert fired == ["b", "c"] and r._timer is None


def test_counters_file_is_written_atomically(h: Harness, tmp_path: Path) -> None:
    h.rx(1, 2, ip_packet(1, 3))
    h.router.write_counters()
    data = json.loads((tmp_path / "sta2.counters.json").read_text())
    assert data["station"] == 2
    assert data["counters"]["data_forwarded"] == 1
    assert data["runtime"]["mac_busy"] is True and data["runtime"]["tx_pending"] == 1
    assert data["io"]["medium_tx"] == 1
    assert data["protocol"]["name"] == "static"
    # no temporary file left; the trace file (trace: auto, no fast path in this harness) beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sta2.counters.json", "sta2.trace.bin"]


def test_serve_exits_when_medium_goes_away(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    try:
        harness.loop.call_later(0.05, harness.medium.close)
        code = harness.router.serve()
        assert code == EXIT_MEDIUM_GONE
        assert (tmp_path / "sta2.counters.json").exists()
    finally:
        harness.router.close()
        os.close(harness.tun_r)
        os.close(harness.tap_r)
        harness.loop.close()


def test_serve_sigterm_sends_bye(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    try:
        harness.loop.call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        code = harness.router.serve()
        assert code == EXIT_OK
        harness.router.close()
        assert isinstance(harness.recv(), wire.Bye)
    finally:
        harness.close()


def test_run_rejects_bad_config(tmp_path: Path) -> None:
    assert run({"station_id": 1}) == EXIT_CONFIG
    assert (
        run({"station_id": 0, "medium_socket": "x", "protocol": {}, "out_dir": str(tmp_path)}) == EXIT_CONFIG
    )


PACKET_HEADER = "sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n"


def packet_socket_line(ifindex: int, running: int = 1) -> str:
    return f"000000003ee2f7c1 3      3    0003   {ifindex}     {running} 0      0      147648\n"


@pytest.mark.parametrize(
    "sockets,mirrored",
    [
        ("", False),
        (packet_socket_line(7), True),  # tcpdump -i sta2-wlan0
        (packet_socket_line(0), True),  # tcpdump -i any
        (packet_socket_line(3), False),  # another interface
        (packet_socket_line(7, running=0), False),  # bound, not receiving
    ],
)
def test_mirror_auto_writes_frames_only_while_a_packet_socket_listens(
    tmp_path: Path, sockets: str, mirrored: bool
) -> None:
    proc = tmp_path / "packet"
    proc.write_text(PACKET_HEADER + sockets)
    harness = Harness(tmp_path, routes={"3": 3}, mirror="auto", packet_sockets=proc)
    try:
        harness.rx(1, 2, ip_packet(1, 3))
        assert isinstance(harness.recv(), wire.Tx)
        assert len(harness.taps()) == (2 if mirrored else 0)
    finally:
        harness.close()


def test_mirror_auto_follows_a_capture_that_starts_and_stops(tmp_path: Path) -> None:
    proc = tmp_path / "packet"
    proc.write_text(PACKET_HEADER)
    h = Harness(tmp_path, routes={"3": 3}, mirror="auto", packet_sockets=proc)
    r = h.router
    try:

        def forward() -> int:
            h.rx(1, 2, ip_packet(1, 3))
            tx = h.recv()
            assert isinstance(tx, wire.Tx)
            h.status(tx.cookie, wire.ACKED)
            return len(h.taps())

        assert forward() == 0
        proc.write_text(PACKET_HEADER + packet_socket_line(7))
        assert forward() == 0  # the answer is at most CAPTURE_CHECK_NS old
        r._capture_check_at = 0  # 200 ms later
        assert forward() == 2
        proc.write_text(PACKET_HEADER)
        r._capture_check_at = 0
        assert forward() == 0
    finally:
        h.close()


def test_mirror_config_rejects_unknown_mode(tmp_path: Path) -> None:
    assert (
        run(
            {
                "station_id": 1,
                "medium_socket": "x",
                "protocol": {},
                "out_dir": str(tmp_path),
                "mirror": "sometimes",
            }
        )
        == EXIT_CONFIG
    )


def test_bye_reaches_the_medium_even_with_unread_messages(tmp_path: Path) -> None:
    """Closing with unread messages would reset the connection and lose the BYE (ECONNRESET)."""
    harness = Harness(tmp_path)
    try:
        harness.medium.send(wire.encode_rx(harness.next_seq(), 0, 1, 2, ip_packet(1, 2)))  # never read
        harness.router.close()
        assert isinstance(harness.recv(), wire.Bye)
    finally:
        harness.close()


def test_mutated_medium_messages_never_crash_the_router(h: Harness) -> None:
    """2000 RX and TX_STATUS messages with flipped bytes, cut or padded: each is handled or counted
    (``counters.malformed``), none raises out of the readiness callback."""
    import random

    rng = random.Random(5)
    counted = 0
    for _ in range(2000):
        seq = h.router.mac.rx_seq + 1
        if rng.random() < 0.5:
            m = bytearray(wire.encode_rx(seq, 0, 1, 2, ip_packet(1, 3, payload=bytes(rng.randrange(40)))))
        else:
            m = bytearray(
                wire.encode_tx_status(seq, 0, rng.randrange(1, 5), rng.randrange(6), 1, 1, rng.randrange(6))
            )
        r = rng.random()
        if r < 0.6:
            for _ in range(rng.randint(1, 3)):
                m[rng.randrange(len(m))] = rng.randrange(256)
        elif r < 0.8:
            m = m[: rng.randrange(1, len(m))]
        else:
            m += bytes(rng.randrange(1, 8))
        before = sum(h.router.ctx.counters.malformed.values())  # type: ignore[union-attr]
        h.send(bytes(m))
        counted += sum(h.router.ctx.counters.malformed.values()) > before  # type: ignore[union-attr]
        h.taps()  # the mirror's copies (the stand-in TAP would fill up)
        while not h.nothing_sent():  # whatever it forwarded: acknowledge, so the MAC frees up
            tx = h.recv()
            assert isinstance(tx, wire.Tx)
            h.seq = h.router.mac.rx_seq
            h.status(tx.cookie, wire.ACKED)
    assert counted > 1000  # most mutations are caught by the decoder's checks
    assert h.router.mac.busy is None
    h.seq = h.router.mac.rx_seq
    h.rx(1, 2, ip_packet(1, 3))  # and the router still forwards
    assert isinstance(h.recv(), wire.Tx)
