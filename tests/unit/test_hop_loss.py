"""Per-hop loss above the MAC (nodes.core.hoploss; Cohen & Levin's "loss rate per hop"), in
virtual time on a static chain: frames the MAC delivered are lost at each hop independently,
counted and traced as ``hop_loss``, reproducible from the seed, and never for overheard frames."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from test_core_sim import chain_routes, packet

from nodes.core.events import Action, Event, FromAir
from nodes.core.hoploss import HOP_LOSS_DROP, HopLoss
from nodes.core.sim import SimNetwork
from nodes.core.trace import Tracer
from nodes.protocols.static import StaticRouting
from nodes.router.config import ConfigError, ProtocolConfig, RouterConfig
from topologies.errors import ScenarioError
from topologies.scenario import scenario_from_dict

N_PACKETS = 3000
GAP_NS = 5_000_000  # well apart: the chain's MAC never queues


def chain(n: int, hop_loss: float, seed: int = 1, promiscuous: bool = False) -> SimNetwork:
    routes = chain_routes(n)
    return SimNetwork(
        n,
        lambda ctx: StaticRouting(ctx, routes[ctx.station]),
        [(i, i + 1) for i in range(1, n)],
        seed=seed,
        hop_loss=hop_loss,
        promiscuous=promiscuous,
    )


def send_all(net: SimNetwork, src: int, dst: int, n: int = N_PACKETS) -> list[bytes]:
    sent = [packet(src, dst, payload=i.to_bytes(4, "big")) for i in range(n)]
    for i, p in enumerate(sent):
        net.inject(src, p, at_ns=i * GAP_NS)
    net.run_until(n * GAP_NS + 1_000_000_000)
    return sent


def test_each_hop_loses_its_share_and_counts_it() -> None:
    p = 0.1
    net = chain(4, p)  # 3 hops: 1 -> 2 -> 3 -> 4
    send_all(net, 1, 4)
    drops = {s: net.nodes[s].ctx.counters.drops[HOP_LOSS_DROP] for s in range(1, 5)}
    assert drops[1] == 0  # the source receives nothing
    # each hop's losses are a binomial draw on what reached it
    reached = N_PACKETS
    for s in (2, 3, 4):
        test = binomtest(drops[s], reached, p)
        assert test.pvalue > 1e-4, (s, drops[s], reached)
        reached -= drops[s]
    assert len(net.nodes[4].delivered) == reached
    # what the MAC sent, it delivered: the loss is above the MAC, not a failed transmission
    assert all(e.ok for e in net.trace)


def test_overheard_frames_are_never_lost() -> None:
    net = chain(3, 1.0, promiscuous=True)  # every frame addressed to a station is lost
    net.link_up(1, 3)  # 3 overhears 1's frames for 2
    seen: list[bool] = []

    def on_event(event: Event, now_ns: int) -> list[Action]:
        seen.append(isinstance(event, FromAir) and event.overheard)
        return []

    net.nodes[3].runtime.protocol.on_event = on_event  # type: ignore[method-assign]
    net.inject(1, packet(1, 2))
    net.run_for(1_000_000_000)
    assert net.nodes[2].ctx.counters.drops[HOP_LOSS_DROP] == 1
    assert seen == [True]  # the overheard copy reached the core; nothing else did


def test_reproducible_from_the_seed_and_nothing_drawn_at_zero() -> None:
    def delivered(seed: int, p: float) -> list[bytes]:
        net = chain(3, p, seed=seed)
        send_all(net, 1, 3, n=400)
        return [q[20:] for _, q in net.nodes[3].delivered]

    assert delivered(7, 0.05) == delivered(7, 0.05)
    assert delivered(7, 0.05) != delivered(8, 0.05)
    assert len(delivered(7, 0.0)) == 400
    assert HopLoss.for_station(0.0, 7, 2) is None


def test_a_lost_frame_is_traced_as_received_then_dropped() -> None:
    net = chain(2, 1.0)
    tracer = net.nodes[2].runtime.tracer = Tracer()
    net.inject(1, packet(1, 2))
    net.run_for(1_000_000_000)
    assert tracer.reasons == [HOP_LOSS_DROP]
    assert tracer.records == 2  # rx, then the drop
    assert net.nodes[2].delivered == []


def test_bad_values_are_named() -> None:
    with pytest.raises(ValueError, match="hop_loss"):
        HopLoss(0.0, HopLoss.for_station(0.5, 1, 1).rng)  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="hop_loss: must be a probability"):
        RouterConfig(1, "/x", ProtocolConfig("static", {}, {}), "/o", hop_loss=1.5)
    cfg = RouterConfig(1, "/x", ProtocolConfig("static", {}, {}), "/o", hop_loss=0.02)
    assert RouterConfig.from_json(cfg.to_json()).hop_loss == 0.02


def test_the_scenario_field_is_checked() -> None:
    base = {
        "name": "t",
        "duration_s": 10,
        "stations": {"count": 2, "placement": {"kind": "line", "spacing_m": 100}},
        "routing": {"protocol": "static", "hop_loss": 0.02},
    }
    assert scenario_from_dict(base).routing.hop_loss == 0.02
    with pytest.raises(ScenarioError, match="hop_loss"):
        scenario_from_dict({**base, "routing": {"protocol": "static", "hop_loss": 2}})
