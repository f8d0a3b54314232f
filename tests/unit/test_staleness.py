"""testbed.staleness: the ground-truth age of every out-of-range MAC give-up, on synthetic
trajectories (virtual time, no files) and on a run directory's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodes.core.trace import EV_TX_FAIL, HEADER, MAGIC, MEDIUM_MAGIC, MEDIUM_RECORD, MediumFailure
from nodes.protocols.dsr.options import Pad1, PadN, SourceRoute, build
from testbed import staleness
from testbed.staleness import (
    between,
    classify,
    dsr_salvage,
    left_range_at,
    salvage_counts,
    salvage_summary,
    summary,
    tx_fail,
)

RANGE_M = 250.0
STILL = [(0.0, 0.0, 0.0)]
AWAY = [(0.0, 0.0, 0.0), (100.0, 1000.0, 0.0)]
"""10 m/s along x from the origin: leaves the range of a station at the origin at t = 25 s."""
AWAY_BACK_AWAY = [(0.0, 0.0, 0.0), (50.0, 500.0, 0.0), (100.0, 0.0, 0.0), (150.0, 500.0, 0.0)]
"""Out of range of the origin from 25 to 75 s, and again from 125 s."""
FAR = [(0.0, 5000.0, 0.0)]


def fail(
    t_s: float,
    src: int,
    dst: int,
    cause: str = "out_of_range",
    ips: tuple[int, int] = (1, 9),
    ip_id: int = 1,
) -> MediumFailure:
    return MediumFailure(
        round(t_s * 1e9), src, dst, cause, 7, 0, 0.0, f"10.0.0.{ips[0]}", f"10.0.0.{ips[1]}", ip_id, 48
    )


def test_left_range_at_finds_the_last_moment_in_range() -> None:
    t = left_range_at(STILL, AWAY, 40.0, RANGE_M, closing_mps=10.0)
    assert t is not None and 24.9 <= t <= 25.0
    assert left_range_at(STILL, AWAY, 10.0, RANGE_M, closing_mps=10.0) == 10.0  # in range now
    assert left_range_at(STILL, FAR, 40.0, RANGE_M, closing_mps=0.0) is None
    t = left_range_at(STILL, AWAY_BACK_AWAY, 130.0, RANGE_M, closing_mps=10.0)
    assert t is not None and 124.9 <= t <= 125.0  # the second exit, not the first


def test_fresh_burst_reused_undetected() -> None:
    traj = {1: STILL, 2: AWAY, 3: FAR, 4: AWAY}
    out = classify(
        [
            fail(25.5, 1, 2),  # 0.5 s after the break: fresh
            fail(25.8, 2, 1),  # the same break (either direction) 0.3 s later: burst
            fail(30.0, 1, 2),  # 4.2 s after it was detected: reused
            fail(26.0, 1, 2, cause="collision"),  # not a give-up out of range: left out
            fail(10.0, 1, 3),  # never in range since 0: undetected, out of range since 0
            fail(40.0, 1, 4),  # out of range for 15 s, never tried since: undetected
        ],
        traj,
        RANGE_M,
    )
    got = [(s.t_s, s.link, s.cls) for s in out]
    assert got == [
        (10.0, (1, 3), "undetected"),
        (25.5, (1, 2), "fresh"),
        (25.8, (1, 2), "burst"),
        (30.0, (1, 2), "reused"),
        (40.0, (1, 4), "undetected"),
    ]
    ages = {(s.t_s, s.link): s.out_of_range_s for s in out}
    assert ages[(10.0, (1, 3))] == 10.0
    assert 15.0 <= ages[(40.0, (1, 4))] <= 15.1
    assert 0.5 <= ages[(25.5, (1, 2))] <= 0.6


def test_a_break_hit_often_is_reused_from_one_second_after_its_first_detection() -> None:
    out = classify([fail(25.5 + 0.6 * k, 1, 2) for k in range(5)], {1: STILL, 2: AWAY}, RANGE_M)
    assert [s.cls for s in out] == ["fresh", "burst", "reused", "reused", "reused"]


def test_left_range_at_looks_at_time_zero() -> None:
    # in range only at t = 0 (then 100 m/s away): a jump that passes below 0 still checks 0
    fast = [(0.0, 250.0, 0.0), (10.0, 1250.0, 0.0)]
    assert left_range_at(STILL, fast, 0.2, RANGE_M, closing_mps=100.0, step_s=0.25) == 0.0


def test_a_link_back_in_range_is_a_new_break() -> None:
    out = classify([fail(30.0, 1, 2), fail(130.0, 1, 2)], {1: STILL, 2: AWAY_BACK_AWAY}, RANGE_M)
    assert [s.cls for s in out] == ["undetected", "undetected"]  # 5 s old each; the first was another break
    assert all(4.9 <= s.out_of_range_s <= 5.1 for s in out)


def test_between_keeps_both_directions_of_one_pair_and_summary_counts() -> None:
    fs = [fail(1, 1, 2, ips=(1, 9)), fail(2, 1, 2, ips=(9, 1)), fail(3, 1, 2, ips=(1, 8))]
    assert [f.t_ns for f in between(fs, 1, 9)] == [1_000_000_000, 2_000_000_000]
    row = summary(
        classify([fail(25.5, 1, 2), fail(25.8, 1, 2), fail(30.0, 1, 2)], {1: STILL, 2: AWAY}, RANGE_M)
    )
    assert row["give_ups"] == 3 and row["fresh"] == 1 and row["burst"] == 1 and row["reused"] == 1
    assert row["reused_pct"] == 33.3 and row["undetected"] == 0


def _run_dir(tmp_path: Path, failures: list[MediumFailure]) -> Path:
    med = tmp_path / "run" / "medium"
    med.mkdir(parents=True)
    stations = [{"id": 1, "trajectory": STILL}, {"id": 2, "trajectory": AWAY}]
    (med / "config.json").write_text(
        json.dumps({"radio": {"preset": "ns2-wavelan", "overrides": {}}, "stations": stations})
    )
    body = b"".join(
        MEDIUM_RECORD.pack(
            f.t_ns, f.src, f.dst, 1, 7, 0, 300.0, bytes((10, 0, 0, 1)), bytes((10, 0, 0, 9)), 1, 48
        )
        for f in failures
    )
    (med / "trace.bin").write_bytes(MEDIUM_MAGIC + body)
    return tmp_path / "run"


def test_main_reads_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, [fail(25.5, 1, 2), fail(30.0, 2, 1)])
    assert staleness.main([str(run), "--between", "1", "9"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("run give_ups=2 fresh=1 ") and " reused=1 " in line, line


def test_main_names_the_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert staleness.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "medium/config.json: missing" in err


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"stations": []}, "config.json: field radio"),
        ("{not json", "config.json: field radio"),
        (
            {"radio": {"preset": "ns2-wavelan"}, "stations": [{"id": 1, "trajectory": []}]},
            "config.json: field stations[].trajectory",
        ),
        (
            {"radio": {"preset": "ns2-wavelan"}, "stations": [{"id": 1, "trajectory": [[0, "x", 0]]}]},
            "config.json: field stations[].trajectory",
        ),
        (
            {"radio": {"preset": "ns2-wavelan"}, "stations": [{"id": 1, "trajectory": [[0, 0, 0]]}]},
            "trace.bin: a give-up of station 2, which",
        ),
    ],
)
def test_main_names_a_bad_config_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: object, message: str
) -> None:
    run = _run_dir(tmp_path, [fail(25.5, 1, 2)])
    text = config if isinstance(config, str) else json.dumps(config)
    (run / "medium" / "config.json").write_text(text)
    assert staleness.main([str(run)]) == 2
    err = capsys.readouterr().err
    assert message in err, err


def _dsr(salvage: int, ident: int = 1) -> bytes:
    return build(1, 9, [Pad1(), SourceRoute((2, 5), segs_left=1, salvage=salvage)], ident=ident)


def test_dsr_salvage_reads_the_source_route_option_and_never_raises() -> None:
    assert dsr_salvage(_dsr(0)) == 0 and dsr_salvage(_dsr(15)) == 15
    assert dsr_salvage(_dsr(3)[:24]) is None  # the option was not recorded
    assert dsr_salvage(build(1, 9, [PadN(2)])) is None  # DSR without a Source Route option
    assert dsr_salvage(b"\x45" + bytes(30)) is None  # IPv4, not DSR
    # no Source Route option within the DSR Payload Length: the bytes after it (TCP) are not read
    tcp_like = bytes((96, 6, 0x03, 0xC0, 0, 0, 0, 0))
    assert dsr_salvage(build(1, 9, [PadN(2)], payload=tcp_like)) is None
    bad_ihl = bytearray(_dsr(3))
    bad_ihl[0] = 0x44  # IHL 16 bytes: not a valid IPv4 header
    assert dsr_salvage(bytes(bad_ihl)) is None
    for cut in range(len(_dsr(3))):  # any truncation
        assert dsr_salvage(_dsr(3)[:cut]) in (None, 3)


def test_salvage_counts_match_the_routers_record_of_the_same_frame() -> None:
    fs = [fail(25.5, 1, 2), fail(30.0, 1, 2), fail(31.0, 1, 3)]
    tx = {
        (1, 2): [
            tx_fail(25_490_000_000, _dsr(0)),
            tx_fail(30_020_000_000, _dsr(4)),
            tx_fail(30_200_000_000, _dsr(9)),
        ],
        (1, 3): [tx_fail(31_500_000_000, _dsr(2))],  # 0.5 s away: not the same frame
    }
    counts = salvage_counts(fs, tx)
    assert counts == [0, 4, None]
    assert salvage_summary(counts) == {"first_route_pct": 50.0, "salvaged_pct": 50.0, "no_source_route": 1}
    # two frames 10 ms apart: each give-up takes the record of its own packet (IPv4 id), once
    both = [fail(40.0, 1, 2, ip_id=11), fail(40.01, 1, 2, ip_id=12)]
    recs = {(1, 2): [tx_fail(40_000_000_000, _dsr(2, ident=12)), tx_fail(40_010_000_000, _dsr(5, ident=11))]}
    assert salvage_counts(both, recs) == [5, 2]
    twice = [fail(40.0, 1, 2, ip_id=11), fail(40.001, 1, 2, ip_id=11)]
    assert salvage_counts(twice, {(1, 2): [tx_fail(40_000_000_000, _dsr(5, ident=11))]}) == [5, None]


def test_main_salvage_reads_the_router_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, [fail(25.5, 1, 2), fail(30.0, 2, 1)])
    (run / "routers").mkdir()
    recs = {1: (25_500_000_000, 2, _dsr(0)), 2: (30_000_000_000, 1, _dsr(6))}
    for st, (t, peer, pkt) in recs.items():
        body = HEADER.pack(t, EV_TX_FAIL, 1, peer, len(pkt)) + pkt
        (run / "routers" / f"sta{st}.trace.bin").write_bytes(MAGIC + body)
    assert staleness.main([str(run), "--salvage"]) == 0
    out = capsys.readouterr().out
    assert " first_route_pct=50 salvaged_pct=50 " in out and "reused_salvaged_pct=100" in out, out
    (run / "routers" / "sta2.trace.bin").write_bytes(b"junk")
    assert staleness.main([str(run), "--salvage"]) == 2
    assert "sta2.trace.bin: not a router trace" in capsys.readouterr().err
