"""The chain/grid study's plumbing (experiments/multihop.py, multihop_report.py) on made-up runs."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from experiments import multihop, multihop_report
from experiments.spec import expand, load_sweep

ROOT = Path(__file__).resolve().parents[2]


def test_sweep_files_expand_and_select() -> None:
    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "multihop.yaml")
    points = expand(sweep)
    assert len(points) == 8 * 3 * 4 * 5
    chosen = multihop.select(points, {"hops": ["1", "7"], "window": ["none"], "routing.protocol": []}, [1])
    assert len(chosen) == 2 * 3
    seven = next(p for p in chosen if p.params["hops"] == "7")
    assert seven.overrides["stations.count"] == 8 and seven.overrides["traffic.tcp[0].dst"] == 8
    assert seven.overrides["traffic.tcp[0].max_window_pkts"] is None
    grid = expand(load_sweep(ROOT / "experiments" / "sweeps" / "multihop-grid9.yaml"))
    assert len(grid) == 3 * 2 * 5


def _fake_run(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    run_dir = tmp_path / "run"
    (run_dir / "tcp").mkdir(parents=True)
    conn = "10.0.0.1:40000->10.0.0.5:5201"
    with (run_dir / "tcp" / "sta1.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "conn", "state", "srtt_ms", "rto_ms"])
        w.writerow([1.0, "10.0.0.1:39999->10.0.0.5:5201", "ESTAB", 999.0, 9999.0])  # iperf3 control
        w.writerow([1.1, conn, "SYN-SENT", 0.0, 1000.0])
        w.writerow([2.0, conn, "ESTAB", 100.0, 300.0])
        w.writerow([3.0, conn, "ESTAB", 300.0, 700.0])
    summary = {
        "flows": [
            {
                "id": "tcp0",
                "proto": "tcp",
                "src": 1,
                "dst": 5,
                "duration_s": 30.0,
                "throughput_bps": 300_000.0,
                "tcp_timeouts": 2,
                "retransmits": 40,
                "tcp": {"conn": conn, "max_cwnd": 90, "max_rto_ms": 3200.0},
            }
        ],
        "routing_packets": 120,
        "network": {
            "drops": {"link_failure": 7, "ifq_full": 3, "aodv_rreq_duplicate": 5},
            "link_failures": 12,
            "link_failures_by_cause": {"collision": 12},
            "false_link_failure_pct": 100.0,
        },
    }
    return run_dir, summary


def test_rows_of_run_reads_the_data_connection_only(tmp_path: Path) -> None:
    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "multihop.yaml")
    point = multihop.select(
        expand(sweep), {"hops": ["4"], "window": ["none"], "routing.protocol": ["aodv"]}, [1]
    )
    run_dir, summary = _fake_run(tmp_path)
    (row,) = multihop.rows_of_run("multihop", point[0], run_dir, summary)
    assert (row.protocol, row.hops, row.window, row.seed) == ("aodv", "4", "none", 1)
    assert row.throughput_kbps == 300.0 and row.tcp_timeouts == 2 and row.max_cwnd == 90
    assert row.srtt_mean_ms == 200.0 and row.rto_mean_ms == 500.0  # control connection ignored
    assert (row.link_failure, row.ifq_full, row.collisions) == (7, 3, 12)
    assert json.loads(row.drops)["aodv_rreq_duplicate"] == 5
    csv_path = tmp_path / "rows.csv"
    multihop.append_rows(csv_path, [row])
    multihop.append_rows(csv_path, [row])
    rows = multihop.read_rows(csv_path)
    assert len(rows) == 2 and rows[0]["point_id"] == point[0].point_id


def test_report_writes_figures_and_the_generated_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "multihop.yaml")
    run_dir, summary = _fake_run(tmp_path)
    data, figures = tmp_path / "data", tmp_path / "figures"
    rows = []
    for proto, tput in (("static", 400_000.0), ("aodv", 300_000.0), ("dsr", 380_000.0)):
        for hops in ("1", "4"):
            (p,) = multihop.select(
                expand(sweep), {"hops": [hops], "window": ["none"], "routing.protocol": [proto]}, [1]
            )
            s = json.loads(json.dumps(summary))
            s["flows"][0]["throughput_bps"] = tput / int(hops)
            rows += multihop.rows_of_run("multihop", p, run_dir, s)
    multihop.append_rows(data / "multihop-flows.csv", rows)
    doc = tmp_path / "multihop.md"
    doc.write_text(f"# x\n\nbefore\n\n{multihop_report.BEGIN}\nold\n{multihop_report.END}\n\nafter\n")
    monkeypatch.setattr(multihop_report, "DOC", doc)
    assert multihop_report.main(data, figures) == 0
    text = doc.read_text()
    assert "before" in text and "after" in text and "old" not in text
    assert "| aodv | none | 4 | 75.0 |" in text  # 300 kbit/s over 4 hops
    assert (figures / "multihop-throughput.png").stat().st_size > 1000
    assert (figures / "multihop-ratio.png").stat().st_size > 1000


def test_a_valid_run_without_its_flow_row_gets_it_from_its_folder(tmp_path: Path) -> None:
    """Stopped between the runner's run row and ``on_valid``: the next start writes the flow row
    from the run folder (still there: it is removed only after its flow rows); a point whose
    folder is gone is named, not silently skipped."""
    from test_sweep import FakeRun

    from experiments import sweep as sw

    sweep = load_sweep(ROOT / "experiments" / "sweeps" / "multihop.yaml")
    points = multihop.select(expand(sweep), {"hops": ["4"], "window": ["8"]}, [1])[:2]
    runs, data, flows = tmp_path / "runs", tmp_path / "d", tmp_path / "flows.csv"
    sw.run_points(sweep, points, out_root=runs, data_dir=data, run_fn=FakeRun())  # no on_valid
    recs = {r.point_id: r for r in sw.valid_records(sweep, data)}
    assert set(recs) == {p.point_id for p in points} and not flows.exists()
    kept, gone = (runs / "multihop" / recs[p.point_id].run_id for p in points)
    run_dir, summary = _fake_run(tmp_path)
    (kept / "tcp").mkdir()
    (kept / "tcp" / "sta1.csv").write_bytes((run_dir / "tcp" / "sta1.csv").read_bytes())
    (kept / "summary.json").write_text(json.dumps(summary))
    shutil.rmtree(gone)
    lost = multihop.recover_flow_rows(sweep, points, runs, data, flows)
    assert lost == [points[1].point_id]
    (row,) = multihop.read_rows(flows)
    assert row["point_id"] == points[0].point_id and float(row["throughput_kbps"]) == 300.0
    assert not kept.exists()


def test_ratio_section_pairs_by_seed_with_intervals() -> None:
    """AODV at 0.8-0.824 x static by seed (static varies by seed): the ratio of means with a
    Fieller interval around it; DSR equal to static: 1.000 over all lengths."""
    import pandas as pd

    rows = []
    for hops in ("2", "4"):
        for seed, base in ((1, 300.0), (2, 360.0), (3, 330.0)):
            rows.append(("static", hops, "none", seed, base))
            rows.append(("aodv", hops, "none", seed, 0.8 * base * (1.0 + 0.01 * seed)))
            rows.append(("dsr", hops, "none", seed, base))
    df = pd.DataFrame(rows, columns=["protocol", "hops", "window", "seed", "throughput_kbps"])
    table = multihop_report.ratio_section(df)
    lines = {tuple(c.strip() for c in ln.strip("|").split("|"))[:3]: ln for ln in table.splitlines()[2:]}
    aodv4 = lines[("aodv", "none", "4")].split("|")
    assert aodv4[4].strip() == f"{0.8 * (1 + 0.01 * (300 + 720 + 990) / 990):.3f}"
    low, high = (float(x) for x in aodv4[5].strip(" []").split(","))
    assert low < 0.8164 < high and high - low < 0.1
    assert ("aodv", "none", "all") in lines and lines[("dsr", "none", "all")].split("|")[4].strip() == "1.000"
    assert lines[("dsr", "none", "2")].split("|")[6].strip() == "3"


def test_ratio_all_lengths_uses_the_seeds_every_length_has() -> None:
    """A length missing one seed's static run (a sweep still running): that length pairs on the
    seeds it has, and the all-lengths row on the seeds common to every length (was a crash)."""
    import pandas as pd

    rows = []
    for hops in ("2", "4"):
        for seed in (1, 2, 3):
            if not (hops == "2" and seed == 3):
                rows.append(("static", hops, "none", seed, 300.0 + 10 * seed))
            rows.append(("aodv", hops, "none", seed, 0.9 * (300.0 + 10 * seed) + seed))
    df = pd.DataFrame(rows, columns=["protocol", "hops", "window", "seed", "throughput_kbps"])
    lines = {
        tuple(c.strip() for c in ln.strip("|").split("|"))[:3]: [c.strip() for c in ln.strip("|").split("|")]
        for ln in multihop_report.ratio_section(df).splitlines()[2:]
    }
    assert lines[("aodv", "none", "2")][5] == "2" and lines[("aodv", "none", "4")][5] == "3"
    assert lines[("aodv", "none", "all")][5] == "2"
