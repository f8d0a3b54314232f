"""ABRA (Ghanem 2008 s3) and Fixed RTO (Dyer & Boppana 2001) extensions: the paper's rules
exactly, the policy set on each originated connection, the kernel's expirations checked
against the rule, and attaching through the registry."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from nodes.core import NS_PER_MS, NS_PER_S
from nodes.core.protocol import NodeContext, ParamError
from nodes.extensions import attach_extensions
from nodes.extensions.abra import AbraBackoff, AbraExtension, AbraParams
from nodes.extensions.fixed_rto import FixedRtoBackoff, FixedRtoExtension
from nodes.protocols.static import StaticRouting
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent, PollTimer
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import Abra, FakeKernel, FixedAfterTwo

A, B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 4])
OUT = ConnId(A, 40000, B, 5201)  # opened by A
IN = ConnId(A, 5201, B, 40001)  # opened by B
ISS = 1000


def station(kern: FakeKernel) -> tuple[NodeContext, EndpointAgent]:
    ctx = NodeContext(station=1, n_stations=4, rng=random.Random(1))
    agent = EndpointAgent(A, kernel=kern)
    ctx.endpoint = TcpControl(agent)
    return ctx, agent


def proto(ctx: NodeContext) -> StaticRouting:
    return StaticRouting(ctx, {})


def syn(c: ConnId, flags: int = P.SYN) -> bytes:
    return P.build_tcp(c.local_ip, c.remote_ip, c.local_port, c.remote_port, ISS, 0, flags, 500)


def syn_in(c: ConnId) -> bytes:
    return P.build_tcp(c.remote_ip, c.local_ip, c.remote_port, c.local_port, 7000, 0, P.SYN, 500)


# ---------------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("last_srtt", "factor"),
    [(0.1, 1.0), (0.35, 1.5), (0.6, 2.0), (0.225, 1.25), (0.05, 1.0), (0.9, 2.0)],
)
def test_abra_backoff_new_from_srtt(last_srtt: float, factor: float) -> None:
    """backoff_new = 1 + (last_srtt - min_srtt)/(max_srtt - min_srtt), min/max 0.1/0.6 s."""
    m = AbraBackoff.from_params(AbraParams())
    assert m.expire(rto_current=1.2, srtt=last_srtt) == pytest.approx(1.2 * factor)
    assert m.backoff_new == pytest.approx(factor)


def test_abra_srtt_range_seen_so_far_and_last_values_of_the_series() -> None:
    m = AbraBackoff.from_params(AbraParams())
    m.on_srtt(0.05)
    m.on_srtt(1.1)  # range now 0.05 .. 1.1
    assert m.expire(1.0, srtt=0.575, cwnd=28, ssthresh=2147483647) == pytest.approx(1.5)
    # later expirations of the same series keep last_srtt (saved "when the timer expires")
    assert m.expire(1.5, srtt=0.9, first=False) == pytest.approx(2.25)
    assert (m.last_srtt, m.last_cwnd, m.last_ssthresh) == (0.575, 28, 2147483647)
    # "CWND and SSThr will be divided by 2 and 4"
    assert m.recover() == (14, 536870911)


def test_fixed_rto_doubles_once_then_stays() -> None:
    assert FixedRtoBackoff().rto_series(1.0, 6) == [1.0, 2.0, 2.0, 2.0, 2.0, 2.0]


# ---------------------------------------------------------------------------------- extension


@pytest.mark.parametrize(
    ("name", "params", "policy"),
    [
        ("abra", {}, Abra(0.1, 0.6)),
        ("abra", {"min_srtt_init": 0.05, "max_srtt_init": 1.0}, Abra(0.05, 1.0)),
        ("fixed_rto", {}, FixedAfterTwo()),
    ],
)
def test_policy_on_connections_the_station_originates(name: str, params: dict[str, Any], policy: Any) -> None:
    kern = FakeKernel()
    ctx, agent = station(kern)
    (ext,) = attach_extensions(ctx, proto(ctx), [{"name": name, "params": params}])
    assert isinstance(ext, AbraExtension if name == "abra" else FixedRtoExtension)
    acts = agent.on_outbound(syn(OUT), 5 * NS_PER_MS)
    assert ("set_policy", OUT, policy) in kern.calls
    assert ext.applied == {OUT: 5 * NS_PER_MS}
    assert any(getattr(a, "key", None) == PollTimer() for a in acts)  # observe: polling on
    # the passive side (SYN in, SYN-ACK out) is left alone; a second segment sets nothing again
    agent.on_inbound(syn_in(IN), 6 * NS_PER_MS)
    agent.on_outbound(syn(IN, P.SYN | P.ACK), 6 * NS_PER_MS)
    agent.on_outbound(syn(OUT), 7 * NS_PER_MS)
    assert [c for c in kern.calls if c[0] == "set_policy"] == [("set_policy", OUT, policy)]


def bpf_state(rtos_us: list[int], caps_us: list[int], **kw: int) -> dict[str, Any]:
    ev = [
        {"t_ns": i, "rto_us": r, "next_cap_us": c}
        for i, (r, c) in enumerate(zip(rtos_us, caps_us, strict=True))
    ]
    return {"n_rto": len(ev), "consec_rto": len(ev), "rto_events": ev, **kw}


def test_abra_checks_every_kernel_expiration() -> None:
    kern = FakeKernel()
    ctx, agent = station(kern)
    (ext,) = attach_extensions(ctx, proto(ctx), ["abra"])
    assert isinstance(ext, AbraExtension)
    agent.on_outbound(syn(OUT), 0)
    srtt = dict(last_srtt_us=350_000, min_srtt_us=120_000, max_srtt_us=450_000)
    # factor 1 + (0.35 - 0.1)/(0.6 - 0.1) = 1.5 (the kernel's min/max lie inside 0.1 .. 0.6)
    kern.states[OUT] = bpf_state([1_320_000, 1_980_000], [1_980_000, 2_970_000], **srtt)
    agent.on_timer(PollTimer(), 100 * NS_PER_MS)
    kern.states[OUT] = bpf_state([1_320_000, 1_980_000, 2_970_000], [1_980_000, 2_970_000, 3_000_000], **srtt)
    agent.on_timer(PollTimer(), 200 * NS_PER_MS)
    ev = ext.events[OUT]
    assert [(e["n_rto"], e["expected_us"], e["ok"]) for e in ev] == [
        (1, 1_980_000, True),
        (2, 2_970_000, True),
        (3, 4_455_000, False),
    ]
    assert ext.counters == {"conns": 1, "timeouts": 3, "mismatches": 1}


def test_fixed_rto_checks_every_kernel_expiration() -> None:
    kern = FakeKernel()
    ctx, agent = station(kern)
    (ext,) = attach_extensions(ctx, proto(ctx), ["fixed_rto"])
    assert isinstance(ext, FixedRtoExtension)
    agent.on_outbound(syn(OUT), 0)
    kern.states[OUT] = bpf_state([1_000_000, 2_000_000, 2_000_000], [0, 2_000_000, 2_000_000])
    agent.on_timer(PollTimer(), NS_PER_S)
    assert [e["ok"] for e in ext.events[OUT]] == [True, True, True]
    assert ext.counters["mismatches"] == 0


def test_fixed_rto_below_one_second_counts_what_the_kernel_applies() -> None:
    """Below 1 s the kernel floors the cap at 1 s (TCP_RTO_MAX_MS): after a 0.4 s expiration the
    paper's Fixed RTO keeps 0.4 s, the kernel doubles to 0.8 s, and the check says so."""
    kern = FakeKernel()
    ctx, agent = station(kern)
    (ext,) = attach_extensions(ctx, proto(ctx), ["fixed_rto"])
    agent.on_outbound(syn(OUT), 0)
    kern.states[OUT] = bpf_state([200_000, 400_000, 800_000], [0, 400_000, 800_000])
    agent.on_timer(PollTimer(), NS_PER_S)
    assert [(e["applied_us"], e["expected_us"], e["ok"]) for e in ext.events[OUT]] == [
        (400_000, None, True),
        (800_000, 400_000, False),
        (1_000_000, 800_000, False),
    ]
    assert ext.counters["mismatches"] == 2


# ---------------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", ["abra", "fixed_rto", "elfn", "atcp"])
def test_registry_rejects_unknown_params(name: str) -> None:
    ctx, _ = station(FakeKernel())
    with pytest.raises(ParamError, match=rf"extensions\.{name}: unknown parameter\(s\) \['bogus'\]; known: "):
        attach_extensions(ctx, proto(ctx), [{"name": name, "params": {"bogus": 1}}])


@pytest.mark.parametrize(
    ("name", "params", "msg"),
    [
        ("abra", {"min_srtt_init": 0.7}, "min_srtt_init < max_srtt_init"),
        ("fixed_rto", {"successive_timeouts": 3}, "only the paper's 2"),
        ("elfn", {"restore": "new"}, "restore must be"),
        ("atcp", {"tcp_rexmtthresh": 0}, ">= 1"),
    ],
)
def test_registry_rejects_bad_values(name: str, params: dict[str, Any], msg: str) -> None:
    ctx, _ = station(FakeKernel())
    with pytest.raises(ParamError, match=msg):
        attach_extensions(ctx, proto(ctx), [{"name": name, "params": params}])


@pytest.mark.parametrize("name", ["abra", "fixed_rto", "atcp"])
def test_tcp_extension_without_endpoint_agent_is_a_clear_error(name: str) -> None:
    ctx = NodeContext(station=1, n_stations=4, rng=random.Random(1), log=logging.getLogger("t"))
    with pytest.raises(ParamError, match="needs the endpoint agent"):
        attach_extensions(ctx, proto(ctx), [name])


def test_elfn_needs_an_on_demand_protocol() -> None:
    ctx, _ = station(FakeKernel())
    with pytest.raises(ParamError, match="elfn' works over dsr or aodv, not 'static'"):
        attach_extensions(ctx, proto(ctx), ["elfn"])
