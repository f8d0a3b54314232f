"""The scenario schema: field types and the models of every section (pydantic).

Issue 2, item 2: a scenario states the stations, field, radio, mobility, traffic, routing and
its extensions, TCP settings, per-link overrides, scripted events, duration and seed; unknown
keys are errors. docs/scenarios.md documents every field. ``ScenarioFields`` is the whole
document with the values derived from the fields alone; ``topologies.scenario.Scenario`` adds
the cross-field checks (``topologies.checks``), positions (``topologies.layout``) and static
routes (``topologies.routes``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StringConstraints,
    model_validator,
)

from nodes.extensions import EXTENSIONS as _EXTENSION_MODULES
from topologies.errors import FieldErrors
from topologies.radio import RadioModel, radio_model
from topologies.seeding import derive_rng
from topologies.tcp_profiles import (
    KNOBS,
    SYSCTL_KNOBS,
    EffectiveTcp,
    ProfileName,
    combination_problems,
    resolve,
)
from topologies.wired import NODE_NAME_RE, Wired

# --------------------------------------------------------------------------------------------
# Known names. Each set is one constant; docs/scenarios.md lists the same names.

PROTOCOLS: Final = ("static", "dsr", "aodv")
CONGESTION_CONTROLS: Final = ("reno", "cubic", "bbr", "vegas")

#: Every extension a scenario may turn on (``nodes.extensions.EXTENSIONS``). The protocols each
#: works with are derived from the extension's ``NEEDS`` and the cores' ``EMITS``
#: (``nodes.extensions.compatible_protocols``, which imports the modules only when called).
EXTENSIONS: Final[frozenset[str]] = frozenset(_EXTENSION_MODULES)

ProtocolName = Literal["static", "dsr", "aodv"]
RoutingProfileName = Literal["ns2", "rfc", "legacy"]  # nodes.protocols.profiles.RoutingProfile
CongestionControl = Literal["reno", "cubic", "bbr", "vegas"]
PresetName = Literal["ns2-wavelan", "wmediumd"]


# --------------------------------------------------------------------------------------------
# Field types


def _no_bool(value: object) -> object:
    # pydantic's lax mode turns true/false into 1/0; in a scenario that is always a typo.
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    return value


def _known_extension(name: str) -> str:
    if name not in EXTENSIONS:
        raise ValueError(f"unknown extension {name!r} (known: {', '.join(sorted(EXTENSIONS))})")
    return name


Num = Annotated[float, BeforeValidator(_no_bool)]
PositiveNum = Annotated[float, BeforeValidator(_no_bool), Field(gt=0)]
NonNegNum = Annotated[float, BeforeValidator(_no_bool), Field(ge=0)]
Probability = Annotated[float, BeforeValidator(_no_bool), Field(ge=0, le=1)]
StationId = Annotated[StrictInt, Field(ge=1)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
ExtensionName = Annotated[str, AfterValidator(_known_extension)]


def _endpoint(value: object) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and re.match(NODE_NAME_RE, value):
        return value
    raise ValueError(f"expected a station id (an integer >= 1) or a wired host name, got {value!r}")


#: A flow's end: a station id, or the name of a wired host (``wired.hosts``).
Endpoint = Annotated[int | str, PlainValidator(_endpoint)]
Point = tuple[Num, Num]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------------------------
# Schema


class FieldSize(_Model):
    """The rectangle stations live in, metres; random placement and random waypoint use it."""

    x_m: PositiveNum = 1000.0
    y_m: PositiveNum = 1000.0


class LinePlacement(_Model):
    kind: Literal["line"]
    spacing_m: PositiveNum = 200.0
    origin: Point = (0.0, 0.0)


class GridPlacement(_Model):
    kind: Literal["grid"]
    cols: PositiveInt
    spacing_m: PositiveNum = 200.0
    origin: Point = (0.0, 0.0)


class RandomPlacement(_Model):
    kind: Literal["random"]


Placement = Annotated[LinePlacement | GridPlacement | RandomPlacement, Field(discriminator="kind")]


class Stations(_Model):
    count: PositiveInt
    #: Every station's (x, y) as a list, or some stations' as {id: [x, y]} (the rest: placement).
    positions: list[Point] | dict[int, Point] | None = None
    placement: Placement | None = None
    static: list[StationId] | None = None
    #: Default transmit power of some stations, dBm (the others: the radio preset's).
    tx_power_dbm: dict[int, Num] = Field(default_factory=dict)


class Radio(_Model):
    preset: PresetName = "ns2-wavelan"
    overrides: dict[str, Any] = Field(default_factory=dict)
    #: Range used for ``routes: auto``; default: derived from the preset and ``overrides``
    #: (ns2-wavelan: 250 m; topologies/radio.py).
    nominal_range_m: PositiveNum | None = None

    @model_validator(mode="after")
    def _overrides_fit_the_range_model(self) -> Radio:
        """A range-relevant override of the wrong type is an error here, not only in the medium."""
        radio_model(self.preset, self.overrides)
        return self


class StaticMobility(_Model):
    model: Literal["static"]


class RandomWaypoint(_Model):
    """Random waypoint: uniform destination in the field, uniform speed, fixed pause."""

    model: Literal["random_waypoint"]
    max_speed_mps: NonNegNum
    min_speed_mps: NonNegNum | None = None
    min_speed_fraction: Probability | None = None
    pause_s: NonNegNum = 0.0
    warmup_s: NonNegNum = 0.0

    @model_validator(mode="after")
    def _check_speeds(self) -> RandomWaypoint:
        if (self.min_speed_mps is None) == (self.min_speed_fraction is None):
            raise FieldErrors([("min_speed_mps", "give exactly one of min_speed_mps and min_speed_fraction")])
        if self.min_speed_mps is not None and self.min_speed_mps > self.max_speed_mps:
            raise FieldErrors(
                [
                    (
                        "min_speed_mps",
                        f"{self.min_speed_mps} is above max_speed_mps {self.max_speed_mps}",
                    )
                ]
            )
        return self

    @property
    def min_speed(self) -> float:
        """The minimum speed in m/s, whichever way it was given."""
        if self.min_speed_mps is not None:
            return self.min_speed_mps
        assert self.min_speed_fraction is not None
        return self.min_speed_fraction * self.max_speed_mps


class Ns2Mobility(_Model):
    """An ns-2 ``setdest`` movement file; ``file`` is relative to the scenario file."""

    model: Literal["ns2"]
    file: str


class BonnMotionMobility(_Model):
    """A BonnMotion ``.movements`` (or ``.movements.gz``) file, relative to the scenario file."""

    model: Literal["bonnmotion"]
    file: str
    dims: Literal[2, 3] = 2


Mobility = Annotated[
    StaticMobility | RandomWaypoint | Ns2Mobility | BonnMotionMobility,
    Field(discriminator="model"),
]


class TcpFlow(_Model):
    """One iperf3 TCP flow. After loading ``duration_s`` and ``cc`` are always set."""

    src: Endpoint
    dst: Endpoint
    start_s: NonNegNum = 0.0
    duration_s: PositiveNum | None = None  # default: until the end of the scenario
    cc: CongestionControl | None = None  # default: the scenario's tcp.cc
    max_window_pkts: PositiveInt | None = None  # cap on cwnd and advertised window, in MSS
    mss: Annotated[StrictInt, Field(ge=88, le=9000)] | None = None  # default: the scenario's tcp.mss
    #: a file of this many bytes, sent by testbed/xfer.py (not iperf3 -n); duration_s is its limit
    transfer_bytes: PositiveInt | None = None

    @property
    def segment_bytes(self) -> int:
        """The flow's MSS: its own ``mss``, else the TCP profile's (filled in when the scenario loads)."""
        if self.mss is None:
            raise ValueError("traffic.tcp[].mss is unset: load the flow through a Scenario")
        return self.mss


class UdpFlow(_Model):
    """Constant-bit-rate UDP cross traffic (iperf3 -u). After loading ``duration_s`` is set."""

    src: Endpoint
    dst: Endpoint
    start_s: NonNegNum = 0.0
    duration_s: PositiveNum | None = None
    rate_bps: PositiveNum
    size_bytes: Annotated[StrictInt, Field(ge=1, le=65507)] = 512


class Traffic(_Model):
    tcp: list[TcpFlow] = Field(default_factory=list)
    udp: list[UdpFlow] = Field(default_factory=list)


class Icmp(_Model):
    """The routers' ICMP errors (nodes/core/icmp.py, docs/router.md "ICMP Destination Unreachable")."""

    #: Destination Unreachable (code 1, host) to the source of a packet dropped for a failed
    #: next hop or no route (RFC 1812 section 5.2.7.1); off by default (the ns-2 papers had none)
    unreachable: StrictBool = False
    #: Linux net.ipv4.icmp_ratelimit: one error per destination per this many ms on average (0: no limit)
    ratelimit_ms: Annotated[StrictInt, Field(ge=0)] = 1000
    #: Linux XRLIM_BURST_FACTOR: the token bucket's size, in messages
    ratelimit_burst: PositiveInt = 6


class Routing(_Model):
    protocol: ProtocolName = "static"
    #: DSR and AODV: which code the core behaves as (nodes/protocols/profiles.py; docs/dsr.md and
    #: docs/aodv.md "Profiles"): ns-2's as the papers ran it (default), the RFC's, or the testbed's
    #: behaviour before profiles. ``params`` override single fields on top. Static ignores it.
    profile: RoutingProfileName = "ns2"
    params: dict[str, Any] = Field(default_factory=dict)
    extensions: list[ExtensionName] = Field(default_factory=list)
    #: per-extension parameters, e.g. {"elfn": {"restore": "default"}} (docs/extensions.md); each
    #: key must also be listed in ``extensions``. The router validates the names and values.
    extension_params: dict[ExtensionName, dict[str, Any]] = Field(default_factory=dict)
    #: static only: "auto" (shortest hop over initial positions) or {src: {dst: next_hop}}.
    routes: Literal["auto"] | dict[int, dict[int, int]] = "auto"
    promiscuous: StrictBool = False
    ifq_len: PositiveInt = 50
    #: per-hop loss above the MAC: each station discards a frame it received (unicast to it or
    #: broadcast) with this probability, after the MAC acknowledged it (Cohen & Levin's "loss
    #: rate per hop"; nodes/core/hoploss.py). Per-link ``loss``/``ber`` act per attempt instead.
    hop_loss: Probability = 0.0
    #: the routers' per-packet trace (docs/explain.md): "auto" = on unless the native fast path
    #: forwards (static routes), "on" (the fast path steps aside), "off".
    trace: Literal["auto", "on", "off"] = "auto"
    icmp: Icmp = Field(default_factory=Icmp)


class TcpSettings(_Model):
    """Per-station kernel TCP settings: a named profile (``topologies.tcp_profiles``) and any of its
    knobs set explicitly, which override the profile's value. Every field but ``profile`` and
    ``extra_sysctls`` is a knob of ``TcpKnobs`` (same name, same meaning); ``None`` = the
    profile's value. ``effective`` is what the run applies (docs/scenarios.md "TCP profiles")."""

    profile: ProfileName = "legacy"
    cc: CongestionControl | None = None
    mss: Annotated[StrictInt, Field(ge=88, le=9000)] | None = None
    sack: StrictBool | None = None
    dsack: StrictBool | None = None
    frto: StrictBool | None = None
    tlp: StrictBool | None = None
    timestamps: StrictBool | None = None
    window_scaling: StrictBool | None = None
    ecn: StrictBool | None = None
    reordering: Annotated[StrictInt, Field(ge=1, le=300)] | None = None
    max_reordering: Annotated[StrictInt, Field(ge=1, le=300)] | None = None
    comp_sack_nr: Annotated[StrictInt, Field(ge=0, le=255)] | None = None
    rto_min_ms: Annotated[StrictInt, Field(ge=1, le=120_000)] | None = None
    rto_max_ms: Annotated[StrictInt, Field(ge=1, le=120_000)] | None = None
    rto_init_ms: Annotated[StrictInt, Field(ge=1, le=120_000)] | None = None
    max_backoff: Literal[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] | None = None
    init_cwnd: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None
    init_rwnd: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None
    quickack: StrictBool | None = None
    window_pkts: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = None
    retries2: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None
    syn_retries: Annotated[StrictInt, Field(ge=1, le=127)] | None = None
    syn_linear_timeouts: Annotated[StrictInt, Field(ge=0, le=127)] | None = None
    slow_start_after_idle: StrictBool | None = None
    rmem_max: PositiveInt | None = None
    wmem_max: PositiveInt | None = None
    no_metrics_save: StrictBool | None = None
    #: Any other sysctl, e.g. {"net.ipv4.tcp_frto": 0}.
    extra_sysctls: dict[str, str | int] = Field(default_factory=dict)

    @property
    def effective(self) -> EffectiveTcp:
        """The profile with this block's explicit knobs on top (``topologies.tcp_profiles.resolve``)."""
        explicit = {k: getattr(self, k) for k in KNOBS if getattr(self, k) is not None}
        return resolve(self.profile, explicit, {k: str(v) for k, v in self.extra_sysctls.items()})

    @model_validator(mode="after")
    def _combinations(self) -> TcpSettings:
        problems = [
            (f"extra_sysctls.{name}", f"{name} is the knob tcp.{knob}: set that field instead")
            for name in self.extra_sysctls
            if (knob := SYSCTL_KNOBS.get(name)) is not None
        ]
        problems += combination_problems(self.effective.knobs)
        if problems:
            raise FieldErrors(
                [
                    (k, f"{reason} (profile {self.profile!r} with this block's fields)")
                    for k, reason in problems
                ]
            )
        return self


class TcpCtlSettings(_Model):
    """Cross-layer control of kernel TCP (docs/tcpctl.md). The orchestrator also loads the BPF
    side whenever a flow uses vegas, and the endpoint agent whenever an extension needs it."""

    enabled: StrictBool = False  # endpoint agent in every router + the run's BPF programs
    controllable_reno: StrictBool = True  # reno flows use the run's controllable Reno (mtctl_<id>)
    observe_interval_ms: Annotated[StrictInt, Field(ge=0, le=10_000)] = 100  # 0: no time series


class Link(_Model):
    a: StationId
    b: StationId
    loss: Probability | None = None
    ber: Probability | None = None


class PartitionEvent(_Model):
    t_s: NonNegNum
    op: Literal["partition"]
    a: Annotated[list[StationId], Field(min_length=1)]
    b: Annotated[list[StationId], Field(min_length=1)]
    duration_s: PositiveNum | None = None  # default: until the end


class MoveEvent(_Model):
    t_s: NonNegNum
    op: Literal["move"]
    station: StationId
    x: Num
    y: Num


class SetLinkEvent(_Model):
    t_s: NonNegNum
    op: Literal["set_link"]
    a: StationId
    b: StationId
    loss: Probability | None = None
    ber: Probability | None = None


Event = Annotated[PartitionEvent | MoveEvent | SetLinkEvent, Field(discriminator="op")]


class P2pCongestion(_Model):
    """Periodic congestion on one direction of a p2p hop (Liu & Singh 2001 section V-B: every
    ``period_s`` "a local source dumps packets into ip_output() for a period of 200 ms", which
    "results in the generation of an explicit congestion notification"). During each window
    ``[start_s + k period_s, + duration_s)`` the hop ``hop[0] -> hop[1]`` is busy with the flood: a
    frame offered then waits for the window's end, an ECN-capable one (ECT(0)/ECT(1)) is marked CE
    and a not-ECN-capable one is dropped (RFC 3168 section 5). Checked: ``duration_s`` shorter
    than ``period_s``, ``hop`` one of ``p2p.hops`` (either orientation)."""

    hop: tuple[StationId, StationId]
    period_s: PositiveNum
    duration_s: PositiveNum
    start_s: NonNegNum = 0.0


class P2pLinkProps(_Model):
    """One point-to-point hop's properties (the medium's ``P2pProps``, docs/medium.md "p2p")."""

    #: serialisation rate, bit/s
    rate_bps: PositiveNum
    #: one-way delay drawn uniformly per frame from [min, max], ms
    delay_ms: tuple[NonNegNum, NonNegNum] = (0.0, 0.0)
    #: bit error rate; a frame of n bytes is lost with probability 1 - (1 - ber)^(8 n)
    ber: Probability = 0.0
    #: fixed loss probability per frame
    loss: Probability = 0.0
    #: probability that a frame is held back ``reorder_delay_ms`` so later ones overtake it
    reorder_prob: Probability = 0.0
    reorder_delay_ms: NonNegNum = 0.0
    #: per-link header bytes added to each payload on the wire
    overhead_bytes: Annotated[StrictInt, Field(ge=0)] = 0


class P2p(P2pLinkProps):
    """Point-to-point link mode (ATCP's testbed) instead of the radio: every hop a link with the
    same properties. The medium gets one ``links`` entry per hop (testbed/medium.py)."""

    hops: Annotated[list[tuple[StationId, StationId]], Field(min_length=1)]
    congestion: list[P2pCongestion] = Field(default_factory=list)

    def medium_config(self) -> dict[str, Any]:
        """The medium's ``p2p`` section (docs/interfaces.md section 3): one ``links`` entry per
        hop, and the congestion windows."""
        props = self.model_dump(mode="json", exclude={"hops", "congestion"})
        out: dict[str, Any] = {"links": [{"a": a, "b": b, **props} for a, b in self.hops]}
        if self.congestion:
            out["congestion"] = [
                {
                    "from": c.hop[0],
                    "to": c.hop[1],
                    "period_s": c.period_s,
                    "duration_s": c.duration_s,
                    "start_s": c.start_s,
                }
                for c in self.congestion
            ]
        return out


class Capture(_Model):
    pcap: StrictBool = False
    stations: list[StationId] | None = None  # default: every station


Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_-]+$")]


class ScenarioFields(_Model):
    """Every field of a scenario, and what follows from the fields alone (placement, ranges; no movement files, no
    trajectories). ``topologies.scenario.Scenario`` is the validated scenario built on it."""

    name: Name
    description: str = ""
    duration_s: PositiveNum
    seed: Annotated[StrictInt, Field(ge=0)] = 1
    field: FieldSize = Field(default_factory=FieldSize)
    stations: Stations
    radio: Radio = Field(default_factory=Radio)
    mobility: Mobility = Field(default_factory=lambda: StaticMobility(model="static"))
    traffic: Traffic = Field(default_factory=Traffic)
    routing: Routing = Field(default_factory=Routing)
    tcp: TcpSettings = Field(default_factory=TcpSettings)
    tcpctl: TcpCtlSettings = Field(default_factory=TcpCtlSettings)
    links: list[Link] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    capture: Capture = Field(default_factory=Capture)
    p2p: P2p | None = None
    #: hosts and switches on Open vSwitch, and the gateway station (topologies/wired.py)
    wired: Wired | None = None

    # ---- derived values -----------------------------------------------------------------

    @property
    def station_ids(self) -> list[int]:
        return list(range(1, self.stations.count + 1))

    def static_ids(self) -> set[int]:
        """Stations that never move: all of them under static mobility, else ``stations.static``."""
        if isinstance(self.mobility, StaticMobility):
            return set(self.station_ids)
        return set(self.stations.static or [])

    def radio_model(self) -> RadioModel:
        """The radio preset with ``radio.overrides`` applied, as far as ranges go (topologies/radio.py)."""
        return radio_model(self.radio.preset, self.radio.overrides)

    def nominal_range_m(self) -> float:
        """Decode range of the radio preset and its overrides (or ``radio.nominal_range_m``), metres:
        the distance at which the medium stops decoding a default-power frame."""
        if self.radio.nominal_range_m is not None:
            return self.radio.nominal_range_m
        return self.radio_model().range_m

    def carrier_sense_range_m(self) -> float:
        return self.radio_model().cs_range_m

    def placed_positions(self, seed: int | None = None) -> dict[int, tuple[float, float]]:
        """Positions from ``stations.positions`` or ``stations.placement``, before any mobility.

        Without either, stations are placed at random under random-waypoint mobility and on a
        line with 200 m spacing otherwise. Random placement draws each station from its own
        stream derived from ``seed`` (default: the scenario's seed).
        """
        given = self.stations.positions
        if isinstance(given, list):
            return {i + 1: (float(x), float(y)) for i, (x, y) in enumerate(given)}
        out = self.placement_positions(seed)
        if given is not None:
            out.update({sid: (float(x), float(y)) for sid, (x, y) in given.items()})
        return out

    def placement_positions(self, seed: int | None) -> dict[int, tuple[float, float]]:
        """Positions from ``stations.placement`` (or its default) for every station."""
        placement = self.stations.placement
        if placement is None:
            if isinstance(self.mobility, RandomWaypoint):
                placement = RandomPlacement(kind="random")
            else:
                placement = LinePlacement(kind="line")
        n = self.stations.count
        if isinstance(placement, LinePlacement):
            ox, oy = placement.origin
            return {i + 1: (ox + i * placement.spacing_m, oy) for i in range(n)}
        if isinstance(placement, GridPlacement):
            ox, oy = placement.origin
            s, cols = placement.spacing_m, placement.cols
            return {i + 1: (ox + (i % cols) * s, oy + (i // cols) * s) for i in range(n)}
        run_seed = self.seed if seed is None else seed
        out: dict[int, tuple[float, float]] = {}
        for sid in self.station_ids:
            rng = derive_rng(run_seed, "placement", sid)
            out[sid] = (rng.uniform(0, self.field.x_m), rng.uniform(0, self.field.y_m))
        return out
