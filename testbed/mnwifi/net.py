"""``Mininet_wifi`` over the testbed: the network a Mininet-WiFi ad hoc script describes, built as
a scenario (topologies/scenario.py) and run by ``testbed.run.Testbed`` (docs/mininet-wifi.md).

Until ``build()`` the calls collect the network: stations, their positions, ranges and powers,
the propagation model, the ad hoc links and their routing protocol, mobility, wired hosts and
switches. ``build()`` turns that into a validated ``Scenario`` and starts the run; afterwards the
node objects run commands in their namespaces (``cmd``, ``popen``), move (``setPosition``) and
ping (``pingAll``). Every keyword argument is either used, accepted and recorded (``net.ignored``,
logged once: it has no meaning on one shared medium), or rejected with ``MnWifiError`` naming the
call, the parameter and why.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import shlex
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from testbed.mnwifi import log as _mnlog  # noqa: F401 - installs mininet's log handler
from testbed.mnwifi import motion
from testbed.mnwifi.propagation import PropagationError, PropagationSpec
from testbed.naming import station_ip
from testbed.station import Station as TbStation
from topologies.mobility import Trajectory
from topologies.wired import DEFAULT_SUBNET

log = logging.getLogger("mininet")
DEFAULTS: dict[str, str] = {"out_root": "results", "experiment": "mnwifi", "name": "mnwifi"}
"""Where networks write results; ``python3 -m testbed.mnwifi`` sets them from its options."""

PROTOCOLS: Final[dict[str | None, str]] = {None: "static", "static": "static", "dsr": "dsr", "aodv": "aodv"}
"""``addLink(..., proto=)`` -> our routing protocol. No ``proto``: every station sends straight to
its destination (single-hop IBSS, as Mininet-WiFi without a routing daemon); ``static``:
shortest-hop routes over the positions at start."""
MN_WIFI_PROTOCOLS: Final = ("olsr", "olsrd", "olsrd2", "batman", "batman_adv", "babel")
"""Mininet-WiFi's own routing daemons, which do not run here."""
STATION_IGNORED: Final = frozenset(
    {"mac", "antennaHeight", "antennaGain", "mode", "channel", "freq", "ssid", "wlans", "passwd",
     "encrypt", "inNamespace", "cls", "privateDirs", "ht_cap", "vht_cap", "band", "txpower_unit",
     "defaultRoute", "position3d", "speed", "z"}
)  # fmt: skip
"""``addStation`` parameters accepted and recorded but without effect here (docs/mininet-wifi.md)."""
LINK_IGNORED: Final = frozenset(
    {"ssid", "mode", "channel", "ht_cap", "vht_cap", "intf", "freq", "passwd", "encrypt", "band",
     "ieee80211w", "bw", "delay", "loss", "jitter", "max_queue_size", "use_htb"}
)  # fmt: skip
NET_IGNORED: Final = frozenset(
    {"link", "wmediumd_mode", "controller", "accessPoint", "switch", "host", "station", "car",
     "ipBase", "autoSetMacs", "autoStaticArp", "autoPinCpus", "waitConnected", "ssid", "mode",
     "channel", "inNamespace", "xterms", "listenPort", "fading_cof", "noise_th", "cca_th",
     "topo", "build", "allAutoAssociation", "autoAssociation", "configWiFiDirect",
     "config4addr", "ac_method", "docker", "container", "ssh_user", "set_socket_ip", "set_socket_port",
     "disable_tcp_checksum", "plot", "bridge", "iot_module", "rec_rssi", "json_file", "mob_model",
     "mob_rep", "mob_start_time", "mob_stop_time", "seed", "roads", "intf"}
)  # fmt: skip
MOBILITY_IGNORED: Final = frozenset({"ac_method", "repetitions", "draw", "reverse"})


class MnWifiError(RuntimeError):
    """A Mininet-WiFi call this testbed cannot honour, with the reason."""


def _position(value: object, where: str) -> tuple[float, float, float]:
    if isinstance(value, list | tuple):
        parts = [str(v) for v in value]
    else:
        parts = str(value).split(",")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        raise MnWifiError(f"{where}: position {value!r} is not 'x,y' or 'x,y,z' in metres") from None
    if len(nums) not in (2, 3):
        raise MnWifiError(f"{where}: position {value!r} is not 'x,y' or 'x,y,z' in metres")
    if nums[0] < 0 or nums[1] < 0:
        raise MnWifiError(f"{where}: position {value!r}: x and y must be >= 0 (the field starts at 0,0)")
    return nums[0], nums[1], nums[2] if len(nums) == 3 else 0.0


def _number(value: object, where: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise MnWifiError(f"{where}: expected a number, got {value!r}") from None


class Node:
    """What Mininet-WiFi's node objects offer scripts, backed by a testbed namespace."""

    def __init__(self, net: Mininet_wifi, name: str, params: dict[str, Any]) -> None:
        self.net = net
        self.name = name
        self.params: dict[str, Any] = params
        self.tb_node: TbStation | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __str__(self) -> str:
        return self.name

    def _live(self, what: str) -> TbStation:
        if self.tb_node is None:
            raise MnWifiError(f"{self.name}.{what}: the network is not built yet (call net.build())")
        return self.tb_node

    def cmd(self, *args: object, **kwargs: object) -> str:
        """Run a shell command in the node's namespace; return its output (stdout then stderr).

        A command ending in ``&`` is started in the background (Mininet's habit, e.g.
        ``sta3.cmd('iperf3 -s &')``): it returns at once with no output, and the process, recorded
        in the run's registry, is stopped with the network."""
        command = " ".join(str(a) for a in args).strip()
        node = self._live("cmd")
        if command.endswith("&") and not command.endswith("&&"):
            node.popen(command[:-1], role="mnwifi-bg", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return ""
        res = node.cmd(command, timeout=float(kwargs.get("timeout", 600.0)))  # type: ignore[arg-type]
        return res.stdout + res.stderr

    def popen(self, *args: object, **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start a command in the node's namespace without waiting (Mininet's ``popen``)."""
        if len(args) == 1 and isinstance(args[0], list | tuple):
            argv: list[str] | str = [str(a) for a in args[0]]
        elif len(args) == 1:
            argv = str(args[0])
        else:
            argv = [str(a) for a in args]
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.STDOUT)
        kwargs.pop("shell", None)
        return self._live("popen").popen(argv, role="mnwifi", **kwargs)

    def pexec(self, *args: object, **kwargs: Any) -> tuple[str, str, int]:
        command = " ".join(str(a) for a in args)
        res = self._live("pexec").cmd(command)
        return res.stdout, res.stderr, res.rc

    def IP(self, intf: str | None = None) -> str:  # noqa: N802 - Mininet's name
        """The node's address ("" for a wired host without ``ip=`` before ``build()``)."""
        return str(self.params.get("ip", "")).split("/")[0]

    def MAC(self, intf: str | None = None) -> str:  # noqa: N802
        return str(self.params.get("mac", ""))


class Station(Node):
    """A station ``staN`` of the testbed (one namespace, the router, the air interface)."""

    def __init__(self, net: Mininet_wifi, name: str, sid: int, params: dict[str, Any]) -> None:
        super().__init__(net, name, params)
        self.id = sid
        self.wintfs = {0: f"sta{sid}-wlan0"}

    @property
    def position(self) -> tuple[float, float, float]:
        pos: tuple[float, float, float] = self.params["position"]
        return pos

    def setPosition(self, pos: str) -> None:  # noqa: N802
        """Move the station now (the medium teleports it; z is kept but not used)."""
        x, y, z = _position(pos, f"{self.name}.setPosition")
        self.params["position"] = (x, y, z)
        if self.net.tb is not None:
            self.net.tb.medium("move", station=self.id, x=x, y=y)
        self.net.redraw()

    def setRange(self, value: float, intf: str | None = None) -> None:  # noqa: N802
        """Set the range (and so the transmit power, Mininet-WiFi's rule) before ``build()``."""
        if self.net.tb is not None:
            raise MnWifiError(
                f"{self.name}.setRange: the medium fixes each station's transmit power when the "
                "network is built; call setRange (or addStation(range=...)) before build()"
            )
        self.params["range"] = _number(value, f"{self.name}.setRange")

    def setTxPower(self, value: float, intf: str | None = None) -> None:  # noqa: N802
        if self.net.tb is not None:
            raise MnWifiError(f"{self.name}.setTxPower: transmit power is fixed at build(); set it before")
        self.params["txpower"] = _number(value, f"{self.name}.setTxPower")

    def get_distance_to(self, other: Station) -> float:
        return math.dist(self.current_position()[:2], other.current_position()[:2])

    def current_position(self) -> tuple[float, float, float]:
        return self.net.positions().get(self.id, self.position)


class Host(Node):
    """A wired host (``addHost``): its own namespace, one interface ``<name>-eth0``."""


class Switch(Node):
    """A switch (``addSwitch``): an Open vSwitch bridge of the run (or a Linux bridge)."""

    def start(self, controllers: Sequence[object] = ()) -> None:
        """Switches run in standalone mode (L2 learning); controllers are recorded only."""


class Controller:
    """``addController``: recorded; the run's switches learn on their own (standalone)."""

    def __init__(self, name: str = "c0", **params: Any) -> None:
        self.name = name
        self.params = params

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass
class MobilitySpec:
    model: str
    time: float = 0.0
    max_x: float | None = None
    max_y: float | None = None
    min_x: float = 0.0
    min_y: float = 0.0
    min_v: float = motion.DEFAULT_MIN_V
    max_v: float = motion.DEFAULT_MAX_V
    seed: int = 1


@dataclass
class Recorded:
    """What the script asked for that has no effect here (written to ``mnwifi.json``)."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, call: str, params: dict[str, Any]) -> None:
        if params:
            self.items.append({"call": call, "params": {k: repr(v) for k, v in params.items()}})
            log.info("*** %s: accepted without effect here: %s\n", call, ", ".join(sorted(params)))


class Mininet_wifi:  # noqa: N801 - Mininet-WiFi's class name
    """The network of a Mininet-WiFi script (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - NET_IGNORED)
        if unknown:
            raise MnWifiError(f"Mininet_wifi: unsupported parameter(s) {', '.join(unknown)}")
        if kwargs.get("topo") is not None:
            raise MnWifiError(
                "Mininet_wifi(topo=...): Topo classes are not supported; add the nodes with addStation"
            )
        self.ignored = Recorded()
        self.ignored.add("Mininet_wifi", kwargs)
        base = kwargs.get("ipBase")
        if base is not None and not ipaddress.ip_network(str(base), strict=False).overlaps(
            ipaddress.ip_network("10.0.0.0/16")
        ):
            raise MnWifiError(f"Mininet_wifi: ipBase={base!r}: stations here are 10.0.0.N (10.0.0.0/16)")
        self.stations: list[Station] = []
        self.hosts: list[Host] = []
        self.switches: list[Switch] = []
        self.controllers: list[Controller] = []
        self.wired_links: list[tuple[str, str]] = []
        self.gateways: list[tuple[int, str]] = []
        self.adhoc: dict[str, dict[str, Any]] = {}  # station name -> its addLink(cls=adhoc) kwargs
        self.proto: str | None = None
        self.proto_given = False
        self.propagation = PropagationSpec()
        self.propagation_kwargs: dict[str, object] = {}
        self.mob: MobilitySpec | None = None
        self.scripted: dict[int, list[tuple[float, tuple[float, float]]]] = {}
        self.plot_bounds: tuple[float, float] | None = None
        self.tb: Any = None  # testbed.run.Testbed once built
        self.plotter: Any = None
        self.seed = 1
        self.experiment = DEFAULTS["experiment"]
        self.out_root = DEFAULTS["out_root"]
        self.name = DEFAULTS["name"]
        self.stopped = False
        self._lock = threading.Lock()
        _CURRENT.append(self)

    # ---------------------------------------------------------------- lookup
    def nodes(self) -> list[Node]:
        return [*self.stations, *self.hosts, *self.switches]

    def get(self, *names: str) -> Any:
        found = [self[n] for n in names]
        return found[0] if len(found) == 1 else found

    def __getitem__(self, name: str) -> Node:
        for n in self.nodes():
            if n.name == name:
                return n
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        return any(n.name == name for n in self.nodes())

    # ---------------------------------------------------------------- building the network
    def _check_name(self, name: str) -> None:
        if name in self:
            raise MnWifiError(f"a node named {name!r} already exists")

    def addStation(self, name: str, **params: Any) -> Station:  # noqa: N802
        """A station. ``position='x,y[,z]'``, ``range=``, ``txpower=``, ``ip='10.0.0.N/8'``,
        ``min_x/max_x/min_y/max_y/min_v/max_v`` for mobility; see docs/mininet-wifi.md."""
        self._check_name(name)
        if self.tb is not None:
            raise MnWifiError(f"addStation({name!r}): the network is already built")
        sid = len(self.stations) + 1
        where = f"addStation({name!r})"
        if name.startswith("sta") and name[3:].isdigit() and int(name[3:]) != sid:
            raise MnWifiError(
                f"{where}: it is the {sid}. station, so here it is sta{sid} (namespace, interface "
                f"sta{sid}-wlan0, address {station_ip(sid)}); add stations in the order of their numbers"
            )
        known = STATION_IGNORED | {"position", "range", "txpower", "ip", "min_x", "max_x", "min_y",
                                   "max_y", "min_v", "max_v", "mobility"}  # fmt: skip
        unknown = sorted(set(params) - known)
        if unknown:
            raise MnWifiError(f"{where}: unsupported parameter(s) {', '.join(unknown)}")
        ip = params.get("ip")
        if ip is not None:
            addr = str(ip).split("/")[0]
            if addr != station_ip(sid):
                raise MnWifiError(
                    f"{where}: ip={ip!r}: the {sid}. station has address {station_ip(sid)} here "
                    f"(staN is 10.0.0.N); leave ip out or give {station_ip(sid)}/8"
                )
        p: dict[str, Any] = {
            "ip": f"{station_ip(sid)}/16",
            "mac": f"02:00:00:00:{sid >> 8:02x}:{sid & 255:02x}",
        }
        if "position" in params:
            p["position"] = _position(params["position"], where)
        for key in ("range", "txpower", "min_x", "max_x", "min_y", "max_y", "min_v", "max_v"):
            if key in params:
                p[key] = _number(params[key], f"{where}: {key}")
        self.ignored.add(where, {k: v for k, v in params.items() if k in STATION_IGNORED})
        st = Station(self, name, sid, p)
        self.stations.append(st)
        return st

    def addHost(self, name: str, **params: Any) -> Host:  # noqa: N802
        """A wired host; ``ip=`` must lie outside the stations' 10.0.0.0/16 (default: 10.1.0.k/24)."""
        self._check_name(name)
        known = {"ip", "mac", "cls", "defaultRoute", "inNamespace", "privateDirs"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise MnWifiError(f"addHost({name!r}): unsupported parameter(s) {', '.join(unknown)}")
        p: dict[str, Any] = {}
        if "ip" in params:
            iface = ipaddress.ip_interface(
                str(params["ip"]) if "/" in str(params["ip"]) else f"{params['ip']}/24"
            )
            if iface.ip in ipaddress.ip_network("10.0.0.0/16"):
                raise MnWifiError(
                    f"addHost({name!r}): ip={params['ip']!r} is in the stations' 10.0.0.0/16; wired hosts "
                    f"need their own subnet (default {DEFAULT_SUBNET})"
                )
            p["ip"] = str(iface)
        self.ignored.add(f"addHost({name!r})", {k: v for k, v in params.items() if k != "ip"})
        h = Host(self, name, p)
        self.hosts.append(h)
        return h

    def addSwitch(self, name: str, **params: Any) -> Switch:  # noqa: N802
        """A switch: Open vSwitch (userspace datapath) where installed, else a Linux bridge."""
        self._check_name(name)
        known = {"cls", "failMode", "datapath", "protocols", "dpid", "inNamespace", "stp", "listenPort"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise MnWifiError(f"addSwitch({name!r}): unsupported parameter(s) {', '.join(unknown)}")
        self.ignored.add(f"addSwitch({name!r})", params)
        sw = Switch(self, name, {})
        self.switches.append(sw)
        return sw

    def addController(self, name: str = "c0", controller: object = None, **params: Any) -> Controller:  # noqa: N802
        self.ignored.add(f"addController({name!r})", {"controller": controller, **params})
        c = Controller(name, **params)
        self.controllers.append(c)
        return c

    def addAccessPoint(self, name: str, **params: Any) -> None:  # noqa: N802
        raise MnWifiError(
            f"addAccessPoint({name!r}): access points (infrastructure mode) are not supported; "
            "this testbed emulates ad hoc networks (addLink(sta, cls=adhoc, ...))"
        )

    def setPropagationModel(self, **kwargs: Any) -> None:  # noqa: N802
        try:
            self.propagation = PropagationSpec.from_kwargs(kwargs)
        except PropagationError as exc:
            raise MnWifiError(str(exc)) from None
        self.propagation_kwargs = dict(kwargs)

    propagationModel = setPropagationModel  # noqa: N815 - older Mininet-WiFi name

    def configureWifiNodes(self) -> None:  # noqa: N802
        """Nothing to do: the radios are configured when the network is built."""

    configureNodes = configureWifiNodes  # noqa: N815

    def addLink(self, node1: Node, node2: Node | None = None, **params: Any) -> None:  # noqa: N802
        """``addLink(sta, cls=adhoc, proto=...)`` joins the ad hoc network; ``addLink(h, s)``,
        ``addLink(s1, s2)`` are wired links; ``addLink(sta, s)`` makes the station a gateway."""
        from testbed.mnwifi.link import adhoc

        if self.tb is not None:
            raise MnWifiError("addLink: the network is already built")
        cls = params.pop("cls", None)
        if node2 is None:
            if not isinstance(node1, Station):
                raise MnWifiError(
                    f"addLink({node1.name}): a one-ended link is an ad hoc interface of a station"
                )
            if cls is not adhoc:
                raise MnWifiError(
                    f"addLink({node1.name}, cls={getattr(cls, '__name__', cls)}): only ad hoc links "
                    "(cls=adhoc) are supported; mesh, wifiDirect, 6LoWPAN, ... are not"
                )
            self._adhoc_link(node1, params)
            return
        if params.get("intf") is not None or cls not in (None, adhoc):
            self.ignored.add(f"addLink({node1.name}, {node2.name})", {"cls": cls, **params})
        a, b = node1, node2
        if isinstance(b, Station):
            a, b = b, a
        if isinstance(a, Station) and isinstance(b, Switch):
            if self.gateways:
                raise MnWifiError(
                    f"addLink({a.name}, {b.name}): one gateway station per wired segment is supported "
                    f"(already {self.stations[self.gateways[0][0] - 1].name})"
                )
            self.gateways.append((a.id, b.name))
            return
        if isinstance(a, Host | Switch) and isinstance(b, Host | Switch):
            self.wired_links.append((a.name, b.name))
            return
        raise MnWifiError(
            f"addLink({node1.name}, {node2.name}): supported links are station-adhoc, host-switch, "
            "switch-switch and station-switch (a gateway)"
        )

    def _adhoc_link(self, st: Station, params: dict[str, Any]) -> None:
        where = f"addLink({st.name}, cls=adhoc)"
        proto = params.pop("proto", None)
        if proto is not None:
            proto = str(proto).lower()
            if proto in MN_WIFI_PROTOCOLS or proto not in PROTOCOLS:
                raise MnWifiError(
                    f"{where}: proto={proto!r} is not available here; the routers support "
                    f"{', '.join(p for p in PROTOCOLS if p)} (or no proto: single hop)"
                )
        if self.proto_given and proto != self.proto:
            raise MnWifiError(
                f"{where}: proto={proto!r} differs from proto={self.proto!r} of the other stations; "
                "one routing protocol runs on every station"
            )
        self.proto, self.proto_given = proto, True
        for key in ("txpower", "range"):
            if key in params:
                st.params[key] = _number(params.pop(key), f"{where}: {key}")
        if "position" in params:
            st.params["position"] = _position(params.pop("position"), where)
        unknown = sorted(set(params) - LINK_IGNORED)
        if unknown:
            raise MnWifiError(f"{where}: unsupported parameter(s) {', '.join(unknown)}")
        intf = params.get("intf")
        if intf is not None and intf != f"{st.name}-wlan0" and intf != st.wintfs[0]:
            raise MnWifiError(f"{where}: intf={intf!r}: a station has one air interface, {st.wintfs[0]}")
        # the first ad hoc channel sets the medium's frequency (testbed/mnwifi/scenario.py); another
        # channel is recorded: every station shares the one medium
        first = next((a["channel"] for a in self.adhoc.values() if "channel" in a), None)
        self.adhoc[st.name] = dict(params)
        recorded = {k: v for k, v in params.items() if k != "channel"}
        if "channel" in params and first is not None and str(params["channel"]) != str(first):
            recorded["channel"] = params["channel"]
        self.ignored.add(where, recorded)

    # ---------------------------------------------------------------- mobility and plot
    def setMobilityModel(self, **kwargs: Any) -> None:  # noqa: N802
        known = {"time", "model", "max_x", "max_y", "min_x", "min_y", "min_v", "max_v", "seed"}
        unknown = sorted(set(kwargs) - known - MOBILITY_IGNORED)
        if unknown:
            raise MnWifiError(f"setMobilityModel: unsupported parameter(s) {', '.join(unknown)}")
        model = str(kwargs.get("model", "RandomWayPoint"))
        try:
            motion.check_model(model)
        except motion.MobilityError as exc:
            raise MnWifiError(str(exc)) from None
        spec = MobilitySpec(model=model, seed=int(kwargs.get("seed", 1)))
        for key in ("time", "max_x", "max_y", "min_x", "min_y", "min_v", "max_v"):
            if key in kwargs:
                setattr(spec, key, _number(kwargs[key], f"setMobilityModel: {key}"))
        self.ignored.add("setMobilityModel", {k: v for k, v in kwargs.items() if k in MOBILITY_IGNORED})
        self.mob = spec
        self.seed = spec.seed

    def startMobility(self, **kwargs: Any) -> None:  # noqa: N802
        """With ``model=``: the same as ``setMobilityModel``; else it bounds scripted mobility."""
        if "model" in kwargs:
            self.setMobilityModel(**kwargs)
            return
        unknown = sorted(set(kwargs) - {"time"} - MOBILITY_IGNORED)
        if unknown:
            raise MnWifiError(f"startMobility: unsupported parameter(s) {', '.join(unknown)}")

    def stopMobility(self, **kwargs: Any) -> None:  # noqa: N802
        unknown = sorted(set(kwargs) - {"time"} - MOBILITY_IGNORED)
        if unknown:
            raise MnWifiError(f"stopMobility: unsupported parameter(s) {', '.join(unknown)}")

    def mobility(self, st: Station, event: str, **kwargs: Any) -> None:
        """``mobility(sta, 'start'|'stop', time=t, position='x,y,z')``: a straight scripted path."""
        where = f"mobility({st.name}, {event!r})"
        if event not in ("start", "stop"):
            raise MnWifiError(f"{where}: the event is 'start' or 'stop'")
        unknown = sorted(set(kwargs) - {"time", "position"} - MOBILITY_IGNORED)
        if unknown:
            raise MnWifiError(f"{where}: unsupported parameter(s) {', '.join(unknown)}")
        if "time" not in kwargs or "position" not in kwargs:
            raise MnWifiError(f"{where}: give time= and position=")
        t = _number(kwargs["time"], f"{where}: time")
        x, y, _ = _position(kwargs["position"], where)
        self.scripted.setdefault(st.id, []).append((t, (x, y)))
        if event == "start" and "position" not in st.params:
            st.params["position"] = (x, y, 0.0)

    def plotGraph(self, **kwargs: Any) -> None:  # noqa: N802
        """A matplotlib view of stations, ranges and links: live where there is a display, else
        saved as ``plotgraph.png`` in the run's results (at build and at stop)."""
        known = {"max_x", "max_y", "min_x", "min_y", "min_z", "max_z"}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise MnWifiError(f"plotGraph: unsupported parameter(s) {', '.join(unknown)}")
        self.plot_bounds = (
            _number(kwargs.get("max_x", 100), "plotGraph: max_x"),
            _number(kwargs.get("max_y", 100), "plotGraph: max_y"),
        )
        self.ignored.add("plotGraph", {k: v for k, v in kwargs.items() if k not in ("max_x", "max_y")})

    # ---------------------------------------------------------------- run
    def build(self) -> None:
        if self.tb is not None:
            return
        from testbed.mnwifi.scenario import build_scenario, release_movements
        from testbed.run import Testbed

        if not self.stations:
            raise MnWifiError("build: the network has no stations (addStation)")
        sc = build_scenario(self)
        tb = Testbed(sc, experiment=self.experiment, out_root=self.out_root, quiet=True)
        self.tb = tb
        try:
            tb.start()
        finally:
            release_movements(sc, tb.results.dir if tb.results is not None else None)
        for st in self.stations:
            st.tb_node = tb.stations[st.id]
        for h in self.hosts:
            h.tb_node = tb.hosts[h.name]
            h.params["ip"] = f"{tb.hosts[h.name].ip}/{sc.wired.subnet.prefixlen if sc.wired else 24}"
        if tb.results is not None:
            tb.results.write("mnwifi.json", {"script": sys.argv, "ignored": self.ignored.items})
        log.info("*** Network built: %d stations, results in %s\n", len(self.stations), tb.dir)
        if self.plot_bounds is not None:
            from testbed.mnwifi.plot import Plotter

            self.plotter = Plotter(self, tb.dir / "plotgraph.png")
            self.plotter.start()

    def start(self) -> None:
        self.build()

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.plotter is not None:
            self.plotter.stop()
        if self.tb is not None:
            self.tb.stop()
            log.info("*** Stopped; results in %s\n", self.tb.dir)

    def positions(self) -> dict[int, tuple[float, float, float]]:
        """Every station's position now (from the medium once built)."""
        if self.tb is None:
            return {st.id: st.params.get("position", (0.0, 0.0, 0.0)) for st in self.stations}
        rep = self.tb.medium("positions")
        out: dict[int, tuple[float, float, float]] = {}
        raw = rep.get("positions", [])
        items = raw.items() if isinstance(raw, dict) else [(i.get("station", i.get("id")), i) for i in raw]
        for k, v in items:
            if isinstance(v, list):
                out[int(k)] = (float(v[0]), float(v[1]), 0.0)
            else:
                out[int(k)] = (float(v["x"]), float(v["y"]), 0.0)
        return out

    def ranges(self) -> dict[int, float]:
        """Each station's range as Mininet-WiFi states it: ``range=``, else from its power."""
        from testbed.mnwifi.scenario import tx_power_of

        out = {}
        for st in self.stations:
            r = st.params.get("range")
            out[st.id] = float(r) if r is not None else self.propagation.range_m(tx_power_of(self, st))
        return out

    def redraw(self) -> None:
        if self.plotter is not None:
            self.plotter.update()

    def pingAll(self, timeout: float | str | None = None) -> float:  # noqa: N802
        """Every station and host pings every other once; prints Mininet's table; returns the
        percentage of lost pings."""
        if self.tb is None:
            raise MnWifiError("pingAll: the network is not built yet (call net.build())")
        wait = max(1, math.ceil(float(timeout))) if timeout is not None else 1
        nodes: list[Node] = [*self.stations, *self.hosts]
        results: dict[tuple[str, str], bool] = {}

        def run(src: Node) -> None:
            for dst in nodes:
                if dst is not src:
                    out = src._live("ping").cmd(["ping", "-c1", f"-W{wait}", dst.IP()], timeout=wait + 5)
                    results[(src.name, dst.name)] = out.rc == 0

        threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sent = len(results)
        got = sum(results.values())
        out = ["*** Ping: testing ping reachability"]
        for src in nodes:
            line = " ".join(
                dst.name if results[(src.name, dst.name)] else "X" for dst in nodes if dst is not src
            )
            out.append(f"{src.name} -> {line}")
        loss = 100.0 * (sent - got) / sent if sent else 0.0
        out.append(f"*** Results: {loss:.0f}% dropped ({got}/{sent} received)")
        print("\n".join(out), flush=True)
        return loss

    def ping(self, hosts: Sequence[Node] | None = None, timeout: float | None = None) -> float:
        return self.pingAll(timeout)


_CURRENT: list[Mininet_wifi] = []
"""Networks made in this process, newest last (``testbed.mnwifi`` stops them at exit)."""


def current_networks() -> list[Mininet_wifi]:
    return list(_CURRENT)


def split_cmd(line: str) -> list[str]:
    return shlex.split(line)


__all__ = ["Mininet_wifi", "MnWifiError", "Station", "Host", "Switch", "Controller", "Trajectory"]
