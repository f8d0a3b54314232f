"""Cross-field checks of a scenario: what one field's schema cannot see alone.

Stations named anywhere exist, positions lie in the field, movement files exist and fit,
flows end before the scenario does, extensions work with the protocol, links and events are
sound, and under the static protocol every flow has a loop-free route (docs/scenarios.md,
"Validation"). Every problem is collected (not only the first) as ``(field path, reason)``;
``topologies.scenario.Scenario`` raises them, and ``topologies.yamlfile`` names the file and line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nodes.core.protocol import ParamError
from nodes.extensions import compatible_protocols
from nodes.protocols import effective_params, protocol_params_class
from topologies import bonnmotion, ns2
from topologies.errors import MovementFileError
from topologies.routes import follow, static_routes
from topologies.schema import (
    BonnMotionMobility,
    GridPlacement,
    LinePlacement,
    MoveEvent,
    Ns2Mobility,
    PartitionEvent,
    ScenarioFields,
    TcpFlow,
    UdpFlow,
)
from topologies.tcp_profiles import cc_problems, kernel_problems


def check_scenario(sc: ScenarioFields, base_dir: Path) -> list[tuple[str, str]]:
    """Every cross-field problem of ``sc`` as ``(field path, reason)``; movement files are
    relative to ``base_dir``. Fills what the checks derive (a flow's ``duration_s`` and ``cc``,
    the movement file's absolute path)."""
    return _Checker(sc, base_dir).run()


IPV4_SYSCTLS = Path("/proc/sys/net/ipv4")


def has_ipv4_sysctl(name: str) -> bool:
    """Whether this kernel has ``net.ipv4.<name>`` (True where /proc/sys is not Linux's)."""
    return not IPV4_SYSCTLS.is_dir() or (IPV4_SYSCTLS / name).exists()


def kernel_ccs() -> frozenset[str] | None:
    """``tcp_available_congestion_control`` of this kernel, or None where it cannot be read."""
    try:
        return frozenset((IPV4_SYSCTLS / "tcp_available_congestion_control").read_text().split())
    except OSError:
        return None


class _Checker:
    """Cross-field checks; collects every problem instead of stopping at the first."""

    def __init__(self, sc: ScenarioFields, base_dir: Path) -> None:
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
        self.check_tcp()
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
            for sid, (x, y) in self.sc.placement_positions(None).items():
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

    def check_tcp(self) -> None:
        """The TCP profile's knobs and every congestion control exist on this kernel."""
        eff = self.sc.tcp.effective
        available = kernel_ccs()
        for knob, reason in kernel_problems(eff.knobs, has_ipv4_sysctl, available):
            self.add(f"tcp.{knob}", reason)
        for i, tcp in enumerate(self.sc.traffic.tcp):
            for path, reason in cc_problems(f"traffic.tcp[{i}].cc", tcp.cc, available):
                self.add(path, reason)

    def check_traffic(self) -> None:
        eff = self.sc.tcp.effective
        for i, tcp in enumerate(self.sc.traffic.tcp):
            self.check_flow(f"traffic.tcp[{i}]", tcp)
            if tcp.cc is None:
                tcp.cc = eff.cc  # type: ignore[assignment]  # CongestionControl: checked by check_tcp
            if tcp.mss is None:
                tcp.mss = eff.mss
        for i, udp in enumerate(self.sc.traffic.udp):
            self.check_flow(f"traffic.udp[{i}]", udp)

    def check_routing(self) -> None:
        r = self.sc.routing
        self.check_routing_params()
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

    def check_routing_params(self) -> None:
        """Every ``routing.params`` name is a parameter of the protocol and its value is valid on
        top of the profile (nodes/protocols/profiles.py)."""
        r = self.sc.routing
        if r.protocol == "static":
            for name in sorted(r.params):
                self.add(f"routing.params.{name}", "static routing takes no parameters")
            return
        cls = protocol_params_class(r.protocol)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(r.params) - known)
        for name in unknown:
            self.add(f"routing.params.{name}", f"not a parameter of {r.protocol} (docs/{r.protocol}.md)")
        if unknown:
            return
        try:
            effective_params(r.protocol, r.profile, r.params, "routing.params")
        except ParamError as exc:
            self.add("routing.params", str(exc).removeprefix("routing.params: "))

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
        if p2p is not None:
            hops: set[frozenset[int]] = set()
            for i, (a, b) in enumerate(p2p.hops):
                if self.station(f"p2p.hops[{i}][0]", a) & self.station(f"p2p.hops[{i}][1]", b):
                    if a == b:
                        self.add(f"p2p.hops[{i}]", f"a hop needs two stations, both are {a}")
                    elif frozenset((a, b)) in hops:
                        self.add(f"p2p.hops[{i}]", f"hop {a}-{b} listed twice")
                    hops.add(frozenset((a, b)))
            if p2p.delay_ms[0] > p2p.delay_ms[1]:
                self.add("p2p.delay_ms", f"{list(p2p.delay_ms)}: the minimum is above the maximum")
            for i, c in enumerate(p2p.congestion):
                path = f"p2p.congestion[{i}]"
                if frozenset(c.hop) not in hops:
                    self.add(f"{path}.hop", f"{list(c.hop)} is not one of p2p.hops")
                if c.duration_s >= c.period_s:
                    self.add(
                        f"{path}.duration_s",
                        f"{c.duration_s:g} s is not shorter than period_s ({c.period_s:g} s): "
                        "the hop would never leave congestion",
                    )
                if c.start_s >= dur:
                    self.add(f"{path}.start_s", f"{c.start_s:g} s is not before the end ({dur:g} s)")

    def check_static_reachability(self) -> None:
        """Under the static protocol every flow must have a loop-free path (and one back for TCP)."""
        routes = static_routes(self.sc)
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
                reason = follow(routes, a, b)
                if reason:
                    self.add(path, f"no static route from {a} to {b} ({how}): {reason}")
