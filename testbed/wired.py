"""The wired segment of a run: Open vSwitch (or Linux bridges), wired hosts, the gateway station.

Issue 15, item 2. Everything lives in namespaces of the run, so nothing touches the machine's
own network or an Open vSwitch the user runs:

- switches are bridges ``mt<runid>-<name>`` inside the run's control namespace ``mt<runid>-ctl``;
  with OVS they belong to the run's own ``ovsdb-server`` and ``ovs-vswitchd`` (userspace datapath,
  ``datapath_type=netdev``: this kernel has no OVS kernel datapath), started in that namespace
  with their database, sockets, pid files and run directory in ``/run/manet/<runid>/ovs/``;
- each host is a namespace ``mt<runid>-<name>`` with one veth ``<name>-eth0`` whose peer
  ``<switch>-eth<k>`` is a port of its switch; switch-to-switch links are veth pairs too;
- the gateway station gets ``sta<N>-eth1`` on its switch and forwards (``ip_forward=1``) between
  it and ``tun0``; every other station routes the wired subnet into ``tun0`` and its router
  tunnels it to the gateway (IP in IP, nodes/core/ipip.py); hosts route everything else via the
  gateway.

The OVS daemons are registered processes of the run and live in its control namespace, so
``make clean`` after a SIGKILL stops them with the run's other processes, and deleting the
namespaces removes the bridges and veths (testbed/cleanup.py).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nodes.core.ipip import WiredRoute
from topologies.wired import WIRED_MTU, Wired

OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
OVS_TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl")
OFFLOADS_OFF = ("tx", "off", "tso", "off", "gso", "off")
"""``ethtool -K`` on every veth of the segment: the userspace datapath reads frames with packet
sockets, which do not complete a checksum the sender left to the device (CHECKSUM_PARTIAL), so a
TCP segment would arrive with a wrong checksum; ICMP, checksummed in software, would still pass.
Mininet turns TX checksumming off on its veths for the same reason."""
OVS_TIMEOUT_S = 15
"""How long ``ovs-vsctl`` waits for ovs-vswitchd to apply a change (bring-up on a loaded machine)."""


class WiredError(RuntimeError):
    pass


def ovs_available() -> str | None:
    """None when Open vSwitch can run here, else why not."""
    missing = [t for t in OVS_TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (make setup installs openvswitch-switch)"
    if not OVS_SCHEMA.exists():
        return f"{OVS_SCHEMA} not found"
    if not Path("/dev/net/tun").exists():
        return "/dev/net/tun missing (the userspace datapath needs it for bridge ports)"
    return None


def choose_backend(requested: str) -> str:
    """``ovs`` or ``bridge``: ``auto`` is OVS where it can run, else a Linux bridge."""
    if requested == "bridge":
        return "bridge"
    why = ovs_available()
    if requested == "ovs" and why is not None:
        raise WiredError(f"wired.backend ovs: {why}")
    return "ovs" if why is None else "bridge"


def _ip_batch(netns: str, lines: list[str]) -> None:
    script = "".join(f"{line}\n" for line in lines)
    res = subprocess.run(
        ["ip", "-n", netns, "-batch", "-"], input=script, capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise WiredError(f"ip -n {netns} -batch failed: {res.stderr.strip()}")


def _offloads_off(netns: str, dev: str) -> None:
    res = subprocess.run(
        ["ip", "netns", "exec", netns, "ethtool", "-K", dev, *OFFLOADS_OFF],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise WiredError(f"ethtool -K {dev} {' '.join(OFFLOADS_OFF)} in {netns}: {res.stderr.strip()}")


@dataclass
class Port:
    """One veth pair: ``inner`` (a switch port in the control namespace) and ``outer``."""

    switch: str
    inner: str
    outer: str
    outer_netns: str | None  # None: the other end is a switch port too (ctl namespace)
    peer_switch: str | None = None


@dataclass
class WiredSegment:
    """Bring-up and teardown of one run's wired segment (see the module docstring)."""

    wired: Wired
    run_id: str
    ctl_ns: str
    state_dir: Path
    log_dir: Path
    register: Callable[[int, str], None]
    backend: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ports: list[Port] = field(default_factory=list)

    # ---------------------------------------------------------------- names
    def bridge(self, switch: str) -> str:
        return f"mt{self.run_id}-{switch}"

    def host_netns(self, host: str) -> str:
        return f"mt{self.run_id}-{host}"

    def station_netns(self, sid: int) -> str:
        return f"mt{self.run_id}-sta{sid}"

    def namespaces(self) -> list[str]:
        return [self.host_netns(h) for h in self.wired.host_names()]

    @property
    def gateway(self) -> int | None:
        return self.wired.gateways[0].station if self.wired.gateways else None

    @property
    def ovs_dir(self) -> Path:
        return self.state_dir / "ovs"

    @property
    def db_sock(self) -> str:
        return f"unix:{self.ovs_dir / 'db.sock'}"

    def router_config(self) -> WiredRoute | None:
        """The routers' ``wired`` key (nodes/core/ipip.py), or None without a gateway."""
        if self.gateway is None:
            return None
        return WiredRoute(ipaddress.IPv4Network(self.wired.subnet), self.gateway)

    def plan_ports(self) -> list[Port]:
        """Every veth of the segment, ports numbered per switch in link order (Mininet's scheme)."""
        count: dict[str, int] = {}

        def next_port(sw: str) -> str:
            count[sw] = count.get(sw, 0) + 1
            return f"{sw}-eth{count[sw]}"

        switches = {s.name for s in self.wired.switches}
        out: list[Port] = []
        for a, b in self.wired.links:
            if a in switches and b in switches:
                out.append(Port(a, next_port(a), next_port(b), None, peer_switch=b))
            else:
                sw, host = (a, b) if a in switches else (b, a)
                out.append(Port(sw, next_port(sw), f"{host}-eth0", self.host_netns(host)))
        for gw in self.wired.gateways:
            out.append(
                Port(gw.switch, next_port(gw.switch), f"sta{gw.station}-eth1", self.station_netns(gw.station))
            )
        return out

    # ---------------------------------------------------------------- bring-up
    def start(self) -> None:
        """Switches, veths, host addresses and routes (after the namespaces exist)."""
        self.backend = choose_backend(self.wired.backend)
        self.ports = self.plan_ports()
        if self.backend == "ovs":
            self._start_ovs()
        lines = []
        for p in self.ports:
            peer = f" netns {p.outer_netns}" if p.outer_netns else ""
            lines.append(
                f"link add {p.inner} mtu {WIRED_MTU} type veth peer name {p.outer} mtu {WIRED_MTU}{peer}"
            )
            lines.append(f"link set {p.inner} up")
            if p.outer_netns is None:
                lines.append(f"link set {p.outer} up")
        if self.backend == "bridge":
            for s in self.wired.switches:
                lines += [f"link add {self.bridge(s.name)} type bridge", f"link set {self.bridge(s.name)} up"]
            for p in self.ports:
                lines.append(f"link set {p.inner} master {self.bridge(p.switch)}")
                if p.peer_switch is not None:
                    lines.append(f"link set {p.outer} master {self.bridge(p.peer_switch)}")
        _ip_batch(self.ctl_ns, lines)
        for p in self.ports:
            _offloads_off(self.ctl_ns, p.inner)
            _offloads_off(p.outer_netns or self.ctl_ns, p.outer)
        if self.backend == "ovs":
            cmd: list[str] = []
            for s in self.wired.switches:
                br = self.bridge(s.name)
                cmd += ["--", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"]
            for p in self.ports:
                cmd += ["--", "add-port", self.bridge(p.switch), p.inner]
                if p.peer_switch is not None:
                    cmd += ["--", "add-port", self.bridge(p.peer_switch), p.outer]
            self.vsctl(*cmd)
        prefix = self.wired.subnet.prefixlen
        gw_ip = self.wired.gateway_ip() if self.wired.gateways else None
        for h in self.wired.host_names():
            dev = f"{h}-eth0"
            host_lines = [f"addr add {self.wired.host_ip(h)}/{prefix} dev {dev}", f"link set {dev} up"]
            if gw_ip is not None:
                host_lines.append(f"route add default via {gw_ip}")
            _ip_batch(self.host_netns(h), host_lines)

    def start_gateway(self) -> None:
        """Address the gateway's wired interface and route the wired subnet at every station.

        Called when the routers are up (their ``tun0`` exists); ``stations`` are the ids."""
        if self.gateway is None:
            return
        dev = f"sta{self.gateway}-eth1"
        _ip_batch(
            self.station_netns(self.gateway),
            [
                f"addr add {self.wired.gateway_ip()}/{self.wired.subnet.prefixlen} dev {dev}",
                f"link set {dev} up",
            ],
        )

    def route_stations(self, stations: list[int]) -> None:
        for sid in stations:
            if sid != self.gateway:
                _ip_batch(
                    self.station_netns(sid), [f"route add {self.wired.subnet} dev tun0 mtu {WIRED_MTU}"]
                )

    def _spawn(self, argv: list[str], role: str) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{role}.log", "ab")
        env = {
            **os.environ,
            "OVS_RUNDIR": str(self.ovs_dir),
            "OVS_DBDIR": str(self.ovs_dir),
            "OVS_LOGDIR": str(self.log_dir),
            "OVS_SYSCONFDIR": str(self.ovs_dir),
        }
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ctl_ns, *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        log.close()
        self.procs.append(proc)
        self.register(proc.pid, role)
        return proc

    def _start_ovs(self) -> None:
        d = self.ovs_dir
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        res = subprocess.run(
            ["ovsdb-tool", "create", str(d / "conf.db"), str(OVS_SCHEMA)],
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            raise WiredError(f"ovsdb-tool create: {res.stderr.strip()}")
        common = ["--no-chdir", "-vconsole:off", "-vfile:info"]
        db = self._spawn(
            [
                "ovsdb-server",
                str(d / "conf.db"),
                f"--remote=punix:{d / 'db.sock'}",
                f"--unixctl={d / 'ovsdb-server.ctl'}",
                f"--pidfile={d / 'ovsdb-server.pid'}",
                f"--log-file={self.log_dir / 'ovsdb-server.log'}",
                *common,
            ],
            "ovsdb-server",
        )
        deadline = time.monotonic() + OVS_TIMEOUT_S
        while not (d / "db.sock").exists():
            if db.poll() is not None or time.monotonic() > deadline:
                raise WiredError(f"ovsdb-server did not start (see {self.log_dir / 'ovsdb-server.log'})")
            time.sleep(0.02)
        self.vsctl("--no-wait", "init")
        self._spawn(
            [
                "ovs-vswitchd",
                self.db_sock,
                f"--unixctl={d / 'ovs-vswitchd.ctl'}",
                f"--pidfile={d / 'ovs-vswitchd.pid'}",
                f"--log-file={self.log_dir / 'ovs-vswitchd.log'}",
                *common,
            ],
            "ovs-vswitchd",
        )

    def vsctl(self, *args: str) -> str:
        """``ovs-vsctl`` against the run's own database (never the system's default socket)."""
        res = subprocess.run(
            ["ovs-vsctl", f"--db={self.db_sock}", f"--timeout={OVS_TIMEOUT_S}", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            raise WiredError(f"ovs-vsctl {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    # ---------------------------------------------------------------- teardown
    def stop(self) -> None:
        """Stop the run's OVS daemons (SIGTERM: ovs-vswitchd removes its bridges and exits)."""
        from testbed import procs as procs_mod

        live: dict[int, int | None] = {p.pid: None for p in reversed(self.procs) if p.poll() is None}
        if live:
            procs_mod.terminate(live, timeout_s=2.0)
        for p in self.procs:
            try:
                p.wait(1.0)
            except subprocess.TimeoutExpired:
                pass
