"""TCP profiles (issue 45): the merge of a profile with a scenario's fields, the errors of a bad
``tcp`` block, what each profile writes into a station, the read-back checks, the host's allowed
list of congestion controls, scenario inheritance, and the rows' TCP columns."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from pathlib import Path

import pytest

from experiments.rows import LEGACY_PROFILE, TCP_COLS, RowStore, RunRecord
from experiments.spec import point_id, tcp_digest
from testbed import ccallow
from testbed.run import station_sysctls
from testbed.tcpprofile import (
    Mismatch,
    bpf_params,
    flow_mismatches,
    parse_route_metrics,
    route_metrics,
    sysctl_mismatches,
)
from testbed.tcpprofile import station_sysctls as profile_sysctls
from topologies.scenario import ScenarioError, load_scenario, merge_documents, scenario_from_dict
from topologies.schema import TcpSettings
from topologies.tcp_profiles import (
    KNOB_MECHANISMS,
    KNOBS,
    PROFILES,
    KnobSource,
    ProfileError,
    TcpKnobs,
    kernel_problems,
    resolve,
)

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"


def _scenario(tcp: dict[str, object], flows: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {
        "name": "t",
        "duration_s": 10,
        "stations": {"count": 2},
        "traffic": {"tcp": flows if flows is not None else [{"src": 1, "dst": 2}]},
        "tcp": tcp,
    }


# ---------------------------------------------------------------------------- the table


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_value_a_profile_sets_has_its_source(name: str) -> None:
    p = PROFILES[name]
    set_knobs = {k for k, v in asdict(p.knobs).items() if v is not None}
    assert set_knobs and set_knobs <= set(p.sources), sorted(set_knobs - set(p.sources))


def test_the_scenario_fields_are_the_knobs() -> None:
    """One list of knobs: TcpSettings has exactly TcpKnobs' fields plus profile and extra_sysctls,
    and every knob has a kernel mechanism."""
    assert set(TcpSettings.model_fields) == {*KNOBS, "profile", "extra_sysctls"}
    assert set(KNOB_MECHANISMS) == {f.name for f in fields(TcpKnobs)}


# ---------------------------------------------------------------------------- merging


def test_an_explicit_field_overrides_the_profile_and_says_so() -> None:
    eff = resolve("ns2-2.29", {"window_pkts": 8, "sack": True})
    assert (eff.knobs.window_pkts, eff.knobs.sack, eff.knobs.rto_min_ms, eff.knobs.ecn) == (
        8,
        True,
        200,
        False,
    )
    assert eff.sources["window_pkts"] is KnobSource.SCENARIO
    assert eff.sources["rto_min_ms"] is KnobSource.PROFILE
    assert eff.sources["rmem_max"] is KnobSource.KERNEL
    assert eff.knobs.rmem_max is None


def test_the_summary_names_who_won() -> None:
    sc = scenario_from_dict(_scenario({"profile": "ns2-2.1b8a", "cc": "reno", "window_pkts": 8}))
    s = sc.tcp.effective.summary()
    assert s["profile"] == "ns2-2.1b8a"
    knobs = s["knobs"]
    assert isinstance(knobs, dict)
    assert knobs["window_pkts"] == {"value": 8, "source": "scenario"}
    assert knobs["rto_min_ms"] == {"value": 1000, "source": "profile"}
    assert "rmem_max" not in knobs


def test_a_flow_takes_the_profiles_mss_and_cc_unless_it_names_its_own() -> None:
    sc = scenario_from_dict(
        _scenario(
            {"profile": "ns2-2.29"}, [{"src": 1, "dst": 2}, {"src": 2, "dst": 1, "mss": 1460, "cc": "cubic"}]
        )
    )
    assert [(f.mss, f.cc) for f in sc.traffic.tcp] == [(1000, "reno"), (1460, "cubic")]
    legacy = scenario_from_dict(_scenario({}))
    assert (legacy.tcp.profile, legacy.traffic.tcp[0].mss, legacy.traffic.tcp[0].cc) == (
        "legacy",
        1460,
        "reno",
    )


def test_the_digest_follows_the_settings() -> None:
    a = resolve("ns2-2.29", {})
    assert a.digest() == resolve("ns2-2.29", {}).digest()
    assert a.digest() != resolve("ns2-2.29", {"window_pkts": 8}).digest()
    assert a.digest() != resolve("ns2-2.33", {}).digest()
    assert a.digest() != resolve("ns2-2.29", {}, {"net.ipv4.tcp_autocorking": "0"}).digest()


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("tcp", "path", "words"),
    [
        ({"profile": "ns3"}, "tcp.profile", "ns2-2.29"),  # the choices are listed
        ({"profile": "ns2-2.29", "tlp": True}, "tcp.tlp", "needs SACK"),
        ({"profile": "linux", "sack": False, "dsack": True}, "tcp.dsack", "needs SACK"),
        ({"profile": "ns2-2.29", "rto_max_ms": 500}, "tcp.rto_max_ms", "1000..120000"),
        ({"profile": "ns2-2.29", "init_cwnd": 30}, "tcp.init_cwnd", "window_pkts (20)"),
        (
            {"profile": "ns2-2.29", "rto_min_ms": 90_000, "rto_max_ms": 60_000},
            "tcp.rto_min_ms",
            "above rto_max_ms",
        ),
        ({"extra_sysctls": {"net.ipv4.tcp_sack": 0}}, "tcp.extra_sysctls.net.ipv4.tcp_sack", "tcp.sack"),
        ({"max_backoff": 3}, "tcp.max_backoff", "64"),
        ({"cc": "westwood"}, "tcp.cc", "cubic"),
    ],
)
def test_a_bad_tcp_block_is_a_load_error_naming_file_line_and_field(
    tmp_path: Path, tcp: dict[str, object], path: str, words: str
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(
        "name: bad\nduration_s: 10\nstations: {count: 2}\ntraffic:\n  tcp: [{src: 1, dst: 2}]\n"
        f"tcp: {json.dumps(tcp)}\n"
    )
    with pytest.raises(ScenarioError) as err:
        load_scenario(f)
    assert any(p == path for p, _ in err.value.problems), err.value.problems
    assert f"{f}:6:" in str(err.value) and words in str(err.value)


def test_resolve_refuses_an_unknown_profile_or_knob() -> None:
    with pytest.raises(ProfileError, match="choices: legacy, linux"):
        resolve("ns2", {})
    with pytest.raises(ProfileError) as err:
        resolve("linux", {"initcwnd": 2})
    assert err.value.field == "initcwnd"


def test_what_this_kernel_lacks_is_named() -> None:
    knobs = PROFILES["ns2-2.29"].knobs
    problems = kernel_problems(knobs, lambda name: name != "tcp_rto_min_us", frozenset({"reno", "bbr"}))
    assert problems == [("rto_min_ms", "this kernel has no net.ipv4.tcp_rto_min_us (Linux 6.11 or later)")]
    problems = kernel_problems(TcpKnobs(cc="cubic"), lambda name: True, frozenset({"reno", "bbr"}))
    assert problems == [
        ("cc", "congestion control 'cubic' is not available on this kernel; choices: bbr, reno, vegas")
    ]
    assert kernel_problems(TcpKnobs(cc="vegas"), lambda name: True, frozenset({"reno"})) == []


# ---------------------------------------------------------------------------- kernel values


def test_legacy_writes_exactly_what_every_run_wrote_before_profiles() -> None:
    """The earlier experiments' rows stay comparable: the legacy profile's sysctls are the old
    ``station_sysctls`` output, key for key."""
    sc = load_scenario(TOPOLOGIES / "chain5.yaml")
    assert station_sysctls(sc) == {
        "net.ipv4.tcp_congestion_control": "reno",
        "net.ipv4.tcp_ecn": "0",
        "net.ipv4.tcp_sack": "1",
        "net.ipv4.tcp_timestamps": "1",
        "net.ipv4.tcp_no_metrics_save": "1",
        "net.ipv4.tcp_rmem": "4096 131072 4194304",
        "net.ipv4.tcp_wmem": "4096 16384 4194304",
        "net.ipv4.ip_forward": "0",
        "net.ipv6.conf.all.disable_ipv6": "1",
        "net.ipv6.conf.default.disable_ipv6": "1",
    }
    assert route_metrics(sc.tcp.effective.knobs) == {}
    assert not bpf_params(sc.tcp.effective.knobs).active


def test_ns2_writes_its_knobs_in_the_kernels_units() -> None:
    eff = resolve("ns2-2.1b8a", {})
    s = profile_sysctls(eff, "mtctl_abc123")
    assert {
        k: s[f"net.ipv4.{k}"] for k in ("tcp_sack", "tcp_frto", "tcp_early_retrans", "tcp_rto_min_us")
    } == {
        "tcp_sack": "0",
        "tcp_frto": "0",
        "tcp_early_retrans": "0",
        "tcp_rto_min_us": "1000000",
    }
    assert s["net.ipv4.tcp_congestion_control"] == "mtctl_abc123"
    assert (s["net.ipv4.tcp_rto_max_ms"], s["net.ipv4.tcp_retries2"], s["net.ipv4.tcp_max_reordering"]) == (
        "120000",
        "100",
        "3",
    )
    assert route_metrics(eff.knobs) == {"initcwnd": 2, "initrwnd": 20, "quickack": 1}
    p = bpf_params(eff.knobs)
    assert (p.rto_init_ms, p.cwnd_clamp, p.backoff_shift, p.rto_max_ms) == (6000, 20, 6, 120_000)
    assert bpf_params(resolve("ns2-2.33", {}).knobs).backoff_shift == 0


def test_linux_writes_only_its_congestion_control() -> None:
    s = profile_sysctls(resolve("linux", {}))
    assert {k: v for k, v in s.items() if "tcp" in k} == {"net.ipv4.tcp_congestion_control": "cubic"}


# ---------------------------------------------------------------------------- read-back


def test_route_metrics_are_read_from_ip_route_output() -> None:
    text = "10.0.0.0/16 dev tun0 proto kernel scope link src 10.0.0.3 initcwnd 2 initrwnd 20 quickack 1 \n"
    assert parse_route_metrics(text) == {"initcwnd": 2, "initrwnd": 20, "quickack": 1}
    assert parse_route_metrics("10.0.0.0/16 dev tun0 proto kernel scope link src 10.0.0.3\n") == {}


def test_a_sysctl_that_reads_back_otherwise_is_a_mismatch() -> None:
    want = {"net.ipv4.tcp_rmem": "4096 131072 4194304", "net.ipv4.tcp_sack": "0"}
    got = {"net.ipv4.tcp_rmem": "4096 131072 4194304", "net.ipv4.tcp_sack": "1"}
    assert [str(m) for m in sysctl_mismatches("sta2", want, got)] == [
        "sta2: net.ipv4.tcp_sack is 1, the profile wants 0"
    ]


SAMPLE = {"options": 0, "snd_mss": 1000, "rto_ms": 1200.0, "cc": "reno"}


@pytest.mark.parametrize(
    ("sample", "mss", "what"),
    [
        (SAMPLE, 1000, []),
        ({**SAMPLE, "options": 2}, 1000, ["negotiated SACK"]),
        ({**SAMPLE, "options": 1}, 1000, ["negotiated timestamps", "snd_mss"]),  # 988 expected then
        ({**SAMPLE, "options": 1, "snd_mss": 988}, 1000, ["negotiated timestamps"]),
        ({**SAMPLE, "snd_mss": 1448}, 1000, ["snd_mss"]),
        ({**SAMPLE, "rto_ms": 204.0}, 1000, ["rto"]),
        ({**SAMPLE, "cc": "cubic"}, 1000, ["congestion control"]),
        ({"state": "ESTAB"}, 1000, ["tcp_info options"]),
    ],
)
def test_what_a_connection_negotiated_is_checked_against_the_profile(
    sample: dict[str, object], mss: int, what: list[str]
) -> None:
    knobs = resolve("ns2-2.1b8a", {}).knobs
    found = flow_mismatches("tcp0", sample, knobs, mss, "reno")
    assert [m.what for m in found] == what
    assert all(isinstance(m, Mismatch) for m in found)


# ---------------------------------------------------------------------------- the allowed list


def test_allowed_congestion_controls_are_added_once_and_put_back(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.write_text("reno bbr\n")
    root = tmp_path / "run"
    assert ccallow.ensure_allowed(["reno", "cubic"], allowed, root) == ["cubic"]
    assert allowed.read_text().split() == ["reno", "bbr", "cubic"]
    assert ccallow.ensure_allowed(["cubic"], allowed, root) == []
    assert not ccallow.restore(True, allowed, root)  # another run still needs it
    assert allowed.read_text().split() == ["reno", "bbr", "cubic"]
    assert ccallow.restore(False, allowed, root)
    assert allowed.read_text().split() == ["reno", "bbr"]
    assert not (root / ccallow.SAVED_NAME).exists()
    assert not ccallow.restore(False, allowed, root)


def test_put_back_keeps_controls_registered_meanwhile_and_forgets_ones_gone(tmp_path: Path) -> None:
    """A concurrent run's BPF control was on the list when cubic was added and is gone by the
    teardown; another run's appeared meanwhile: only cubic comes off (a snapshot written back
    would name the gone one, which the kernel refuses with ENOENT)."""
    allowed = tmp_path / "allowed"
    allowed.write_text("reno bbr mtctl_aaaaaa\n")
    root = tmp_path / "run"
    assert ccallow.ensure_allowed(["cubic"], allowed, root) == ["cubic"]
    allowed.write_text("reno bbr cubic mtctl_bbbbbb\n")  # mtctl_aaaaaa's run ended, another began
    assert ccallow.restore(False, allowed, root)
    assert allowed.read_text().split() == ["reno", "bbr", "mtctl_bbbbbb"]


def test_a_refused_put_back_does_not_fail_the_teardown(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.write_text("reno bbr\n")
    root = tmp_path / "run"
    ccallow.ensure_allowed(["cubic"], allowed, root)
    allowed.chmod(0o444)  # stands in for the kernel's refusal
    try:
        if os.access(allowed, os.W_OK):  # root ignores the mode: make the path unwritable instead
            allowed.unlink()
            allowed.mkdir()
        assert not ccallow.restore(False, allowed, root)
        assert (root / ccallow.SAVED_NAME).exists()  # kept for the next teardown or make clean
    finally:
        if allowed.is_dir():
            allowed.rmdir()


# ---------------------------------------------------------------------------- scenarios


def test_extends_merges_mappings_and_replaces_lists(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(
        "name: base\nduration_s: 10\nstations: {count: 3}\n"
        "traffic:\n  tcp: [{src: 1, dst: 3, mss: 1460}]\n  udp: [{src: 2, dst: 3, rate_bps: 1000}]\n"
        "tcp: {profile: legacy, cc: reno}\n"
    )
    (tmp_path / "child.yaml").write_text(
        "extends: base.yaml\nname: child\ntraffic:\n  tcp: [{src: 1, dst: 3}]\ntcp: {profile: ns2-2.29}\n"
    )
    sc = load_scenario(tmp_path / "child.yaml")
    assert (sc.name, sc.duration_s, len(sc.traffic.udp), sc.traffic.tcp[0].mss) == ("child", 10, 1, 1000)
    assert (sc.tcp.profile, sc.tcp.cc) == ("ns2-2.29", "reno")
    assert merge_documents({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}, "d": None}) == {
        "a": {"b": 1, "c": [2]},
        "d": None,
    }


def test_extends_refuses_a_cycle_and_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\nextends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ScenarioError, match=r"b.yaml:1: extends: a.yaml makes a cycle"):
        load_scenario(tmp_path / "a.yaml")


PAPERS = {
    "ghanem2008": "ns2-2.29",
    "klemm2004": "ns2-2.1b8a",
    "yu2004": "ns2-2.1b8a",
    "yu2004-100": "ns2-2.1b8a",
    "liu2001": "freebsd-liu2001",
    "liu2001-congestion": "freebsd-liu2001",
    "liu2001-partition": "freebsd-liu2001",
    "cohen": "ns2-2.33",
}


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_each_paper_scenario_names_its_papers_profile_and_its_base_the_legacy_one(paper: str) -> None:
    sc = load_scenario(TOPOLOGIES / f"{paper}.yaml")
    assert sc.tcp.profile == PAPERS[paper]
    base = json.loads(json.dumps(sc.model_dump(mode="json")))
    assert base["tcp"]["profile"] == PAPERS[paper]
    full = {"liu2001": "liu2001-atcp-full"}.get(paper, f"{paper}-full")
    assert load_scenario(TOPOLOGIES / f"{full}.yaml").tcp.profile == "legacy"


def test_yu_keeps_the_papers_window_of_8() -> None:
    eff = load_scenario(TOPOLOGIES / "yu2004.yaml").tcp.effective
    assert (eff.knobs.window_pkts, eff.knobs.init_rwnd, eff.mss) == (8, 8, 1460)


# ---------------------------------------------------------------------------- sweeps and rows


def test_a_legacy_point_keeps_its_id_and_another_profile_gets_a_new_one() -> None:
    scenario = "topologies/ghanem2008-full.yaml"
    assert tcp_digest(scenario, {}) is None
    assert point_id(scenario, {}, 1, tcp_digest(scenario, {})) == point_id(scenario, {}, 1)
    d = tcp_digest(scenario, {"tcp.profile": "ns2-2.29"})
    assert d is not None and d == tcp_digest("topologies/ghanem2008.yaml", {"traffic.tcp[0].mss": 1460})
    assert point_id(scenario, {"tcp.profile": "ns2-2.29"}, 1, d) != point_id(
        scenario, {"tcp.profile": "ns2-2.29"}, 1
    )


def _record(pid: str, profile: str = LEGACY_PROFILE, digest: str = "") -> RunRecord:
    return RunRecord(
        experiment="e", point_id=pid, index=0, params={"x": "1"}, seed=1, attempt=1, valid=True,
        invalid_reasons=(), metrics={"m": 1.0}, signals={}, flows=(), duration_s=1.0, wall_s=1.0,
        run_id="r", revision="rev", host="h", finished_at="t", tcp_profile=profile, tcp_digest=digest,
    )  # fmt: skip


def test_a_rows_file_from_before_profiles_gets_the_columns_and_its_rows_read_legacy(tmp_path: Path) -> None:
    store = RowStore("e", tmp_path)
    store.append(_record("p1"), ["x"], ["m"])
    # make it a file from before profiles: drop the two columns
    lines = store.path.read_text().splitlines()
    head = lines[0].split(",")
    keep = [i for i, c in enumerate(head) if c not in TCP_COLS and c != "check"]
    from experiments.rows import _check, _csv_line

    old = [_csv_line([head[i] for i in keep] + ["check"])]
    for line in lines[1:]:
        vals = [line.split(",")[i] for i in keep]
        old.append(_csv_line([*vals, _check(vals)]))
    store.path.write_text("".join(old))
    assert set(TCP_COLS).isdisjoint(store.columns() or [])
    assert store.load().records[0].tcp_profile == LEGACY_PROFILE

    store.append(_record("p2", "ns2-2.29", "abcdef012345"), ["x"], ["m"])
    cols = store.columns() or []
    assert cols[cols.index("invalid_reasons") + 1 : cols.index("invalid_reasons") + 3] == list(TCP_COLS)
    loaded = store.load()
    assert not loaded.problems
    assert [(r.point_id, r.tcp_profile, r.tcp_digest) for r in loaded.records] == [
        ("p1", "legacy", ""),
        ("p2", "ns2-2.29", "abcdef012345"),
    ]
