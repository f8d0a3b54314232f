"""experiments.digest: one run's files into a RunDigest, and the per-point means (no I/O but tmp)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from experiments.digest import load_digests, main, per_point, run_digest

POINT = {"params": {"rc": "none", "tcp.sack": True}, "seed": 3, "point_id": "p1"}


def _summary(**kw: object) -> dict[str, object]:
    s: dict[str, object] = {
        "complete": True,
        "valid": True,
        "flows": [{"proto": "tcp", "src": 1, "dst": 50}],
        "routing_packets": 600,
        "network": {"data_originated": 1000, "data_forwarded": 3000, "drops": {"hop_loss": 40}},
        "timeouts_by_cause": {"routing_drop": 2, "link_break": 1},
    }
    s.update(kw)
    return s


def test_run_digest_counts_the_sources_recovery_and_the_path() -> None:
    before = {
        "sta1": {"TcpExtTCPTimeouts": 5, "TcpExtTCPFastRetrans": 10},
        "sta50": {"TcpExtTCPFastRetrans": 0},
    }
    after = {
        "sta1": {"TcpExtTCPTimeouts": 8, "TcpExtTCPFastRetrans": 70},
        "sta50": {"TcpExtTCPFastRetrans": 99},
    }
    d = run_digest(POINT, _summary(), before, after)
    assert d.params == {"rc": "none", "tcp.sack": "true"} and d.seed == 3
    assert d.hops == 4.0  # 1 + 3000 forwarded / 1000 originated
    assert d.recovery["rto"] == 3 and d.recovery["fast_retrans"] == 60  # the sink's counters do not count
    assert d.recovery["sack_recovery"] == 0
    assert d.rto_causes == {"routing_drop": 2, "link_break": 1} and d.hop_loss_drops == 40
    assert math.isnan(run_digest(POINT, _summary(network={}), {}, {}).hops)


def _write_run(root: Path, name: str, point: dict[str, object], summary: dict[str, object]) -> None:
    d = root / name
    (d / "nstat").mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "sweep-point.json").write_text(json.dumps(point))
    (d / "nstat" / "before.json").write_text(json.dumps({"sta1": {"TcpExtTCPTimeouts": 0}}))
    (d / "nstat" / "after.json").write_text(json.dumps({"sta1": {"TcpExtTCPTimeouts": 4}}))


def test_per_point_means_over_valid_runs_only(tmp_path: Path) -> None:
    _write_run(tmp_path, "a", POINT, _summary())
    _write_run(
        tmp_path, "b", {**POINT, "seed": 4, "point_id": "p2"}, _summary(timeouts_by_cause={"no_route": 2})
    )
    _write_run(tmp_path, "c", {**POINT, "seed": 5, "point_id": "p3"}, _summary(valid=False))
    digests = load_digests(tmp_path)
    assert sorted(d.seed for d in digests) == [3, 4]  # the invalid run is not explained
    # nor one whose row in git was marked invalid after the run (its folder still says valid)
    assert [d.seed for d in load_digests(tmp_path, invalid={"a"})] == [4]
    t = per_point(digests)
    assert list(t["runs"]) == [2] and list(t["rto"]) == [4.0]
    # a cause one run never had counts as 0 there, not as missing
    assert list(t["rto_routing_drop"]) == [1.0] and list(t["rto_no_route"]) == [1.0]
    assert main([tmp_path.name, "--out", str(tmp_path.parent), "--by", "speed"]) == 2
    assert main(["nothing-here", "--out", str(tmp_path)]) == 2
