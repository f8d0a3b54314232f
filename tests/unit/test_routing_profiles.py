"""Routing profiles (issue 46): the ``routing.profile`` field, its resolution into the cores'
parameters, bad input naming file, line and field, and point ids and rows that keep code
behaviours apart. The behaviours each profile selects are tested in tests/unit/dsr and
tests/unit/aodv."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from experiments.rows import LEGACY_PROFILE, ROUTING_COLS, TCP_COLS, RowStore, RunRecord, _check, _csv_line
from experiments.spec import point_id, routing_digest
from nodes.core.protocol import NodeContext, ParamError
from nodes.protocols import effective_params
from nodes.protocols.aodv import create as create_aodv
from nodes.protocols.aodv.params import PROFILES as AODV_PROFILES
from nodes.protocols.aodv.params import AodvParams
from nodes.protocols.dsr.params import PROFILES as DSR_PROFILES
from nodes.protocols.dsr.params import DsrParams
from nodes.protocols.profiles import RoutingProfile, params_digest, routing_profile_summary
from nodes.router.config import ProtocolConfig, RouterConfig
from topologies.scenario import ScenarioError, load_scenario

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


def test_a_profile_sets_its_values_and_explicit_params_win() -> None:
    rfc = effective_params("aodv", "rfc", {"ttl_start": 3})
    assert isinstance(rfc, AodvParams)
    assert rfc.ttl_start == 3
    for name, value in AODV_PROFILES[RoutingProfile.RFC].items():
        if name != "ttl_start":
            assert getattr(rfc, name) == value
    assert effective_params("dsr", "legacy", None) == DsrParams()
    assert effective_params("static", "ns2", None) is None


def test_profiles_that_differ_have_different_digests() -> None:
    digests = {p: params_digest(effective_params("aodv", p.value, None)) for p in RoutingProfile}
    distinct = {
        p: dataclasses.asdict(effective_params("aodv", p.value, None))  # type: ignore[call-overload]
        for p in RoutingProfile
    }
    for a in RoutingProfile:
        for b in RoutingProfile:
            assert (digests[a] == digests[b]) == (distinct[a] == distinct[b])


def test_unknown_profile_and_foreign_parameter_are_errors_naming_where() -> None:
    with pytest.raises(
        ParamError, match=r"protocol.params: unknown routing profile 'ns3'; known: ns2, rfc, legacy"
    ):
        effective_params("dsr", "ns3", None, "protocol.params")
    with pytest.raises(ParamError, match=r"unknown parameter\(s\) \['ttl_start'\]"):
        effective_params("dsr", "ns2", {"ttl_start": 1}, "protocol.params")


def _write(tmp_path: Path, routing: str) -> Path:
    f = tmp_path / "s.yaml"
    f.write_text(
        "name: s\nduration_s: 10\nstations: {count: 3}\n"
        "traffic:\n  tcp: [{src: 1, dst: 3}]\n"
        f"routing: {routing}\n"
    )
    return f


def test_scenario_load_errors_name_file_line_and_field(tmp_path: Path) -> None:
    with pytest.raises(
        ScenarioError, match=r"s.yaml:6: routing.profile: Input should be 'ns2', 'rfc' or 'legacy'"
    ):
        load_scenario(_write(tmp_path, "{protocol: dsr, profile: ns3}"))
    with pytest.raises(ScenarioError, match=r"s.yaml:6: routing.params.ttl_start: not a parameter of dsr"):
        load_scenario(_write(tmp_path, "{protocol: dsr, params: {ttl_start: 2}}"))
    with pytest.raises(ScenarioError, match=r"s.yaml:6: routing.params: .*request_period_s must be >= 0"):
        load_scenario(_write(tmp_path, "{protocol: dsr, params: {request_period_s: -1}}"))
    with pytest.raises(ScenarioError, match=r"routing.params.ttl_start: static routing takes no parameters"):
        load_scenario(_write(tmp_path, "{protocol: static, params: {ttl_start: 2}}"))
    assert load_scenario(_write(tmp_path, "{protocol: aodv}")).routing.profile == "ns2"


def test_the_router_config_carries_the_profile_to_the_core() -> None:
    cfg = RouterConfig(2, "/m.sock", ProtocolConfig("aodv", {"ttl_start": 3}, None, "rfc"), "/o")
    back = RouterConfig.from_json(cfg.to_json())
    assert back.protocol.profile == "rfc"
    core = create_aodv(NodeContext(station=2, n_stations=3, rng=random.Random(2)), back.protocol.to_json())
    assert core.p == effective_params("aodv", "rfc", {"ttl_start": 3})


PAPERS = ("cohen", "ghanem2008", "klemm2004", "yu2004", "yu2004-100")


@pytest.mark.parametrize("paper", PAPERS)
def test_each_paper_scenario_runs_ns2_and_its_base_keeps_legacy(paper: str) -> None:
    assert load_scenario(TOPOLOGIES / f"{paper}.yaml").routing.profile == "ns2"
    assert load_scenario(TOPOLOGIES / f"{paper}-full.yaml").routing.profile == "legacy"
    assert load_scenario(TOPOLOGIES / f"{paper.removesuffix('-100')}-small.yaml").routing.profile == "ns2"


def test_a_legacy_or_static_point_keeps_its_id_and_a_profile_gets_a_new_one() -> None:
    full = "topologies/yu2004-full.yaml"
    assert routing_digest(full, {}) is None
    assert routing_digest("topologies/chain5.yaml", {}) is None
    ns2 = routing_digest(full, {"routing.profile": "ns2"})
    rfc = routing_digest(full, {"routing.profile": "rfc"})
    assert ns2 is not None and rfc is not None
    assert point_id(full, {"routing.profile": "ns2"}, 1, None, ns2) != point_id(
        full, {"routing.profile": "ns2"}, 1
    )
    assert ns2 == routing_profile_summary("dsr", "ns2", {})["digest"]
    assert (ns2 == rfc) == (DSR_PROFILES[RoutingProfile.NS2] == DSR_PROFILES[RoutingProfile.RFC])


def _record(pid: str, profile: str, digest: str) -> RunRecord:
    return RunRecord(
        experiment="e", point_id=pid, index=0, params={"x": "1"}, seed=1, attempt=1, valid=True,
        invalid_reasons=(), metrics={"m": 1.0}, signals={}, flows=(), duration_s=1.0, wall_s=1.0,
        run_id="r", revision="rev", host="h", finished_at="t", routing_profile=profile, routing_digest=digest,
    )  # fmt: skip


def test_a_rows_file_from_before_routing_profiles_gets_the_columns_and_reads_legacy(tmp_path: Path) -> None:
    store = RowStore("e", tmp_path)
    store.append(_record("p1", "", ""), ["x"], ["m"])
    lines = store.path.read_text().splitlines()
    head = lines[0].split(",")
    keep = [i for i, c in enumerate(head) if c not in ROUTING_COLS and c != "check"]
    old = [_csv_line([head[i] for i in keep] + ["check"])]
    for line in lines[1:]:
        vals = [line.split(",")[i] for i in keep]
        old.append(_csv_line([*vals, _check(vals)]))
    store.path.write_text("".join(old))
    assert set(ROUTING_COLS).isdisjoint(store.columns() or [])

    store.append(_record("p2", "ns2", "abcdef012345"), ["x"], ["m"])
    cols = store.columns() or []
    at = cols.index(TCP_COLS[-1]) + 1
    assert cols[at : at + 2] == list(ROUTING_COLS)
    loaded = store.load()
    assert not loaded.problems
    assert [(r.point_id, r.routing_profile, r.routing_digest) for r in loaded.records] == [
        ("p1", LEGACY_PROFILE, ""),
        ("p2", "ns2", "abcdef012345"),
    ]
