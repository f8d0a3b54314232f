"""Scenario files: the schema, validation on load, and what is derived from a scenario.

Issue 2, item 2: a scenario states the stations, field, radio, mobility, traffic, routing and
its extensions, TCP settings, per-link overrides, scripted events, duration and seed. It is
validated on load; unknown keys are errors; every error names the file, the field path and the
reason. docs/scenarios.md documents every field.

``load_scenario(path)`` reads YAML (JSON is YAML too, so a saved ``model_dump_json()`` loads back).
"""

from __future__ import annotations

import math
import re
from collections import deque
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import yaml
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
    ValidationError,
    ValidationInfo,
    model_validator,
)

from nodes.extensions import EXTENSIONS as _EXTENSION_MODULES
from nodes.extensions import compatible_protocols
from topologies.errors import MovementFileError
from topologies.errors import ScenarioError as ScenarioError  # re-exported
from topologies.radio import RadioModel, radio_model
from topologies.seeding import derive_rng
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


class _FieldErrors(ValueError):
    """Raised by a model validator: problems as (path relative to the model, reason)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{p}: {r}" for p, r in problems))
        self.problems = problems


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
            raise _FieldErrors(
                [("min_speed_mps", "give exactly one of min_speed_mps and min_speed_fraction")]
            )
        if self.min_speed_mps is not None and self.min_speed_mps > self.max_speed_mps:
            raise _FieldErrors(
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
    mss: Annotated[StrictInt, Field(ge=88, le=9000)] = 1460
    transfer_bytes: PositiveInt | None = None  # send this many bytes (iperf3 -n), then stop


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


class Routing(_Model):
    protocol: ProtocolName = "static"
    params: dict[str, Any] = Field(default_factory=dict)
    extensions: list[ExtensionName] = Field(default_factory=list)
    #: per-extension parameters, e.g. {"elfn": {"restore": "default"}} (docs/extensions.md); each
    #: key must also be listed in ``extensions``. The router validates the names and values.
    extension_params: dict[ExtensionName, dict[str, Any]] = Field(default_factory=dict)
    #: static only: "auto" (shortest hop over initial positions) or {src: {dst: next_hop}}.
    routes: Literal["auto"] | dict[int, dict[int, int]] = "auto"
    promiscuous: StrictBool = False
    ifq_len: PositiveInt = 50
    #: the routers' per-packet trace (docs/explain.md): "auto" = on unless the native fast path
    #: forwards (static routes), "on" (the fast path steps aside), "off".
    trace: Literal["auto", "on", "off"] = "auto"


class TcpSettings(_Model):
    """Per-station kernel TCP settings (sysctls in each station's namespace)."""

    cc: CongestionControl = "reno"
    ecn: StrictBool = False
    sack: StrictBool = True
    timestamps: StrictBool = True
    rmem_max: PositiveInt = 4_194_304
    wmem_max: PositiveInt = 4_194_304
    no_metrics_save: StrictBool = True
    #: Any other sysctl, e.g. {"net.ipv4.tcp_frto": 0}.
    extra_sysctls: dict[str, str | int] = Field(default_factory=dict)


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


class Capture(_Model):
    pcap: StrictBool = False
    stations: list[StationId] | None = None  # default: every station


Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_-]+$")]


class Scenario(_Model):
    """A validated scenario. Build it with ``load_scenario``; ``model_dump_json()`` round-trips."""

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
    p2p: dict[str, Any] | None = None
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
        out = self._placement_positions(seed)
        if given is not None:
            out.update({sid: (float(x), float(y)) for sid, (x, y) in given.items()})
        return out

    def _placement_positions(self, seed: int | None) -> dict[int, tuple[float, float]]:
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

    def initial_positions(self, seed: int | None = None) -> dict[int, tuple[float, float]]:
        """Where every station is at t = 0 of the run (after any random-waypoint warm-up)."""
        if isinstance(self.mobility, StaticMobility):
            return self.placed_positions(seed)
        from topologies.mobility import position_at, trajectories

        trajs = trajectories(self, seed)
        return {sid: position_at(traj, 0.0) for sid, traj in trajs.items()}

    def neighbours(self, seed: int | None = None) -> dict[int, list[int]]:
        """Who reaches whom at t = 0: p2p hops if given, else distance <= nominal range."""
        ids = self.station_ids
        adj: dict[int, list[int]] = {i: [] for i in ids}
        if self.p2p is not None and "hops" in self.p2p:
            for a, b in self.p2p["hops"]:
                adj[int(a)].append(int(b))
                adj[int(b)].append(int(a))
        else:
            pos = self.initial_positions(seed)
            r = self.nominal_range_m()
            for i in ids:
                for j in ids:
                    if i != j and math.dist(pos[i], pos[j]) <= r:
                        adj[i].append(j)
        return {i: sorted(set(v)) for i, v in adj.items()}

    def static_routes(self, seed: int | None = None) -> dict[int, dict[int, int]]:
        """Next hops ``{station: {destination: next_hop}}`` for the static protocol.

        Explicit ``routing.routes`` are returned as given. ``auto``: breadth-first shortest-hop
        paths over ``neighbours()``; ties go to the lowest next-hop id, and unreachable
        destinations have no entry.
        """
        if isinstance(self.routing.routes, dict):
            return {s: dict(t) for s, t in self.routing.routes.items()}
        adj = self.neighbours(seed)
        routes: dict[int, dict[int, int]] = {}
        for src in self.station_ids:
            first_hop: dict[int, int] = {}
            queue: deque[int] = deque()
            for nb in adj[src]:
                first_hop[nb] = nb
                queue.append(nb)
            while queue:
                node = queue.popleft()
                for nb in adj[node]:
                    if nb != src and nb not in first_hop:
                        first_hop[nb] = first_hop[node]
                        queue.append(nb)
            routes[src] = dict(sorted(first_hop.items()))
        return routes

    # ---- cross-field validation -----------------------------------------------------------

    @model_validator(mode="after")
    def _cross_check(self, info: ValidationInfo) -> Scenario:
        context = info.context if isinstance(info.context, dict) else {}
        base_dir = Path(context.get("base_dir", "."))
        problems = _Checker(self, base_dir).run()
        if problems:
            raise _FieldErrors(problems)
        return self


class _Checker:
    """Cross-field checks; collects every problem instead of stopping at the first."""

    def __init__(self, sc: Scenario, base_dir: Path) -> None:
        self.sc = sc
        self.base_dir = base_dir
        self.problems: list[tuple[str, str]] = []
        self.n = sc.stations.count

    def add(self, path: str, reason: str) -> None:
        self.problems.append((path, reason))

    def station(self, path: str, sid: int) -> bool:
        if 1 <= sid <= self.n:
            return True
        self.add(path, f"station {sid} does not exist (stations are 1..{self.n})")
        return False

    def in_field(self, path: str, x: float, y: float) -> None:
        f = self.sc.field
        if not (0 <= x <= f.x_m and 0 <= y <= f.y_m):
            self.add(path, f"({x:g}, {y:g}) is outside the field (0..{f.x_m:g} x 0..{f.y_m:g} m)")

    def run(self) -> list[tuple[str, str]]:
        self.check_wired()
        self.check_stations()
        self.check_mobility()
        self.check_traffic()
        self.check_routing()
        self.check_links_events()
        if not self.problems and self.sc.routing.protocol == "static":
            self.check_static_reachability()
        return self.problems

    def check_stations(self) -> None:
        st = self.sc.stations
        if isinstance(st.positions, dict):
            for sid, (x, y) in st.positions.items():
                if self.station(f"stations.positions[{sid}]", sid):
                    self.in_field(f"stations.positions[{sid}]", x, y)
        if isinstance(st.positions, list):
            if st.placement is not None:
                self.add("stations.placement", "give positions for every station or placement, not both")
            if len(st.positions) != st.count:
                self.add(
                    "stations.positions",
                    f"{len(st.positions)} positions for {st.count} stations (count)",
                )
            for i, (x, y) in enumerate(st.positions):
                self.in_field(f"stations.positions[{i}]", x, y)
        elif isinstance(st.placement, LinePlacement | GridPlacement):
            given = st.positions or {}
            for sid, (x, y) in self.sc._placement_positions(None).items():
                f = self.sc.field
                if sid not in given and not (0 <= x <= f.x_m and 0 <= y <= f.y_m):
                    self.add(
                        "stations.placement",
                        f"station {sid} lands at ({x:g}, {y:g}), outside the field "
                        f"(0..{f.x_m:g} x 0..{f.y_m:g} m); enlarge field or reduce spacing_m",
                    )
                    break
        self.check_id_list("stations.static", st.static)
        for sid in st.tx_power_dbm:
            self.station(f"stations.tx_power_dbm[{sid}]", sid)

    def check_id_list(self, path: str, ids: list[int] | None) -> None:
        if ids is None:
            return
        seen: set[int] = set()
        for i, sid in enumerate(ids):
            self.station(f"{path}[{i}]", sid)
            if sid in seen:
                self.add(f"{path}[{i}]", f"station {sid} listed twice")
            seen.add(sid)

    def check_mobility(self) -> None:
        mob = self.sc.mobility
        if not isinstance(mob, Ns2Mobility | BonnMotionMobility):
            return
        path = Path(mob.file)
        if not path.is_absolute():
            path = self.base_dir / path
        if not path.is_file():
            self.add("mobility.file", f"file {str(path)!r} does not exist")
            return
        mob.file = str(path.resolve())
        from topologies import bonnmotion, ns2

        try:
            if isinstance(mob, Ns2Mobility):
                trajs = ns2.import_file(path)
            else:
                trajs = bonnmotion.import_file(path, dims=mob.dims)
        except MovementFileError as exc:
            self.add("mobility.file", str(exc))
            return
        beyond = sorted(sid for sid in trajs if sid > self.n)
        if beyond:
            self.add(
                "mobility.file",
                f"{path}: moves station {beyond[0]} (0-based node {beyond[0] - 1}) but there are "
                f"only {self.n} stations",
            )

    def check_wired(self) -> None:
        w = self.sc.wired
        if w is None:
            return
        self.problems.extend((f"wired.{p}", r) for p, r in w.problems())
        for i, gw in enumerate(w.gateways):
            self.station(f"wired.gateways[{i}].station", gw.station)
        if self.sc.p2p is not None and w.gateways:
            self.add("wired.gateways", "a gateway needs the wireless medium, not p2p links")

    def endpoint(self, path: str, end: int | str) -> bool:
        if isinstance(end, int):
            return self.station(path, end)
        hosts = self.sc.wired.host_names() if self.sc.wired is not None else []
        if end in hosts:
            return True
        known = f"wired hosts: {', '.join(hosts)}" if hosts else "the scenario has no wired hosts"
        self.add(path, f"no wired host named {end!r} ({known})")
        return False

    def check_flow(self, path: str, flow: TcpFlow | UdpFlow) -> None:
        ok_src = self.endpoint(f"{path}.src", flow.src)
        ok_dst = self.endpoint(f"{path}.dst", flow.dst)
        if ok_src and ok_dst and flow.src == flow.dst:
            self.add(f"{path}.dst", f"source and destination are both station {flow.src}")
        dur = self.sc.duration_s
        if flow.start_s >= dur:
            self.add(f"{path}.start_s", f"starts at {flow.start_s:g} s, after the end ({dur:g} s)")
            return
        if flow.duration_s is None:
            flow.duration_s = dur - flow.start_s
        elif flow.start_s + flow.duration_s > dur + 1e-9:
            self.add(
                f"{path}.duration_s",
                f"start_s + duration_s = {flow.start_s + flow.duration_s:g} s is after the end "
                f"of the scenario (duration_s {dur:g} s)",
            )

    def check_traffic(self) -> None:
        for i, tcp in enumerate(self.sc.traffic.tcp):
            self.check_flow(f"traffic.tcp[{i}]", tcp)
            if tcp.cc is None:
                tcp.cc = self.sc.tcp.cc
        for i, udp in enumerate(self.sc.traffic.udp):
            self.check_flow(f"traffic.udp[{i}]", udp)

    def check_routing(self) -> None:
        r = self.sc.routing
        seen: set[str] = set()
        for i, ext in enumerate(r.extensions):
            if ext in seen:
                self.add(f"routing.extensions[{i}]", f"extension {ext!r} listed twice")
            seen.add(ext)
            allowed = compatible_protocols(ext)
            if r.protocol not in allowed:
                self.add(
                    f"routing.extensions[{i}]",
                    f"extension {ext!r} works with {' or '.join(sorted(allowed))}, not {r.protocol}",
                )
        for ext in r.extension_params:
            if ext not in seen:
                self.add(
                    f"routing.extension_params.{ext}",
                    f"parameters for extension {ext!r}, which routing.extensions does not list",
                )
        if isinstance(r.routes, dict):
            if r.protocol != "static":
                self.add("routing.routes", f"explicit routes need protocol static, not {r.protocol}")
            for src, table in r.routes.items():
                self.station(f"routing.routes[{src}]", src)
                for dst, hop in table.items():
                    self.station(f"routing.routes[{src}][{dst}]", dst)
                    if self.station(f"routing.routes[{src}][{dst}]", hop) and hop == src:
                        self.add(f"routing.routes[{src}][{dst}]", f"next hop is station {src} itself")

    def check_links_events(self) -> None:
        pairs: set[frozenset[int]] = set()
        for i, link in enumerate(self.sc.links):
            path = f"links[{i}]"
            if self.station(f"{path}.a", link.a) & self.station(f"{path}.b", link.b):
                if link.a == link.b:
                    self.add(f"{path}.b", f"a link needs two stations, both are {link.a}")
                pair = frozenset((link.a, link.b))
                if pair in pairs:
                    self.add(path, f"link {link.a}-{link.b} listed twice")
                pairs.add(pair)
        dur = self.sc.duration_s
        for i, ev in enumerate(self.sc.events):
            path = f"events[{i}]"
            if ev.t_s >= dur:
                self.add(f"{path}.t_s", f"{ev.t_s:g} s is not before the end ({dur:g} s)")
            if isinstance(ev, PartitionEvent):
                self.check_id_list(f"{path}.a", ev.a)
                self.check_id_list(f"{path}.b", ev.b)
                both = sorted(set(ev.a) & set(ev.b))
                if both:
                    self.add(f"{path}.b", f"station {both[0]} is on both sides of the partition")
            elif isinstance(ev, MoveEvent):
                self.station(f"{path}.station", ev.station)
            elif self.station(f"{path}.a", ev.a) & self.station(f"{path}.b", ev.b):
                if ev.a == ev.b:
                    self.add(f"{path}.b", f"a link needs two stations, both are {ev.a}")
        self.check_id_list("capture.stations", self.sc.capture.stations)
        p2p = self.sc.p2p
        if p2p is not None and "hops" in p2p:
            hops = p2p["hops"]
            if not isinstance(hops, list):
                self.add("p2p.hops", "expected a list of [a, b] station pairs")
                return
            for i, hop in enumerate(hops):
                if (
                    not isinstance(hop, list | tuple)
                    or len(hop) != 2
                    or not all(isinstance(s, int) and not isinstance(s, bool) for s in hop)
                ):
                    self.add(f"p2p.hops[{i}]", f"expected a pair of station ids, got {hop!r}")
                    continue
                self.station(f"p2p.hops[{i}][0]", hop[0])
                self.station(f"p2p.hops[{i}][1]", hop[1])

    def check_static_reachability(self) -> None:
        """Under the static protocol every flow must have a loop-free path (and one back for TCP)."""
        routes = self.sc.static_routes()
        how = (
            "routing.routes"
            if isinstance(self.sc.routing.routes, dict)
            else (f"routes: auto, range {self.sc.nominal_range_m():g} m")
        )
        flows: list[tuple[str, TcpFlow | UdpFlow, bool]] = [
            (f"traffic.tcp[{i}]", f, True) for i, f in enumerate(self.sc.traffic.tcp)
        ] + [(f"traffic.udp[{i}]", f, False) for i, f in enumerate(self.sc.traffic.udp)]
        wired = self.sc.wired
        gw = wired.gateways[0].station if wired is not None and wired.gateways else 0
        for path, flow, both_ways in flows:
            # a wired host is reached through the gateway station
            src = flow.src if isinstance(flow.src, int) else gw
            dst = flow.dst if isinstance(flow.dst, int) else gw
            ends = [(src, dst), (dst, src)] if both_ways else [(src, dst)]
            for a, b in ends:
                if a == b:
                    continue
                reason = _follow(routes, a, b)
                if reason:
                    self.add(path, f"no static route from {a} to {b} ({how}): {reason}")


def _follow(routes: dict[int, dict[int, int]], src: int, dst: int) -> str:
    """Follow next hops from src to dst; '' if it arrives, else why not."""
    node, seen = src, {src}
    while node != dst:
        hop = routes.get(node, {}).get(dst)
        if hop is None:
            return f"station {node} has no next hop for {dst}"
        if hop in seen:
            return f"loop at station {hop}"
        seen.add(hop)
        node = hop
    return ""


# --------------------------------------------------------------------------------------------
# Loading


class _Loader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

PathKey = tuple[str, ...]


def _line_map(node: yaml.Node | None, prefix: PathKey, out: dict[PathKey, int]) -> None:
    """Map each field path (as strings) to its 1-based line in the file."""
    if node is None:
        return
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*prefix, str(key_node.value))
            out[key] = key_node.start_mark.line + 1
            _line_map(value_node, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*prefix, str(i)), out)


def yaml_line_map(node: yaml.Node | None) -> dict[PathKey, int]:
    """Each field path (as strings) of a composed YAML document -> its 1-based line (for error
    messages that name file:line; also used by experiments/spec.py for sweep files)."""
    out: dict[PathKey, int] = {}
    _line_map(node, (), out)
    return out


def _read_yaml(text: str, file: str) -> tuple[Any, dict[PathKey, int]]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        reason = " ".join(s for s in (exc.context, exc.problem) if s)
        raise ScenarioError(file, [("", reason)], f"{where}: YAML syntax error: {reason}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(file, [("", str(exc))], f"{file}: YAML error: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[PathKey, int] = {}
    _line_map(node, (), lines)
    return data, lines


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _parse_path(key: str) -> list[str | int]:
    """``"traffic.tcp[0].cc"`` or ``"traffic.tcp.0.cc"`` -> ``["traffic", "tcp", 0, "cc"]``."""
    parts: list[str | int] = []
    for name, index in _PATH_PART.findall(key):
        if index:
            parts.append(int(index))
        elif name.isdigit():
            parts.append(int(name))
        else:
            parts.append(name)
    return parts


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set each ``dotted.path[i]`` key of ``overrides`` in a copy of ``data``; values replace."""
    import copy

    out = copy.deepcopy(data)
    for key, value in overrides.items():
        parts = _parse_path(key)
        if not parts:
            raise ValueError(f"override {key!r}: empty path")
        cur: Any = out
        for i, part in enumerate(parts[:-1]):
            nxt = parts[i + 1]
            if isinstance(cur, list):
                if not isinstance(part, int) or not 0 <= part < len(cur):
                    raise ValueError(f"override {key!r}: no list item {part!r}")
                cur = cur[part]
            elif isinstance(cur, dict):
                if part not in cur or cur[part] is None:
                    cur[part] = [] if isinstance(nxt, int) else {}
                cur = cur[part]
            else:
                raise ValueError(f"override {key!r}: {part!r} is inside a plain value")
        last = parts[-1]
        if isinstance(cur, list) and isinstance(last, int) and 0 <= last < len(cur):
            cur[last] = value
        elif isinstance(cur, dict):
            cur[last] = value
        else:
            raise ValueError(f"override {key!r}: cannot set {last!r}")
    return out


def _render(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _locate(loc: tuple[str | int, ...], data: Any, names_model: bool) -> list[str | int]:
    """Turn a pydantic ``loc`` into a field path of the *input*, dropping union tags.

    ``names_model``: the loc is a (sub)model itself, so a trailing element that is not in the
    input is a union tag, not a missing field.
    """
    parts: list[str | int] = []
    cur = data
    for i, el in enumerate(loc):
        if isinstance(cur, dict):
            key: Any = el
            if key not in cur and isinstance(el, str) and el.lstrip("-").isdigit():
                key = int(el)
            if key in cur:
                parts.append(el if isinstance(el, str) and not el.isdigit() else int(el))
                cur = cur[key]
                continue
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            parts.append(el)
            cur = cur[el]
            continue
        if el == "[key]":
            continue
        if i == len(loc) - 1 and not names_model:
            parts.append(el)  # a missing or unknown field
        # else: a discriminated union's tag (e.g. "random_waypoint"): not part of the input
    return parts


_REASONS: Final[dict[str, str]] = {
    "extra_forbidden": "unknown key",
    "missing": "required field missing",
}


def _problems(exc: ValidationError, data: Any) -> list[tuple[list[str | int], str]]:
    out: list[tuple[list[str | int], str]] = []
    for err in exc.errors():
        ctx = err.get("ctx") or {}
        inner = ctx.get("error")
        parts = _locate(tuple(err["loc"]), data, isinstance(inner, _FieldErrors))
        if isinstance(inner, _FieldErrors):
            for rel, reason in inner.problems:
                out.append(([*parts, *_parse_path(rel)], reason))
            continue
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            disc = str(ctx.get("discriminator", "")).strip("'")
            if disc:
                parts.append(disc)
            if err["type"] == "union_tag_not_found":
                reason = "required field missing"
            else:
                reason = f"{ctx.get('tag')!r} is not one of {ctx.get('expected_tags')}"
        elif err["type"] in _REASONS:
            reason = _REASONS[err["type"]]
        else:
            reason = err["msg"].removeprefix("Value error, ")
            if err["type"] != "value_error" and not isinstance(err.get("input"), dict | list):
                reason += f" (got {err['input']!r})"
        out.append((parts, reason))
    return out


def _raise(
    file: str,
    problems: list[tuple[list[str | int], str]],
    lines: dict[PathKey, int],
    overridden: list[list[str | int]],
) -> None:
    rendered: list[tuple[str, str]] = []
    msgs: list[str] = []
    for parts, reason in problems:
        path = _render(parts)
        key = tuple(str(p) for p in parts)
        from_override = any(key[: len(o)] == tuple(str(p) for p in o) for o in overridden)
        line = None
        if not from_override:
            for n in range(len(key), -1, -1):
                if key[:n] in lines:
                    line = lines[key[:n]]
                    break
        where = f"{file}:{line}" if line is not None else file
        suffix = " (value from overrides)" if from_override else ""
        rendered.append((path, reason))
        msgs.append(f"{where}: {path or '<top>'}: {reason}{suffix}")
    raise ScenarioError(file, rendered, "\n".join(msgs))


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read, override and validate a scenario file; raise ``ScenarioError`` on any problem.

    ``overrides`` maps a field path (``"seed"``, ``"mobility.max_speed_mps"``,
    ``"traffic.tcp[0].cc"``) to the value that replaces whatever the file says there.
    Relative movement-file paths are resolved against the scenario file's folder.
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(file, [("", exc.strerror or str(exc))], f"{file}: {exc.strerror}") from None
    data, lines = _read_yaml(text, file)
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise ScenarioError(
            file, [("", "expected a mapping")], f"{file}: expected a mapping of fields, got {kind}"
        )
    overridden: list[list[str | int]] = []
    if overrides:
        try:
            data = apply_overrides(data, overrides)
        except ValueError as exc:
            raise ScenarioError(file, [("", str(exc))], f"{file}: {exc}") from None
        overridden = [_parse_path(k) for k in overrides]
    return _validate(data, file, Path(path).parent, lines, overridden)


def scenario_from_dict(data: dict[str, Any], source: str = "<dict>", base_dir: str | Path = ".") -> Scenario:
    """Validate an in-memory scenario (e.g. generated by a script) with ``load_scenario``'s errors.

    ``source`` stands in for the file name in messages; movement files are relative to ``base_dir``.
    """
    return _validate(data, source, Path(base_dir), {}, [])


def _validate(
    data: Any, file: str, base_dir: Path, lines: dict[PathKey, int], overridden: list[list[str | int]]
) -> Scenario:
    try:
        return Scenario.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        _raise(file, _problems(exc, data), lines, overridden)
        raise AssertionError("unreachable") from None
