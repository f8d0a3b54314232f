"""Scenario files: every shipped file loads; every wrong field fails naming file, field and reason."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodes.extensions import compatible_protocols, needs_of
from topologies import EXTENSIONS, ScenarioError, load_scenario
from topologies.generate import chain, grid, random_scenario
from topologies.scenario import Scenario, apply_overrides, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"
SHIPPED = sorted(TOPOLOGIES.glob("*.yaml"))

BASE = textwrap.dedent(
    """\
    name: t
    duration_s: 30
    stations:
      count: 5
      placement: {kind: line, spacing_m: 200}
    traffic:
      tcp:
        - {src: 1, dst: 5, start_s: 1, duration_s: 20}
    routing: {protocol: static}
    """
)


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path, overrides: dict[str, Any] | None = None) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides)
    return info.value


def test_there_are_shipped_scenarios() -> None:
    names = {p.stem for p in SHIPPED}
    for required in ("chain5", "grid9", "chain5-dsr-mobile", "yu2004-small", "ghanem2008-small"):
        assert required in names
    for required in ("klemm2004-small", "cohen-small", "liu2001-atcp"):
        assert required in names


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenario_loads_and_round_trips(path: Path) -> None:
    sc = load_scenario(path)
    assert sc.name == path.stem
    assert len(sc.initial_positions()) == sc.stations.count
    for flow in sc.traffic.tcp:
        assert flow.cc is not None
        assert flow.duration_s is not None
        assert flow.start_s + flow.duration_s <= sc.duration_s
    again = Scenario.model_validate_json(sc.model_dump_json())
    assert again == sc
    # JSON is YAML: a saved "scenario as run" loads back through load_scenario too.
    assert load_scenario(write_json(path, sc)) == sc


def write_json(path: Path, sc: Scenario) -> Path:
    import tempfile

    out = Path(tempfile.mkdtemp()) / f"{path.stem}.json"
    out.write_text(sc.model_dump_json(indent=2))
    return out


def test_static_routes_on_chain5_are_the_chain() -> None:
    sc = load_scenario(TOPOLOGIES / "chain5.yaml")
    routes = sc.static_routes()
    for src in range(1, 6):
        for dst in range(1, 6):
            if src == dst:
                assert dst not in routes[src]
            else:
                assert routes[src][dst] == (src + 1 if dst > src else src - 1)


def test_nominal_ranges_follow_from_the_preset_parameters() -> None:
    sc = load_scenario(TOPOLOGIES / "chain5.yaml")
    assert sc.nominal_range_m() == pytest.approx(250, abs=0.5)
    assert sc.carrier_sense_range_m() == pytest.approx(550, abs=0.5)
    wm = load_scenario(TOPOLOGIES / "chain5.yaml", {"radio.preset": "wmediumd"})
    assert 100 < wm.nominal_range_m() < 1000
    assert load_scenario(TOPOLOGIES / "cohen-small.yaml").nominal_range_m() == 225


def test_nominal_range_honours_radio_overrides() -> None:
    # 10 dB more transmit power: 250 m * 10^(10/40) = 445 m > 400 m, so on the 200 m chain station 1
    # reaches 3 directly in the medium, and routes: auto must say so too.
    sc = load_scenario(TOPOLOGIES / "chain5.yaml", {"radio.overrides": {"tx_power_dbm": 34.5}})
    assert sc.nominal_range_m() == pytest.approx(250 * 10**0.25, rel=1e-3)
    assert sc.neighbours()[1] == [2, 3]
    assert sc.static_routes()[1][3] == 3
    # A higher receive threshold shrinks it: 250 m * 10^(-6/40) = 177 m < 200 m, the chain breaks
    # and the scenario's flow has no route, as it would have none in the medium.
    with pytest.raises(ScenarioError, match=r"no static route from 1 to 5 \(routes: auto, range 176\.9"):
        load_scenario(TOPOLOGIES / "chain5.yaml", {"radio.overrides": {"rx_threshold_dbm": -58.37}})
    # radio.nominal_range_m still wins over the derived range.
    fixed = load_scenario(
        TOPOLOGIES / "chain5.yaml", {"radio.overrides": {"tx_power_dbm": 34.5}, "radio.nominal_range_m": 220}
    )
    assert fixed.nominal_range_m() == 220


def test_a_range_override_of_the_wrong_type_is_a_scenario_error(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "radio: {overrides: {tx_power_dbm: high}}\n")
    err = error_of(path)
    assert "radio" in str(err) and "tx_power_dbm must be a number" in str(err)


def test_grid_routes_do_not_use_diagonals() -> None:
    sc = load_scenario(TOPOLOGIES / "grid9.yaml")
    assert sc.neighbours()[1] == [2, 4]
    assert sc.neighbours()[5] == [2, 4, 6, 8]
    routes = sc.static_routes()
    assert routes[1][9] == 2  # tie between 2 and 4: the lowest id


P2P_CHAIN: dict[str, Any] = {"hops": [[1, 2], [2, 3], [3, 4], [4, 5]], "rate_bps": 32000}


def test_p2p_routes_follow_the_hops() -> None:
    sc = load_scenario(TOPOLOGIES / "liu2001-atcp.yaml")
    assert sc.static_routes()[1] == {2: 2, 3: 2, 4: 2, 5: 2}
    assert sc.p2p is not None and sc.p2p.rate_bps == 32000


def test_p2p_becomes_one_medium_link_per_hop() -> None:
    sc = load_scenario(TOPOLOGIES / "liu2001-atcp.yaml")
    assert sc.p2p is not None
    links = sc.p2p.medium_config()["links"]
    assert isinstance(links, list) and [(lk["a"], lk["b"]) for lk in links] == [
        (1, 2),
        (2, 3),
        (3, 4),
        (4, 5),
    ]
    assert links[2] == {
        "a": 3,
        "b": 4,
        "rate_bps": 32000.0,
        "delay_ms": [0.0, 20.0],
        "ber": 1e-5,
        "loss": 0.0,
        "reorder_prob": 0.0,
        "reorder_delay_ms": 0.0,
        "overhead_bytes": 0,
    }


def test_p2p_becomes_the_mediums_links_and_congestion_windows() -> None:
    sc = load_scenario(TOPOLOGIES / "liu2001-congestion-full.yaml")
    assert sc.p2p is not None
    cfg = sc.p2p.medium_config()
    assert [(link["a"], link["b"]) for link in cfg["links"]] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert cfg["links"][0]["rate_bps"] == 32000 and cfg["links"][0]["ber"] == 1e-5
    assert cfg["links"][0]["delay_ms"] == [0, 20]
    assert cfg["congestion"] == [{"from": 3, "to": 4, "period_s": 5, "duration_s": 0.2, "start_s": 5}]
    assert sc.tcp.ecn is False  # the paper's TCP; the ATCP variant turns ECN on (the sweep)
    assert "congestion" not in load_scenario(TOPOLOGIES / "liu2001-atcp.yaml").p2p.medium_config()  # type: ignore[union-attr]


def test_liu_partition_scenario_cuts_one_hop_one_minute_in_five() -> None:
    sc = load_scenario(TOPOLOGIES / "liu2001-partition-full.yaml")
    cuts = [(e.t_s, e.a, e.b, e.duration_s) for e in sc.events]
    assert cuts == [(300.0 * k, [1, 2, 3], [4, 5], 60.0) for k in range(1, 12)]
    assert sc.routing.icmp.unreachable is True


def test_defaults_fill_flow_cc_and_duration(tmp_path: Path) -> None:
    text = BASE.replace("start_s: 1, duration_s: 20", "start_s: 10") + "tcp: {cc: cubic}\n"
    sc = load_scenario(write(tmp_path, text))
    assert sc.traffic.tcp[0].cc == "cubic"
    assert sc.traffic.tcp[0].duration_s == 20
    assert sc.seed == 1
    assert sc.routing.routes == "auto"


def test_overrides_set_dotted_paths(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    sc = load_scenario(path, {"seed": 7, "traffic.tcp[0].cc": "cubic", "tcp.ecn": True})
    assert (sc.seed, sc.traffic.tcp[0].cc, sc.tcp.ecn) == (7, "cubic", True)
    sc = load_scenario(path, {"routing.extensions": ["atcp"], "traffic.tcp.0.max_window_pkts": 8})
    assert sc.routing.extensions == ["atcp"]
    assert sc.traffic.tcp[0].max_window_pkts == 8
    assert apply_overrides({"a": [1]}, {"b.c": 2}) == {"a": [1], "b": {"c": 2}}


# (name, change to BASE as overrides, expected field path, words expected in the reason)
BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("unknown top key", {"colour": "red"}, "colour", "unknown key"),
    ("unknown nested key", {"traffic.tcp[0].window": 8}, "traffic.tcp[0].window", "unknown key"),
    ("bad type", {"stations.count": "five"}, "stations.count", "integer"),
    ("bool as number", {"traffic.tcp[0].src": True}, "traffic.tcp[0].src", "integer"),
    ("negative duration", {"duration_s": -5}, "duration_s", "greater than 0"),
    ("zero duration", {"duration_s": 0}, "duration_s", "greater than 0"),
    ("flow to missing station", {"traffic.tcp[0].dst": 9}, "traffic.tcp[0].dst", "station 9 does not exist"),
    ("flow to itself", {"traffic.tcp[0].dst": 1}, "traffic.tcp[0].dst", "both station 1"),
    ("flow past the end", {"traffic.tcp[0].duration_s": 40}, "traffic.tcp[0].duration_s", "after the end"),
    ("flow starts after end", {"traffic.tcp[0].start_s": 31}, "traffic.tcp[0].start_s", "after the end"),
    (
        "missing ns2 file",
        {"mobility": {"model": "ns2", "file": "nope.tcl"}},
        "mobility.file",
        "does not exist",
    ),
    ("bad protocol", {"routing.protocol": "olsr"}, "routing.protocol", "'static', 'dsr' or 'aodv'"),
    ("bad cc", {"tcp.cc": "westwood"}, "tcp.cc", "reno"),
    (
        "bad extension",
        {"routing.extensions": ["elfn", "magic"]},
        "routing.extensions[1]",
        "unknown extension",
    ),
    (
        "extension for other protocol",
        {"routing.extensions": ["epln"]},
        "routing.extensions[0]",
        "works with dsr",
    ),
    ("bad mobility model", {"mobility": {"model": "teleport"}}, "mobility.model", "teleport"),
    (
        "rwp without min speed",
        {"mobility": {"model": "random_waypoint", "max_speed_mps": 5}},
        "mobility.min_speed_mps",
        "exactly one",
    ),
    (
        "positions count",
        {"stations.positions": [[0, 0], [200, 0]], "stations.placement": None},
        "stations.positions",
        "2 positions for 5",
    ),
    (
        "position outside field",
        {"stations.positions": {3: [5000, 0]}},
        "stations.positions[3]",
        "outside the field",
    ),
    ("line outside field", {"stations.count": 8}, "stations.placement", "outside the field"),
    ("static id missing", {"stations.static": [1, 6]}, "stations.static[1]", "station 6 does not exist"),
    ("bad name", {"name": "Chain 5"}, "name", "pattern"),
    ("missing required", {"stations": {"placement": {"kind": "random"}}}, "stations.count", "required"),
    ("grid without cols", {"stations.placement": {"kind": "grid"}}, "stations.placement.cols", "required"),
    ("loss above 1", {"links": [{"a": 1, "b": 2, "loss": 1.5}]}, "links[0].loss", "less than or equal to 1"),
    ("link to itself", {"links": [{"a": 2, "b": 2}]}, "links[0].b", "two stations"),
    (
        "event after end",
        {"events": [{"t_s": 30, "op": "move", "station": 1, "x": 0, "y": 0}]},
        "events[0].t_s",
        "end",
    ),
    (
        "event station",
        {"events": [{"t_s": 3, "op": "move", "station": 7, "x": 0, "y": 0}]},
        "events[0].station",
        "station 7",
    ),
    (
        "partition overlap",
        {"events": [{"t_s": 3, "op": "partition", "a": [1, 2], "b": [2, 3]}]},
        "events[0].b",
        "both sides",
    ),
    ("unknown event op", {"events": [{"t_s": 3, "op": "explode"}]}, "events[0].op", "explode"),
    (
        "explicit routes with dsr",
        {"routing": {"protocol": "dsr", "routes": {1: {5: 2}}}},
        "routing.routes",
        "need protocol static",
    ),
    (
        "unreachable flow",
        {"stations.placement.spacing_m": 100, "stations.positions": {5: [990, 0]}, "field.x_m": 1000},
        "traffic.tcp[0]",
        "no static route",
    ),
    (
        "params for an unlisted extension",
        {"routing.extension_params": {"abra": {"min_srtt_init": 0.1}}},
        "routing.extension_params.abra",
        "does not list",
    ),
    ("explicit route loop", {"routing.routes": {1: {5: 2}, 2: {5: 1}}}, "traffic.tcp[0]", "loop"),
    (
        "p2p hop station",
        {"p2p": {"hops": [[1, 2], [2, 9]], "rate_bps": 32000}},
        "p2p.hops[1][1]",
        "station 9 does not exist",
    ),
    (
        "p2p hop to itself",
        {"p2p": {"hops": [[1, 2], [2, 2]], "rate_bps": 32000}},
        "p2p.hops[1]",
        "both are 2",
    ),
    ("p2p without a rate", {"p2p": {"hops": [[1, 2]]}}, "p2p.rate_bps", "required"),
    (
        "p2p delay range upside down",
        {"p2p": {"hops": [[1, 2]], "rate_bps": 32000, "delay_ms": [20, 0]}},
        "p2p.delay_ms",
        "the minimum is above the maximum",
    ),
    (
        "p2p unknown field",
        {"p2p": {"hops": [[1, 2]], "rate_bps": 32000, "bandwidth": 1}},
        "p2p.bandwidth",
        "unknown key",
    ),
    (
        "p2p congestion as long as its period",
        {"p2p": {**P2P_CHAIN, "congestion": [{"hop": [3, 4], "period_s": 5, "duration_s": 5}]}},
        "p2p.congestion[0].duration_s",
        "not shorter than period_s (5 s)",
    ),
    (
        "p2p congestion on a pair that is no hop",
        {"p2p": {**P2P_CHAIN, "congestion": [{"hop": [1, 3], "period_s": 5, "duration_s": 0.2}]}},
        "p2p.congestion[0].hop",
        "not one of p2p.hops",
    ),
    ("icmp rate limit", {"routing.icmp": {"ratelimit_ms": -1}}, "routing.icmp.ratelimit_ms", "greater than"),
]


@pytest.mark.parametrize(("overrides", "field", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_wrong_field_names_file_field_and_reason(
    tmp_path: Path, overrides: dict[str, Any], field: str, reason: str
) -> None:
    # Edit the YAML itself (not overrides) so the error carries a line number, as a user sees it.
    data = apply_overrides(yaml.safe_load(BASE), overrides)
    path = write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    err = error_of(path)
    message = str(err)
    assert str(path) in message
    assert f": {field}: " in message, message
    assert reason in message, message
    assert any(p == field and reason in r for p, r in err.problems), err.problems


def test_error_message_format_with_line(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("dst: 5", "dst: 9"), "chain5.yaml")
    err = error_of(path)
    assert str(err) == f"{path}:8: traffic.tcp[0].dst: station 9 does not exist (stations are 1..5)"


def test_overridden_value_is_blamed_on_overrides(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, BASE), {"traffic.tcp[0].dst": 9})
    assert str(err).endswith("station 9 does not exist (stations are 1..5) (value from overrides)")


def test_all_problems_are_reported(tmp_path: Path) -> None:
    data = apply_overrides(yaml.safe_load(BASE), {"traffic.tcp[0].dst": 9, "stations.static": [7]})
    err = error_of(write(tmp_path, yaml.safe_dump(data)))
    assert {p for p, _ in err.problems} == {"traffic.tcp[0].dst", "stations.static[0]"}
    assert len(str(err).splitlines()) == 2


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("name: t\nduration_s: 30\n  bad: [1\n", 3, "YAML syntax error"),
        ("name: t\nstations: {count: 3\n", 3, "YAML syntax error"),
        ("name: t\nname: u\n", 2, "duplicate key 'name'"),
    ],
)
def test_yaml_syntax_errors_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, text)
    message = str(error_of(path))
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


@pytest.mark.parametrize(("text", "words"), [("", "empty"), ("[1, 2]\n", "list"), ("42\n", "int")])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, words: str) -> None:
    message = str(error_of(write(tmp_path, text)))
    assert message.startswith(str(tmp_path)) and words in message


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    assert str(tmp_path / "nope.yaml") in str(error_of(tmp_path / "nope.yaml"))


def test_movement_file_is_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "moves").mkdir()
    (tmp_path / "moves" / "m.tcl").write_text(
        '$node_(1) set X_ 10.0\n$node_(1) set Y_ 0.0\n$ns_ at 1.0 "$node_(1) setdest 110.0 0.0 10.0"\n'
    )
    data = apply_overrides(
        yaml.safe_load(BASE), {"mobility": {"model": "ns2", "file": "moves/m.tcl"}, "routing.protocol": "dsr"}
    )
    sc = load_scenario(write(tmp_path, yaml.safe_dump(data)))
    assert Path(sc.mobility.file).is_absolute()  # type: ignore[union-attr]
    assert sc.initial_positions()[2] == (10.0, 0.0)
    assert sc.initial_positions()[1] == (0.0, 0.0)  # not in the file: placed


def test_bad_movement_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "m.tcl").write_text("$node_(0) set X_ 1\n$node_(0) set Y_ 1\n$node_(0) fly away\n")
    data = apply_overrides(yaml.safe_load(BASE), {"mobility": {"model": "ns2", "file": "m.tcl"}})
    message = str(error_of(write(tmp_path, yaml.safe_dump(data))))
    assert "mobility.file" in message and f"{tmp_path / 'm.tcl'}:3:" in message


def test_movement_file_with_too_many_nodes(tmp_path: Path) -> None:
    (tmp_path / "m.movements").write_text("\n".join("0 1 1 10 2 2" for _ in range(6)) + "\n")
    data = apply_overrides(yaml.safe_load(BASE), {"mobility": {"model": "bonnmotion", "file": "m.movements"}})
    message = str(error_of(write(tmp_path, yaml.safe_dump(data))))
    assert "mobility.file" in message and "station 6" in message


def documented_extensions() -> dict[str, tuple[set[str], bool]]:
    """docs/extensions.md's declarations table: extension -> (protocols, needs the agent). The code
    derives both from each extension's NEEDS and each core's EMITS; a core that stops emitting an
    event (or an extension that starts needing one) changes the derivation and fails here, where
    the docs must change with it. The table is the only other place the facts are written."""
    text = (ROOT / "docs" / "extensions.md").read_text()
    section = text.split("## Declarations", 1)[1].split("\n## ", 1)[0]
    table: dict[str, tuple[set[str], bool]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        names, _needs, agent, protocols = cells
        for name in names.replace("`", "").split(","):
            table[name.strip()] = ({p.strip() for p in protocols.split(",")}, agent == "yes")
    return table


DOCUMENTED = documented_extensions()


def test_extension_compatibility_is_the_documented_one() -> None:
    assert len(DOCUMENTED) >= 11 and set(EXTENSIONS) == set(DOCUMENTED)
    assert {e: set(compatible_protocols(e)) for e in EXTENSIONS} == {e: d[0] for e, d in DOCUMENTED.items()}
    assert {e: needs_of(e).endpoint for e in EXTENSIONS} == {e: d[1] for e, d in DOCUMENTED.items()}


@pytest.mark.parametrize("ext", sorted(DOCUMENTED))
def test_every_wrong_protocol_is_a_scenario_error_naming_the_field(tmp_path: Path, ext: str) -> None:
    for proto in sorted({"static", "dsr", "aodv"} - DOCUMENTED[ext][0]):
        data = apply_overrides(yaml.safe_load(BASE), {"routing.protocol": proto, "routing.extensions": [ext]})
        message = str(error_of(write(tmp_path, yaml.safe_dump(data))))
        allowed = " or ".join(sorted(DOCUMENTED[ext][0]))
        assert "routing.extensions[0]" in message and f"works with {allowed}, not {proto}" in message


@pytest.mark.parametrize(
    "data",
    [chain(5, 200), chain(7, 150, protocol="aodv"), grid(3, 4, 200), random_scenario(10, 800, 300, 5)],
    ids=["chain5", "chain7", "grid12", "random10"],
)
def test_generators_make_valid_scenarios(data: dict[str, Any]) -> None:
    sc = scenario_from_dict(data)
    assert sc.stations.count == data["stations"]["count"]
    if sc.routing.protocol == "static":
        dst = sc.traffic.tcp[0].dst
        assert dst in sc.static_routes()[1]


def test_generate_cli(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "topologies.generate", "chain", "--n", "5", "--spacing", "200"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sc = load_scenario(write(tmp_path, out))
    assert sc.static_routes()[1][5] == 2
    moves = subprocess.run(
        [
            sys.executable,
            "-m",
            "topologies.generate",
            "setdest",
            "topologies/chain5-dsr-mobile.yaml",
            "--seed",
            "3",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"$node_(1) setdest' in moves
    bad = subprocess.run(
        [sys.executable, "-m", "topologies.generate", "chain", "--n", "5", "--cc", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "traffic.tcp[0].cc" in bad.stderr


def test_dump_is_json_serialisable_for_the_runner() -> None:
    sc = load_scenario(TOPOLOGIES / "klemm2004-small.yaml")
    data = json.loads(sc.model_dump_json())
    assert data["mobility"]["model"] == "random_waypoint"
    assert data["stations"]["positions"] == {"1": [150.0, 0.0], "22": [150.0, 750.0]}
