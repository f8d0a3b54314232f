"""The orchestrator's pure parts: names, router and medium configs, sysctls, iperf3 argv, results."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nodes.router.config import RouterConfig
from testbed import naming, traffic
from testbed.medium import medium_config
from testbed.run import router_config, station_sysctls
from topologies.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
CHAIN5 = ROOT / "topologies" / "chain5.yaml"


@pytest.mark.parametrize(
    ("sid", "ip", "mac"),
    [
        (1, "10.0.0.1", "02:00:00:00:00:01"),
        (254, "10.0.0.254", "02:00:00:00:00:fe"),
        (256, "10.0.1.0", "02:00:00:00:01:00"),
        (300, "10.0.1.44", "02:00:00:00:01:2c"),
    ],
)
def test_station_address_and_mac(sid: int, ip: str, mac: str) -> None:
    assert naming.station_ip(sid) == ip
    assert naming.station_mac(sid) == mac


@pytest.mark.parametrize(
    ("name", "run_id"),
    [
        ("mt3fa9c1-sta3", "3fa9c1"),
        ("mt3fa9c1-ctl", "3fa9c1"),
        ("mt3fa9c1", None),
        ("mt3FA9C1-sta1", None),
        ("othertest-3fa9c1", None),
        ("xmt3fa9c1-sta1", None),
        ("mt3fa9c-sta1", None),
    ],
)
def test_only_our_prefix_is_ours(name: str, run_id: str | None) -> None:
    assert naming.run_id_of_netns(name) == run_id


def test_names_fit_interface_and_comm_limits() -> None:
    rid = naming.new_run_id()
    assert naming.RUN_ID_RE.match(rid)
    assert len(naming.netns_name(rid, 9999)) <= 15 + 2  # netns names are not length-limited, comm is 15
    assert len(naming.wlan_name(999)) <= 15


def test_router_config_follows_the_contract(tmp_path: Path) -> None:
    sc = load_scenario(CHAIN5)
    routes = sc.static_routes()
    typed = router_config(sc, "3fa9c1", 7, 3, Path("/run/manet/3fa9c1"), tmp_path, routes)
    cfg = json.loads(json.dumps(typed.to_json()))
    assert RouterConfig.from_json(cfg) == typed  # what the router reads back is what was written
    assert set(cfg) == {
        "run_id",
        "station_id",
        "n_stations",
        "seed",
        "medium_socket",
        "protocol",
        "extensions",
        "ifq_len",
        "promiscuous",
        "mirror",
        "trace",
        "fastpath",
        "out_dir",
        "welcome_timeout_s",
        "counters_interval_s",
        "lag_probe_interval_s",
        "hop_loss",
    }
    assert cfg["hop_loss"] == 0.0  # routing.hop_loss off unless the scenario sets it
    assert cfg["station_id"] == 3 and cfg["n_stations"] == 5 and cfg["seed"] == 7
    assert cfg["medium_socket"] == "/run/manet/3fa9c1/medium.sock"
    assert cfg["protocol"] == {"name": "static", "params": {}, "routes": {"1": 2, "2": 2, "4": 4, "5": 4}}
    assert cfg["ifq_len"] == 50
    json.dumps(cfg)


def test_router_config_carries_extension_params(tmp_path: Path) -> None:
    sc = load_scenario(
        CHAIN5,
        {
            "routing.extensions": ["fixed_rto", "abra"],
            "routing.extension_params": {"abra": {"min_srtt_init": 0.2}},
        },
    )
    cfg = router_config(sc, "3fa9c1", 7, 3, Path("/run/manet/3fa9c1"), tmp_path, sc.static_routes()).to_json()
    assert cfg["extensions"] == [
        {"name": "fixed_rto", "params": {}},
        {"name": "abra", "params": {"min_srtt_init": 0.2}},
    ]


def test_medium_config_follows_the_contract(tmp_path: Path) -> None:
    sc = load_scenario(CHAIN5)
    cfg = medium_config(sc, "3fa9c1", 1, Path("/run/manet/3fa9c1"), tmp_path)
    assert set(cfg) == {
        "run_id",
        "seed",
        "socket",
        "control_socket",
        "out_dir",
        "radio",
        "stations",
        "links",
        "events",
        "p2p",
    }
    assert cfg["socket"] == "/run/manet/3fa9c1/medium.sock"
    assert cfg["control_socket"] == "/run/manet/3fa9c1/control.sock"
    assert cfg["radio"] == {"preset": "ns2-wavelan", "overrides": {}}
    assert [s["id"] for s in cfg["stations"]] == [1, 2, 3, 4, 5]
    assert cfg["stations"][2]["trajectory"] == [[0.0, 400.0, 50.0]]
    json.dumps(cfg)


def test_sysctls_set_congestion_control_explicitly() -> None:
    sc = load_scenario(CHAIN5, {"tcp.ecn": True, "tcp.rmem_max": 1000000})
    s = station_sysctls(sc)
    assert s["net.ipv4.tcp_congestion_control"] == "reno"  # the kernel default here is bbr
    assert s["net.ipv4.tcp_ecn"] == "1"
    assert s["net.ipv4.tcp_rmem"].split()[-1] == "1000000"
    assert s["net.ipv4.ip_forward"] == "0"


def test_iperf3_argv_per_flow(tmp_path: Path) -> None:
    sc = load_scenario(
        CHAIN5,
        {
            "traffic.udp": [
                {"src": 2, "dst": 4, "start_s": 2, "duration_s": 3, "rate_bps": 64000, "size_bytes": 512}
            ]
        },
    )
    flows = traffic.make_flows(sc, tmp_path)
    assert [(f.id, f.port) for f in flows] == [("tcp0", 5201), ("udp0", 5202)]
    tcp = flows[0].client_argv("10.0.0.5", 30)
    assert tcp == [
        "iperf3",
        "-c",
        "10.0.0.5",
        "-p",
        "5201",
        "-J",
        "-t",
        "25",
        "-C",
        "reno",
        "-M",
        "1460",
        "-w",
        str(8 * 1460),
    ]
    udp = flows[1].client_argv("10.0.0.4", 30)
    assert udp[-7:] == ["-t", "3", "-u", "-b", "64000", "-l", "512"]


def test_parse_flow_uses_receiver_side_and_sender_retransmits(tmp_path: Path) -> None:
    sc = load_scenario(CHAIN5)
    (fl,) = traffic.make_flows(sc, tmp_path)
    fl.client_json.write_text(
        json.dumps(
            {
                "end": {
                    "sum_sent": {"bits_per_second": 9e5, "retransmits": 4},
                    "sum_received": {"bits_per_second": 8e5, "bytes": 10},
                }
            }
        )
    )
    fl.server_json.write_text(
        "warning: junk before json\n"
        + json.dumps({"end": {"sum_received": {"bits_per_second": 7.5e5, "bytes": 99}}})
    )
    res = traffic.parse_flow(fl)
    assert res["throughput_bps"] == 7.5e5
    assert res["retransmits"] == 4
    assert res["bytes_received"] == 99
    assert res["error"] is None


def test_parse_flow_reports_iperf3_errors(tmp_path: Path) -> None:
    sc = load_scenario(CHAIN5)
    (fl,) = traffic.make_flows(sc, tmp_path)
    fl.client_json.write_text(json.dumps({"error": "unable to connect to server: No route to host"}))
    res = traffic.parse_flow(fl)
    assert res["throughput_bps"] is None
    assert "No route to host" in res["error"]


def _intervals(*per_second_bytes: int) -> list[dict[str, Any]]:
    return [
        {"sum": {"start": float(i), "end": float(i + 1), "bytes": b, "omitted": False}}
        for i, b in enumerate(per_second_bytes)
    ]


def test_parse_flow_counts_receiver_bytes_within_the_flow_window(tmp_path: Path) -> None:
    """Throughput is what the receiver got during the flow's nominal duration: data drained after
    it (a late end-of-test exchange over a broken path) does not count, and an interrupted test
    keeps its numbers."""
    sc = load_scenario(CHAIN5)
    (fl,) = traffic.make_flows(sc, tmp_path)
    window = float(fl.spec.duration_s or 0)
    n = int(window)
    fl.server_json.write_text(
        json.dumps(
            {
                "intervals": _intervals(*([1000] * n + [50_000])),
                "error": "interrupt - the client has terminated",
            }
        )
    )
    fl.client_json.write_text(json.dumps({"end": {"sum_sent": {"retransmits": 2}}}))
    res = traffic.parse_flow(fl)
    assert res["bytes_received"] == 1000 * n
    assert res["throughput_bps"] == 8.0 * 1000 * n / window
    assert res["interrupted"] is True and res["error"] is None
    assert res["retransmits"] == 2


def test_parse_flow_receiver_without_data_is_a_measured_zero(tmp_path: Path) -> None:
    sc = load_scenario(CHAIN5)
    (fl,) = traffic.make_flows(sc, tmp_path)
    fl.server_json.write_text(json.dumps({"intervals": [], "error": "interrupt - the server has terminated"}))
    fl.client_json.write_text(json.dumps({"end": {"sum_received": {"bits_per_second": None, "bytes": None}}}))
    res = traffic.parse_flow(fl)
    assert res["throughput_bps"] == 0.0 and res["bytes_received"] == 0
    assert res["error"] is None


def test_a_file_transfer_is_timed_when_the_receiver_has_the_whole_file(tmp_path: Path) -> None:
    """iperf3 -n ends the test when the sender has written its bytes (what is still buffered never
    arrives), so a file flow runs testbed/xfer.py, and its time ends at the receiver's EOF."""
    sc = load_scenario(CHAIN5, {"traffic.tcp[0].transfer_bytes": 100_000})
    (fl,) = traffic.make_flows(sc, tmp_path)
    argv = fl.client_argv("10.0.0.5", 30)
    assert argv[1] == str(traffic.XFER) and argv[argv.index("--bytes") + 1] == "100000" and "-n" not in argv
    assert fl.server_argv()[1:3] == [str(traffic.XFER), "recv"]
    sender = {"role": "sender", "bytes": 100_000, "start_mono_s": 50.0, "end_mono_s": 53.5, "complete": True}
    receiver = {
        "role": "receiver",
        "bytes": 100_000,
        "start_mono_s": 50.1,
        "end_mono_s": 53.4,
        "complete": True,
    }
    fl.client_json.write_text(json.dumps({**sender, "retransmits": 2}))
    fl.server_json.write_text(json.dumps(receiver))
    res = traffic.parse_flow(fl)
    assert res["file_delivered"] is True and res["retransmits"] == 2
    assert res["transfer_time_s"] == pytest.approx(3.4)
    # the run ended first: no transfer time, and the aggregate counts the flow as failed
    cut = {**receiver, "bytes": 60_000, "complete": False, "error": "interrupted (SIGINT)"}
    fl.server_json.write_text(json.dumps(cut))
    res = traffic.parse_flow(fl)
    assert res["file_delivered"] is False and "transfer_time_s" not in res
    from experiments.aggregate import run_metrics

    m, _ = run_metrics({"flows": [{"proto": "tcp", "src": 1, **res}]})
    assert math.isnan(m["transfer_time_s"]) and m["flows_failed"] == 1.0
    ok = {"proto": "tcp", "src": 1, "throughput_bps": 8e4, "bytes_received": 150_000}
    m, _ = run_metrics({"flows": [{**ok, "file_delivered": True, "transfer_time_s": 3.3}]})
    assert m["transfer_time_s"] == 3.3  # the receiver's time, not bytes x 8 / throughput (15 s)


def test_a_tcp_receiver_waits_for_data_as_long_as_the_flow_may_last(tmp_path: Path) -> None:
    """iperf3's server ends a test after 120 s without data: a long outage (a Liu partition and
    the persist probes after it) is a stall to measure, not the end of the flow."""
    sc = load_scenario(CHAIN5, {"duration_s": 400, "traffic.tcp[0].duration_s": 390})
    (fl,) = traffic.make_flows(sc, tmp_path)
    assert fl.server_argv() == ["iperf3", "-s", "-1", "-J", "-p", "5201", "--rcv-timeout", "390000"]
    sc = load_scenario(CHAIN5, {"traffic.tcp[0].duration_s": 10})
    (fl,) = traffic.make_flows(sc, tmp_path)
    assert fl.server_argv()[-1] == "120000"  # never below iperf3's own
