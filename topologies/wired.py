"""The wired segment of a scenario: hosts, switches, links and the gateway station (issue 15).

```yaml
wired:
  subnet: 10.1.0.0/24            # the wired hosts' network (outside the stations' 10.0.0.0/16)
  backend: auto                  # ovs (Open vSwitch, userspace datapath) | bridge (Linux) | auto
  switches: [s1]
  hosts: [h1, {name: h2, ip: 10.1.0.20}]
  links: [[h1, s1], [h2, s1]]    # host-switch and switch-switch
  gateways: [{station: 2, switch: s1}]
```

Validation of names and addresses lives here; what refers to stations (the gateway's station
id, flows to hosts) is checked with the rest of the scenario (topologies/scenario.py).
docs/scenarios.md documents the fields, docs/orchestrator.md how a run builds them.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StringConstraints

NODE_NAME_RE: Final = r"^[a-z][a-z0-9]{0,5}$"
"""Host and switch names: short, because interface names ``<name>-eth<k>`` have 15 bytes at most."""
STATION_NAME_RE: Final = r"^sta[0-9]+$"
WIRED_MTU: Final = 1480
"""MTU of every wired link and of the stations' routes to the wired subnet: a wired packet
crosses the MANET inside a 20-byte outer IPv4 header (nodes/core/ipip.py) and the air
interface carries at most 1500 bytes of IP (tun0's MTU)."""
DEFAULT_SUBNET: Final = "10.1.0.0/24"
RESERVED_NAMES: Final = frozenset({"ctl", "zyg"})
"""Suffixes of the run's own namespaces and processes (testbed/run.py)."""

NodeName = Annotated[str, StringConstraints(pattern=NODE_NAME_RE)]


def _host_item(value: object) -> object:
    return {"name": value} if isinstance(value, str) else value


def _switch_item(value: object) -> object:
    return {"name": value} if isinstance(value, str) else value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WiredHost(_Model):
    """A wired host: its own namespace ``mt<runid>-<name>``, interface ``<name>-eth0``."""

    name: NodeName
    ip: ipaddress.IPv4Address | None = None  # default: the subnet's k-th address (k-th host)


class WiredSwitch(_Model):
    """A switch: an OVS bridge ``mt<runid>-<name>`` (or a Linux bridge with backend bridge)."""

    name: NodeName


class WiredGateway(_Model):
    """A station with a second interface ``sta<N>-eth1`` on a switch; it forwards between the
    MANET and the wired subnet."""

    station: Annotated[StrictInt, Field(ge=1)]
    switch: NodeName
    ip: ipaddress.IPv4Address | None = None  # default: the subnet's last usable address


class Wired(_Model):
    subnet: ipaddress.IPv4Network = ipaddress.IPv4Network(DEFAULT_SUBNET)
    backend: Literal["auto", "ovs", "bridge"] = "auto"
    switches: list[Annotated[WiredSwitch, BeforeValidator(_switch_item)]] = Field(default_factory=list)
    hosts: list[Annotated[WiredHost, BeforeValidator(_host_item)]] = Field(default_factory=list)
    links: list[tuple[NodeName, NodeName]] = Field(default_factory=list)
    gateways: list[WiredGateway] = Field(default_factory=list)

    def host_ip(self, name: str) -> ipaddress.IPv4Address:
        """The address of host ``name``: given, or the subnet's k-th address for the k-th host."""
        for k, h in enumerate(self.hosts, start=1):
            if h.name == name:
                return h.ip if h.ip is not None else self.subnet.network_address + k
        raise KeyError(name)

    def gateway_ip(self) -> ipaddress.IPv4Address:
        gw = self.gateways[0]
        return gw.ip if gw.ip is not None else self.subnet.broadcast_address - 1

    def host_names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def problems(self) -> list[tuple[str, str]]:
        """Problems inside the block (relative paths); station ids are checked by the scenario."""
        out: list[tuple[str, str]] = []
        sub = self.subnet
        if sub.overlaps(ipaddress.IPv4Network("10.0.0.0/16")):
            out.append(("subnet", f"{sub} overlaps the stations' network 10.0.0.0/16"))
        if sub.num_addresses < 4:
            out.append(("subnet", f"{sub} has no room for hosts and a gateway"))
        names: dict[str, str] = {}
        named: list[tuple[str, list[str]]] = [
            ("switches", [s.name for s in self.switches]),
            ("hosts", self.host_names()),
        ]
        for kind, items in named:
            for i, name in enumerate(items):
                if re.match(STATION_NAME_RE, name) or name in RESERVED_NAMES:
                    out.append(
                        (
                            f"{kind}[{i}].name",
                            f"{name!r} is reserved (stations, the run's own namespaces)",
                        )
                    )
                if name in names:
                    out.append((f"{kind}[{i}].name", f"{name!r} is already a {names[name]}"))
                names[name] = kind[:-2] if kind == "switches" else "host"
        switches = {s.name for s in self.switches}
        hosts = set(self.host_names())
        seen_links: set[frozenset[str]] = set()
        linked_hosts: set[str] = set()
        for i, (a, b) in enumerate(self.links):
            for j, end in enumerate((a, b)):
                if end not in names:
                    out.append((f"links[{i}][{j}]", f"no host or switch named {end!r}"))
            if a in hosts and b in hosts:
                out.append((f"links[{i}]", f"{a}-{b}: a link joins a host to a switch or two switches"))
            if a == b:
                out.append((f"links[{i}]", f"a link needs two ends, both are {a!r}"))
            pair = frozenset((a, b))
            if pair in seen_links:
                out.append((f"links[{i}]", f"link {a}-{b} listed twice"))
            seen_links.add(pair)
            for end in (a, b):
                if end in hosts:
                    if end in linked_hosts:
                        out.append((f"links[{i}]", f"host {end!r} has one interface and is linked twice"))
                    linked_hosts.add(end)
        for h in sorted(hosts - linked_hosts):
            out.append(("hosts", f"host {h!r} is not linked to a switch (add it to links)"))
        used: dict[ipaddress.IPv4Address, str] = {}
        for i, host in enumerate(self.hosts):
            ip = self.host_ip(host.name)
            if ip not in sub or ip in (sub.network_address, sub.broadcast_address):
                out.append((f"hosts[{i}].ip", f"{ip} is not a host address of subnet {sub}"))
            if ip in used:
                out.append((f"hosts[{i}].ip", f"{ip} is also {used[ip]}'s address"))
            used[ip] = host.name
        if len(self.gateways) > 1:
            out.append(("gateways", "one gateway station per wired segment is supported"))
        for i, gw in enumerate(self.gateways):
            if gw.switch not in switches:
                out.append((f"gateways[{i}].switch", f"no switch named {gw.switch!r}"))
        if self.gateways:
            ip = self.gateway_ip()
            if ip not in sub or ip in (sub.network_address, sub.broadcast_address):
                out.append(("gateways[0].ip", f"{ip} is not a host address of subnet {sub}"))
            elif ip in used:
                out.append(("gateways[0].ip", f"{ip} is also {used[ip]}'s address"))
        elif self.hosts:
            out.append(("gateways", "hosts need a gateway station to reach the MANET"))
        return out
