"""testbed.explain's cause logic on synthetic traces, and the trace format (nodes.core.trace)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from nodes.core.trace import (
    EV_DELIVER,
    EV_DROP,
    EV_IFQ_DROP,
    EV_ORIG,
    EV_RX,
    EV_TX,
    EV_TX_FAIL,
    EV_TX_OK,
    MAGIC,
    MEDIUM_MAGIC,
    MEDIUM_RECORD,
    MediumFailure,
    Tracer,
    TraceRecord,
    packet_fields,
    read_medium,
    read_records,
)
from testbed.explain import Conn, LinkEvent, Rto, RunDirError, explain_rtos, load_run, rtos_from_series
from testbed.explain import main as explain_main
from testbed.timeline import main as timeline_main

MS = 1_000_000
A, B = "10.0.0.1", "10.0.0.3"
CONN = Conn(A, 40000, B, 5201)
SEQ = 1000


def rec(
    station: int,
    t_ms: float,
    ev: int,
    *,
    ack: bool = False,
    ip_id: int = 1,
    seq: int = SEQ,
    ackno: int = 0,
    length: int = 1000,
    peer: int = 0,
    code: int = 0,
    ctl: int = 0,
    proto: int = 6,
) -> TraceRecord:
    src, dst, sport, dport = (B, A, 5201, 40000) if ack else (A, B, 40000, 5201)
    return TraceRecord(
        station,
        int(t_ms * MS),
        ev,
        code,
        peer,
        src,
        dst,
        ip_id,
        sport,
        dport,
        proto,
        0x10,
        seq,
        ackno,
        0 if ack else length,
        ctl,
    )


def first_copy(ip_id: int = 1) -> list[TraceRecord]:
    """seq 1000 sent by sta1 at 100 ms (and seq 0 before it), forwarded to sta2."""
    return [
        rec(1, 50, EV_ORIG, ip_id=99, seq=0),
        rec(1, 100, EV_ORIG, ip_id=ip_id),
        rec(1, 101, EV_TX, ip_id=ip_id, peer=2),
        rec(1, 103, EV_TX_OK, ip_id=ip_id, peer=2),
        rec(2, 103, EV_RX, ip_id=ip_id, peer=1),
    ]


RETX = rec(1, 400, EV_ORIG, ip_id=7)  # the RTO's retransmission of seq 1000
RTO = Rto(CONN, 1, 350 * MS, 450 * MS)


def test_segment_lost_to_collision_then_dsr_drop_and_route_error() -> None:
    recs = [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 120, EV_TX_FAIL, peer=3, code=2),
        rec(2, 121, EV_DROP, code=0),
        rec(2, 125, EV_TX, ip_id=500, ctl=3, proto=59, seq=0),
        RETX,
    ]
    medium = [MediumFailure(120 * MS - 5000, 2, 3, "collision", 7, 0, 180.5, A, B, 1, 6)]
    [e] = explain_rtos(recs, medium, [RTO], {2: ["link_failure"]})
    assert (e.cause, e.direction, e.station, e.seq) == ("collision", "data", 2, SEQ)
    f = e.copies[-1]
    assert f.layer == "mac" and f.distance_m == pytest.approx(180.5) and f.next_hop == 3
    assert "then link_failure" in (f.reason or "") and "route error sent by sta2 5 ms later" in (
        f.after or ""
    )
    assert [(h.station, h.ev) for h in f.path] == [
        (1, "orig"),
        (1, "tx"),
        (1, "tx_ok"),
        (2, "rx"),
        (2, "tx"),
        (2, "tx_fail"),
        (2, "drop"),
    ]


def test_real_link_break_reports_the_distance_and_a_salvage() -> None:
    recs = [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 130, EV_TX_FAIL, peer=3, code=1),
        rec(2, 131, EV_TX, peer=4),
        rec(2, 160, EV_TX_FAIL, peer=4, code=1),
        RETX,
    ]
    medium = [
        MediumFailure(130 * MS, 2, 3, "out_of_range", 7, 0, 262.0, A, B, 1, 6),
        MediumFailure(160 * MS, 2, 4, "out_of_range", 7, 0, 301.0, A, B, 1, 6),
    ]
    [e] = explain_rtos(recs, medium, [RTO], {})
    assert e.cause == "link_break" and e.copies[-1].distance_m == pytest.approx(301.0)
    assert e.copies[-1].next_hop == 4  # the salvage attempt's link is the one that broke last


def test_lost_ack_in_a_full_interface_queue() -> None:
    recs = [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 106, EV_TX_OK, peer=3),
        rec(3, 106, EV_RX, peer=2),
        rec(3, 107, EV_DELIVER),
        rec(3, 110, EV_ORIG, ack=True, ip_id=5, seq=1, ackno=SEQ + 1000),
        rec(3, 111, EV_TX, ack=True, ip_id=5, seq=1, ackno=SEQ + 1000, peer=2),
        rec(3, 113, EV_TX_OK, ack=True, ip_id=5, seq=1, ackno=SEQ + 1000, peer=2),
        rec(2, 113, EV_RX, ack=True, ip_id=5, seq=1, ackno=SEQ + 1000, peer=3),
        rec(2, 114, EV_IFQ_DROP, ack=True, ip_id=5, seq=1, ackno=SEQ + 1000),
        RETX,
    ]
    [e] = explain_rtos(recs, [], [RTO], {2: ["ifq_full"]})
    assert (e.cause, e.direction, e.station) == ("ifq_overflow", "ack", 2)
    assert [c.kind for c in e.copies] == ["data", "ack"] and e.copies[0].delivered_ns == 107 * MS


def test_segment_delivered_after_the_rto_is_a_spurious_timeout() -> None:
    recs = [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 500, EV_TX_OK, peer=3),
        rec(3, 500, EV_RX, peer=2),
        rec(3, 501, EV_DELIVER),
        RETX,
    ]
    [e] = explain_rtos(recs, [], [RTO], {})
    assert (e.cause, e.direction) == ("delayed", "data")
    assert "401 ms after it was sent, 101 ms after the RTO" in e.detail


@pytest.mark.parametrize(
    "reason,cause",
    [
        ("send_buffer_timeout", "route_discovery_timeout"),
        ("send_buffer_full", "send_buffer_full"),
        ("no_route", "no_route"),
        ("ttl_expired", "routing_drop"),
        ("hop_loss", "hop_loss"),  # routing.hop_loss, nodes/core/hoploss.py
    ],
)
def test_routing_drops_at_the_sender(reason: str, cause: str) -> None:
    recs = [rec(1, 50, EV_ORIG, ip_id=99, seq=0), rec(1, 100, EV_ORIG), rec(1, 300, EV_DROP, code=0), RETX]
    [e] = explain_rtos(recs, [], [RTO], {1: [reason]})
    assert (e.cause, e.station, e.copies[-1].layer) == (cause, 1, "routing")


def test_a_retransmission_withheld_while_frozen_leaves_the_cause_to_the_copy_that_left() -> None:
    """ELFN: the original died at a collision, the kernel's retransmission was withheld while TCP
    was frozen (the agent's drop at the sender); the timeout is the collision's, with a note.
    With no copy that left, the withholding itself is the cause."""
    recs = [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 120, EV_TX_FAIL, peer=3, code=2),
        rec(2, 121, EV_DROP, code=0),
        rec(1, 200, EV_ORIG, ip_id=3),
        rec(1, 200, EV_DROP, ip_id=3, code=1),
        RETX,
    ]
    medium = [MediumFailure(120 * MS - 5000, 2, 3, "collision", 7, 0, 180.5, A, B, 1, 6)]
    reasons = {2: ["link_failure"], 1: ["link_failure", "tcpctl_withheld"]}
    [e] = explain_rtos(recs, medium, [RTO], reasons)
    assert (e.cause, e.station) == ("collision", 2) and "withheld while TCP was frozen" in e.detail
    assert [c.reason for c in e.copies][-1] == "tcpctl_withheld"
    only = [rec(1, 50, EV_ORIG, ip_id=99, seq=0), rec(1, 100, EV_ORIG), rec(1, 100, EV_DROP, code=1), RETX]
    [e] = explain_rtos(only, [], [RTO], reasons)
    assert (e.cause, e.station) == ("routing_drop", 1) and "tcpctl_withheld" in e.detail


def test_scripted_partition_is_an_event_and_never_sent_is_no_route() -> None:
    recs = [*first_copy(), rec(2, 104, EV_TX, peer=3), rec(2, 120, EV_TX_FAIL, peer=3, code=4), RETX]
    [e] = explain_rtos(recs, [], [RTO], {})
    assert e.cause == "event" and "scripted" in e.detail
    held = [rec(1, 50, EV_ORIG, ip_id=99, seq=0), rec(1, 100, EV_ORIG), RETX]
    [e] = explain_rtos(held, [], [RTO], {})
    assert (e.cause, e.station) == ("no_route", 1)


def test_channel_error_under_a_scripted_ber_is_an_event() -> None:
    recs = [*first_copy(), rec(2, 104, EV_TX, peer=3), rec(2, 120, EV_TX_FAIL, peer=3, code=3), RETX]
    [e] = explain_rtos(recs, [], [RTO], {})
    assert e.cause == "channel_error"
    ber = [LinkEvent(50 * MS, 3, 2, None, 1e-4)]
    [e] = explain_rtos(recs, [], [RTO], {}, ber)
    assert e.cause == "event" and "ber=0.0001" in e.detail
    cleared = [*ber, LinkEvent(110 * MS, 2, 3, None, None)]
    [e] = explain_rtos(recs, [], [RTO], {}, cleared)
    assert e.cause == "channel_error"


def delivered_with_ack(ack_at_ms: float) -> list[TraceRecord]:
    """seq 1000 delivered to sta3 at 107 ms; its ACK delivered to sta1 at ``ack_at_ms``."""
    a = {"ack": True, "ip_id": 5, "seq": 1, "ackno": SEQ + 1000}
    return [
        *first_copy(),
        rec(2, 104, EV_TX, peer=3),
        rec(2, 106, EV_TX_OK, peer=3),
        rec(3, 106, EV_RX, peer=2),
        rec(3, 107, EV_DELIVER),
        rec(3, 110, EV_ORIG, **a),
        rec(3, 111, EV_TX, peer=2, **a),
        rec(2, ack_at_ms - 1, EV_RX, peer=3, **a),
        rec(2, ack_at_ms - 0.5, EV_TX, peer=1, **a),
        rec(1, ack_at_ms, EV_RX, peer=2, **a),
        rec(1, ack_at_ms, EV_DELIVER, **a),
    ]


def test_ack_arriving_as_the_timer_expires_or_later_is_a_spurious_rto() -> None:
    [e] = explain_rtos([*delivered_with_ack(395), RETX], [], [RTO], {})
    assert (e.cause, e.direction) == ("delayed", "ack") and "5.0 ms before the retransmission" in e.detail
    [e] = explain_rtos([*delivered_with_ack(430), RETX], [], [RTO], {})
    assert (e.cause, e.direction) == ("delayed", "ack") and "ACK delivered 30 ms after the RTO" in e.detail
    assert "longest wait 318 ms in sta3's MAC, until sta2 received it" in e.detail
    [e] = explain_rtos([*delivered_with_ack(200), RETX], [], [RTO], {})
    assert e.cause == "unknown"  # an ACK long before the RTO: not what the trace can explain


def paws_case(dup_delivered_ms: float, dup_seq: int = 0, dup_sent_ms: float = 150) -> list[TraceRecord]:
    """seq 0 delivered at 60 ms and ACKed (ack 1000); seq 1000 (sent at 100 ms) delivered at 300
    ms and answered with a duplicate ACK; a copy of ``dup_seq`` sent at ``dup_sent_ms``,
    delivered at ``dup_delivered_ms``."""
    ack1 = {"ack": True, "ip_id": 4, "seq": 1, "ackno": SEQ}
    dup = {"ack": True, "ip_id": 5, "seq": 1, "ackno": SEQ}
    return [
        rec(1, 40, EV_ORIG, ip_id=98, seq=-1000 % (1 << 32)),
        rec(1, 50, EV_ORIG, ip_id=99, seq=0),
        rec(3, 60, EV_DELIVER, ip_id=99, seq=0),
        rec(3, 60.2, EV_ORIG, **ack1),
        *first_copy()[1:],
        rec(1, dup_sent_ms, EV_ORIG, ip_id=50, seq=dup_seq),
        rec(3, dup_delivered_ms, EV_DELIVER, ip_id=50, seq=dup_seq),
        rec(3, 300, EV_DELIVER),
        rec(3, 300.2, EV_ORIG, **dup),
        RETX,
    ]


def test_a_segment_discarded_by_paws_after_a_later_copy_of_older_data() -> None:
    """RFC 7323 s5.3: the copy of seq 0 sent 50 ms after seq 1000 arrives first and, covering
    Last.ACK.sent (1000), moves TS.Recent past seq 1000's TSval: seq 1000 arrives and is
    discarded (the receiver answers with a duplicate ACK), and the sender times out."""
    [e] = explain_rtos(paws_case(200), [], [RTO], {})
    assert (e.cause, e.direction, e.station) == ("paws", "data", 3), e
    assert "sent 50 ms after it arrived first (0.200 s)" in e.detail
    # no PAWS: the later copy arrives after the segment; a copy entirely below the window (seq
    # 2^32 - 1000, wrapped: dropped as out of window, R2) changes nothing; a copy sent within a
    # tick has no newer TSval; nor without timestamps
    for recs in (paws_case(350), paws_case(200, dup_seq=-1000 % (1 << 32)), paws_case(200, dup_sent_ms=101)):
        [e] = explain_rtos(recs, [], [RTO], {})
        assert e.cause == "unknown" and "sent no ACK" in e.detail, e
    [e] = explain_rtos(paws_case(200), [], [RTO], {}, timestamps=False)
    assert e.cause == "unknown"


def test_the_rto_retransmission_is_the_lowest_sequence_resent() -> None:
    probe = rec(1, 380, EV_ORIG, ip_id=6, seq=0)  # a tail-loss-probe-like re-send of an earlier seq
    recs = [
        rec(1, 50, EV_ORIG, ip_id=99, seq=0),
        rec(1, 60, EV_ORIG, ip_id=98, seq=500, length=500),
        *first_copy()[1:],
        rec(1, 390, EV_ORIG, ip_id=8, seq=500, length=500),
        probe,
        RETX,
    ]
    [e] = explain_rtos(recs, [], [RTO], {})
    assert e.seq == 0  # the lowest re-sent in the interval, though not the first


def test_no_retransmission_in_the_interval_is_unknown() -> None:
    recs = first_copy()
    [e] = explain_rtos(recs, [], [RTO], {})
    assert e.cause == "unknown" and "no retransmission" in e.detail


def test_rtos_from_series_one_per_increment() -> None:
    c = "10.0.0.1:40000->10.0.0.3:5201"
    rows = [
        {"conn": c, "t_s": 1.0, "rto_timeouts": 0},
        {"conn": c, "t_s": 1.1, "rto_timeouts": 1},
        {"conn": c, "t_s": 1.2, "rto_timeouts": 1},
        {"conn": c, "t_s": 1.3, "rto_timeouts": 3},
    ]
    rtos = rtos_from_series(rows)
    assert [(r.index, r.t_lo_ns, r.t_hi_ns) for r in rtos] == [
        (1, 1_000_000_000, 1_100_000_000),
        (2, 1_200_000_000, 1_300_000_000),
        (3, 1_200_000_000, 1_300_000_000),
    ]
    assert rtos[0].conn == CONN


def dsr_tcp_packet() -> bytes:
    """IPv4 + DSR header with a 8-byte source route option + TCP (seq 7, ack 9) + 10 bytes."""
    tcp = struct.pack("!HHIIBBHHH", 40000, 5201, 7, 9, 0x80, 0x18, 0, 0, 0) + bytes(12)
    dsr = bytes((6, 0, 0, 8)) + bytes((96, 6, 0, 0, 10, 0, 0, 2))
    total = 20 + len(dsr) + len(tcp) + 10
    ip = bytes((0x45, 0, total >> 8, total & 255, 0x12, 0x34, 0, 0, 64, 48, 0, 0, 10, 0, 0, 1, 10, 0, 0, 3))
    return ip + dsr + tcp + bytes(10)


def test_packet_fields_look_through_dsr_and_survive_garbage() -> None:
    f = packet_fields(dsr_tcp_packet())
    assert f == (bytes((10, 0, 0, 1)), bytes((10, 0, 0, 3)), 0x1234, 40000, 5201, 6, 0x18, 7, 9, 10, 0)
    for p in (b"", b"\x45" * 19, dsr_tcp_packet()[:30], b"\x60" + bytes(40)):
        packet_fields(p)  # never raises


def test_tracer_records_round_trip_with_reason_codes() -> None:
    t = Tracer()
    t.add(5, EV_TX, dsr_tcp_packet(), 70000)  # peer beyond 16 bits is masked, not an error
    t.drop(9, EV_DROP, dsr_tcp_packet(), "no_route")
    t.drop(10, EV_DROP, dsr_tcp_packet(), "no_route")
    data = MAGIC + t.take()
    r = list(read_records(data + b"\x01\x02", 4))  # a torn last record is ignored
    assert t.reasons == ["no_route"] and [x.code for x in r] == [0, 0, 0] and t.records == 3
    assert (r[0].station, r[0].t_ns, r[0].peer, r[0].src, r[0].dst, r[0].ip_id, r[0].seq, r[0].length) == (
        4,
        5,
        70000 & 0xFFFF,
        "10.0.0.1",
        "10.0.0.3",
        0x1234,
        7,
        10,
    )
    assert not t.buf


def test_medium_trace_decodes() -> None:
    body = MEDIUM_RECORD.pack(123, 2, 3, 2, 7, 0, 250.5, bytes((10, 0, 0, 1)), bytes((10, 0, 0, 3)), 77, 6)
    [m] = read_medium(MEDIUM_MAGIC + body)
    assert (m.src, m.dst, m.cause, m.rts_attempts, m.ip_src, m.ip_id) == (
        2,
        3,
        "collision",
        7,
        "10.0.0.1",
        77,
    )
    assert m.distance_m == pytest.approx(250.5)


def write_run(d: Path, *, complete: bool = True, trace: dict[str, object] | None = None) -> Path:
    """A minimal run directory of 1 station (what load_run reads)."""
    (d / "routers").mkdir(parents=True)
    (d / "medium").mkdir()
    (d / "summary.json").write_text(json.dumps({"run_id": "abc123", "complete": complete}))
    (d / "scenario.json").write_text(
        json.dumps({"stations": {"count": 1}, "radio": {"preset": "ns2-wavelan"}})
    )
    snap: dict[str, object] = {"station": 1}
    if trace is not None:
        snap["trace"] = trace
    (d / "routers" / "sta1.counters.json").write_text(json.dumps(snap))
    return d


@pytest.mark.parametrize(
    "setup,message",
    [
        (lambda d: d.mkdir(), "not a run directory (no summary.json, no run.json)"),
        (lambda d: write_run(d, complete=False), "complete is false: the run did not finish"),
        (lambda d: write_run(d), "no 'trace' field: the run is from a version without the per-packet trace"),
        (
            lambda d: write_run(d, trace={"on": False, "reason": "off in the router config"}),
            "trace off (off in the router config)",
        ),
        (lambda d: write_run(d, trace={"on": True, "reasons": []}), "sta1.trace.bin: missing"),
    ],
)
def test_bad_run_directories_name_what_is_missing(
    tmp_path: Path, setup: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "run"
    setup(d)
    before = sorted(p.name for p in d.rglob("*"))
    with pytest.raises(RunDirError, match=re.escape(message)):
        load_run(d)
    assert explain_main([str(d)]) == 2 and message in capsys.readouterr().err
    assert timeline_main([str(d)]) == 2 and message in capsys.readouterr().err
    assert sorted(p.name for p in d.rglob("*")) == before  # nothing written


def test_missing_medium_trace_is_named(tmp_path: Path) -> None:
    d = write_run(tmp_path / "run", trace={"on": True, "reasons": []})
    (d / "routers" / "sta1.trace.bin").write_bytes(MAGIC)
    with pytest.raises(RunDirError, match=r"medium/trace.bin: missing"):
        load_run(d)
    (d / "medium" / "trace.bin").write_bytes(b"garbage!")
    with pytest.raises(RunDirError, match=r"not a medium trace"):
        load_run(d)
    (d / "medium" / "trace.bin").write_bytes(MEDIUM_MAGIC)
    assert load_run(d).rtos == []


def test_route_control_ids_are_followed_by_tcp_identity() -> None:
    """Route control writes its route-number into the IPv4 ID at the source (kernel's ID 43477 ->
    0) and an intermediate station may set the NEW bit (0 -> 0x8000): keyed by IP ID the copy
    vanished after ORIG and the RTO read as ``no_route`` (every RTO of the Cohen route-control
    runs, 2026-11-26). Keyed by TCP identity it is followed to its loss at sta2."""
    recs = [
        rec(1, 50, EV_ORIG, ip_id=43476, seq=0),
        rec(1, 100, EV_ORIG, ip_id=43477),
        rec(1, 101, EV_TX, ip_id=0, peer=2),
        rec(1, 103, EV_TX_OK, ip_id=0, peer=2),
        rec(2, 103, EV_RX, ip_id=0, peer=1),
        rec(2, 104, EV_DROP, ip_id=0x8000, code=0),
        # other segments share the route-number ID 0: they must not be taken for this one
        rec(1, 150, EV_ORIG, ip_id=43478, seq=SEQ + 1000),
        rec(1, 151, EV_TX, ip_id=0, peer=2, seq=SEQ + 1000),
        rec(2, 153, EV_RX, ip_id=0, peer=1, seq=SEQ + 1000),
        rec(2, 154, EV_TX, ip_id=0, peer=3, seq=SEQ + 1000),
        rec(1, 400, EV_ORIG, ip_id=43490),  # the RTO's retransmission
    ]
    [by_id] = explain_rtos(recs, [], [RTO], {2: ["hop_loss"]})
    assert by_id.cause == "no_route"  # the old reading: the copy was never seen leaving sta1
    [e] = explain_rtos(recs, [], [RTO], {2: ["hop_loss"]}, tcp_keys=True)
    assert (e.cause, e.station) == ("hop_loss", 2), e
    assert [h.station for h in e.copies[-1].path] == [1, 1, 1, 2, 2]


def test_runs_of_an_id_rewriting_extension_are_keyed_by_tcp_identity() -> None:
    """Whether a run's TCP packets are followed by TCP identity comes from the extensions'
    declarations (``Needs.rewrites_ip_id``), not from a list in explain."""
    from testbed.explain import _rewrites_ip_id

    assert _rewrites_ip_id({"routing": {"extensions": ["route_control"]}})
    assert not _rewrites_ip_id({"routing": {"extensions": ["elfn", "epln", "bead"]}})
    assert not _rewrites_ip_id({"routing": {"extensions": []}}) and not _rewrites_ip_id({})


@pytest.mark.parametrize(
    "stations,message",
    [
        ([{"id": 1, "trajectory": []}], "config.json: field stations[].trajectory"),
        ([{"id": 1, "trajectory": [[0, "x", 0]]}], "config.json: field stations[].trajectory"),
        ([{"id": 1, "trajectory": [[0, 0]]}], "config.json: field stations[].trajectory"),
        ([{"trajectory": [[0, 0, 0]]}], "config.json: field stations[].trajectory"),
    ],
)
def test_timeline_names_a_bad_trajectory_and_writes_nothing(
    tmp_path: Path, stations: list[dict[str, object]], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The timeline reads the medium config through ``testbed.medium.read_trajectories``, the same
    reader as ``testbed.staleness``: a malformed waypoint is named, not drawn."""
    d = write_run(tmp_path / "run", trace={"on": True, "reasons": []})
    (d / "routers" / "sta1.trace.bin").write_bytes(MAGIC)
    (d / "medium" / "trace.bin").write_bytes(MEDIUM_MAGIC)
    (d / "medium" / "config.json").write_text(json.dumps({"stations": stations}))
    assert timeline_main([str(d)]) == 2 and message in capsys.readouterr().err
    assert not (d / "timeline.html").exists()
    (d / "medium" / "config.json").write_text(
        json.dumps({"stations": [{"id": 1, "trajectory": [[0, 0, 0], [10, 100, 0]]}]})
    )
    assert timeline_main([str(d)]) == 0
    page = (d / "timeline.html").read_text()
    assert '"1":[[0.0,0.0,0.0],[10.0,100.0,0.0]]' in page  # the trajectory as read, in the page
