"""``nodes.router.config.RouterConfig``: the router config the orchestrator writes and the router
reads; a missing, unknown or ill-typed key is a ``ConfigError`` naming the field."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from nodes.core.icmp import IcmpParams
from nodes.core.ipip import WiredRoute
from nodes.router.config import (
    ConfigError,
    ExtensionConfig,
    MirrorConfig,
    ProtocolConfig,
    RouterConfig,
    TcpctlConfig,
)


def minimal(**extra: Any) -> dict[str, Any]:
    return {
        "station_id": 3,
        "medium_socket": "/run/m.sock",
        "protocol": {"name": "static"},
        "out_dir": "/r",
        **extra,
    }


def test_minimal_config_has_the_documented_defaults() -> None:
    c = RouterConfig.from_json(minimal())
    assert c == RouterConfig(3, "/run/m.sock", ProtocolConfig("static"), "/r")
    assert (c.seed, c.ifq_len, c.mirror, c.trace, c.fastpath, c.tcpctl, c.wired) == (
        1,
        50,
        MirrorConfig("auto", 2412, 4),
        "auto",
        "auto",
        None,
        None,
    )
    assert (c.welcome_timeout_s, c.counters_interval_s, c.lag_probe_interval_s) == (30.0, 1.0, 0.2)


def test_round_trip_through_json() -> None:
    c = RouterConfig(
        station_id=7,
        medium_socket="/m",
        out_dir="/o",
        run_id="3fa9c1",
        n_stations=9,
        seed=4,
        protocol=ProtocolConfig("static", {}, {1: 2, 9: 8}),
        extensions=(ExtensionConfig("fixed_rto"), ExtensionConfig("abra", {"min_srtt_init": 0.2})),
        ifq_len=20,
        promiscuous=True,
        mirror=MirrorConfig("off", 5180, 12),
        trace="on",
        fastpath="off",
        tcpctl=TcpctlConfig(bpf=False, control_socket="/s.sock"),
        wired=WiredRoute(ipaddress.IPv4Network("10.1.0.0/24"), 2),
        log_level="debug",
        icmp=IcmpParams(unreachable=True, ratelimit_ms=0, ratelimit_burst=2, ttl=32, reasons=("no_route",)),
        welcome_timeout_s=5.0,
        counters_interval_s=0.5,
        lag_probe_interval_s=0.0,
    )
    data = json.loads(json.dumps(c.to_json()))
    assert data["protocol"]["routes"] == {"1": 2, "9": 8}  # JSON object keys are strings
    assert RouterConfig.from_json(data) == c


@pytest.mark.parametrize(
    "value,want",
    [
        (True, "always"),
        (False, "off"),
        ("auto", "auto"),
        ({"enabled": False}, "off"),
        ({"mode": "always", "freq_mhz": 5180}, "always"),
    ],
)
def test_mirror_short_forms(value: object, want: str) -> None:
    assert RouterConfig.from_json(minimal(mirror=value)).mirror.mode == want


def test_short_forms_of_trace_fastpath_tcpctl_and_extensions() -> None:
    c = RouterConfig.from_json(
        minimal(trace=False, fastpath=False, tcpctl={"enabled": False}, extensions=["elfn"])
    )
    assert (c.trace, c.fastpath, c.tcpctl, c.extensions) == ("off", "off", None, (ExtensionConfig("elfn"),))
    assert RouterConfig.from_json(minimal(tcpctl={"enabled": True})).tcpctl == TcpctlConfig()


@pytest.mark.parametrize(
    "change,message",
    [
        ({"station_id": None}, "missing key(s) ['station_id']"),
        ({"ifq_lenn": 50}, "unknown key(s) ['ifq_lenn']"),
        ({"ifq_len": "50"}, "ifq_len: expected an int, got '50'"),
        ({"ifq_len": 0}, "ifq_len: must be at least 1"),
        ({"seed": True}, "seed: expected an int, got True"),
        ({"station_id": 0}, "station_id: must be in 1..65534"),
        ({"station_id": 3.0}, "station_id: expected an int"),
        ({"promiscuous": "yes"}, "promiscuous: expected true or false"),
        ({"medium_socket": 5}, "medium_socket: expected a string"),
        ({"counters_interval_s": 0}, "counters_interval_s: must be a positive number"),
        ({"lag_probe_interval_s": -1}, "lag_probe_interval_s: must be >= 0"),
        ({"welcome_timeout_s": "30"}, "welcome_timeout_s: expected a number"),
        ({"mirror": "sometimes"}, "mirror: expected one of ['always', 'auto', 'off']"),
        ({"mirror": {"mode": "auto", "chan": 6}}, "mirror: unknown key(s) ['chan']"),
        ({"mirror": {"freq_mhz": "2412"}}, "mirror.freq_mhz: expected an int"),
        ({"trace": "full"}, "trace: expected one of"),
        ({"fastpath": "fast"}, "fastpath: expected one of ['auto', 'off']"),
        ({"protocol": "static"}, "protocol: expected an object"),
        ({"protocol": {"name": "static", "routs": {}}}, "protocol: unknown key(s) ['routs']"),
        ({"protocol": {"params": {}}}, "protocol.name: expected a string, got None"),
        ({"protocol": {"name": "static", "routes": {"x": 1}}}, "protocol.routes['x']: destination"),
        ({"protocol": {"name": "static", "routes": {"2": "1"}}}, "protocol.routes['2']: expected an int"),
        ({"extensions": "elfn"}, "extensions: expected a list"),
        ({"extensions": [{"name": "elfn", "param": {}}]}, "extensions[0]: unknown key(s) ['param']"),
        ({"extensions": [{"params": {}}]}, "extensions[0].name: expected a string"),
        ({"tcpctl": {"enabled": True, "bpf": "no"}}, "tcpctl.bpf: expected true or false"),
        ({"tcpctl": {"enabled": True, "sock": "/s"}}, "tcpctl: unknown key(s) ['sock']"),
        ({"wired": {"subnet": "10.1.0.0/24", "gateway": True}}, "wired.gateway: expected an int"),
        ({"wired": {"subnet": "10.1.0.0/33", "gateway": 2}}, "wired.subnet: not an IPv4 network"),
        ({"log_level": "LOUD"}, "log_level: must be one of"),
        ({"icmp": {"unreachable": 1}}, "icmp.unreachable: expected true or false"),
        ({"icmp": {"rate": 5}}, "icmp: unknown key(s) ['rate']"),
        ({"icmp": {"ratelimit_burst": 0}}, "icmp: ratelimit_ms must be >= 0 and ratelimit_burst >= 1"),
        ({"icmp": {"reasons": "link_failure"}}, "icmp.reasons: expected a list of drop reasons"),
    ],
)
def test_bad_config_names_the_field(change: dict[str, Any], message: str) -> None:
    data = minimal()
    for k, v in change.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    with pytest.raises(ConfigError) as ei:
        RouterConfig.from_json(data)
    assert str(ei.value).startswith("router config: ")
    assert message in str(ei.value)


def test_not_an_object() -> None:
    with pytest.raises(ConfigError, match="expected an object"):
        RouterConfig.from_json(["station_id", 3])
