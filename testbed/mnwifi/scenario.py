"""A Mininet-WiFi network (``testbed.mnwifi.net.Mininet_wifi``) as a scenario (docs/scenarios.md).

The mapping, field by field (docs/mininet-wifi.md has the full table):

- stations: one per ``addStation``, in order (``staN`` = the N-th, 10.0.0.N); ``position`` ->
  ``stations.positions``; ``range=`` -> a transmit power (Mininet-WiFi's rule, see
  propagation.py), ``txpower=`` as given -> ``stations.tx_power_dbm``;
- radio: the ``wmediumd`` preset with the propagation model's overrides; the channel of the first
  ad hoc link sets the frequency (one shared medium: other channels are recorded only);
- mobility: random trajectories and scripted paths -> a BonnMotion movement file (stations with
  a ``position`` stay put under ``setMobilityModel``, as in Mininet-WiFi);
- routing: ``proto`` -> ``routing.protocol``; no ``proto``: static routes straight to every
  station (one hop, as IBSS without a routing daemon);
- wired hosts, switches, links and the gateway -> ``wired``.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.mnwifi import motion
from testbed.mnwifi.propagation import WMEDIUMD, PropagationError, channel_frequency_hz
from topologies import bonnmotion
from topologies.mobility import Trajectory
from topologies.scenario import BonnMotionMobility, Scenario, scenario_from_dict
from topologies.seeding import derive_rng
from topologies.wired import DEFAULT_SUBNET

if TYPE_CHECKING:
    from testbed.mnwifi.net import Mininet_wifi, Station


def tx_power_of(net: Mininet_wifi, st: Station) -> float:
    """The station's transmit power, dBm: from ``range=`` (Mininet-WiFi's rule), else ``txpower=``,
    else the preset's default."""
    r = st.params.get("range")
    if r is not None:
        return float(net.propagation.tx_power_for_range(float(r)))
    p = st.params.get("txpower")
    return float(p) if p is not None else WMEDIUMD.tx_power_dbm


def _frequency(net: Mininet_wifi) -> float | None:
    from testbed.mnwifi.net import MnWifiError

    for st in net.stations:
        ch = net.adhoc.get(st.name, {}).get("channel")
        if ch is not None:
            try:
                return channel_frequency_hz(int(ch))
            except (ValueError, PropagationError) as exc:
                raise MnWifiError(f"addLink({st.name}, cls=adhoc): channel={ch!r}: {exc}") from None
    return None


def trajectories(net: Mininet_wifi, field: tuple[float, float]) -> dict[int, Trajectory] | None:
    """Every station's trajectory when anything moves, else None (static positions)."""
    mob = net.mob
    if mob is None and not net.scripted:
        return None
    out: dict[int, Trajectory] = {}
    for st in net.stations:
        p = st.params
        start = p["position"][:2]
        if st.id in net.scripted:
            out[st.id] = motion.scripted_trajectory(start, net.scripted[st.id])
        elif mob is not None and p.get("mobile"):
            bounds = motion.Bounds(
                min_x=float(p.get("min_x", mob.min_x)),
                max_x=float(p.get("max_x", mob.max_x if mob.max_x is not None else field[0])),
                min_y=float(p.get("min_y", mob.min_y)),
                max_y=float(p.get("max_y", mob.max_y if mob.max_y is not None else field[1])),
                min_v=float(p.get("min_v", mob.min_v)),
                max_v=float(p.get("max_v", mob.max_v)),
            )
            out[st.id] = motion.random_trajectory(mob.model, start, bounds, mob.time, mob.seed, st.id)
        else:
            out[st.id] = [(0.0, start[0], start[1])]
    return out


def _place(net: Mininet_wifi) -> None:
    """Stations without a position: random in their bounds when a mobility model moves them."""
    from testbed.mnwifi.net import MnWifiError

    mob = net.mob
    for st in net.stations:
        if "position" in st.params:
            continue
        if mob is None:
            raise MnWifiError(f"addStation({st.name!r}): give position='x,y,z' (or set a mobility model)")
        st.params["mobile"] = True
        rng = derive_rng(mob.seed, "mnwifi-start", st.id)
        x0 = float(st.params.get("min_x", mob.min_x))
        x1 = float(st.params.get("max_x", mob.max_x if mob.max_x is not None else 100.0))
        y0 = float(st.params.get("min_y", mob.min_y))
        y1 = float(st.params.get("max_y", mob.max_y if mob.max_y is not None else 100.0))
        st.params["position"] = (rng.uniform(x0, x1), rng.uniform(y0, y1), 0.0)


def scenario_data(net: Mininet_wifi, movements: Path | None = None) -> dict[str, Any]:
    """The scenario as a dict (before validation); ``movements``: where to write trajectories."""
    from testbed.mnwifi.net import PROTOCOLS, MnWifiError

    _place(net)
    missing = [st.name for st in net.stations if st.name not in net.adhoc]
    if missing:
        raise MnWifiError(
            f"station(s) {', '.join(missing)} have no ad hoc interface: add "
            "net.addLink(sta, cls=adhoc, ssid=..., mode=..., channel=...) for each"
        )
    xs = [st.params["position"][0] for st in net.stations]
    ys = [st.params["position"][1] for st in net.stations]
    for st in net.stations:
        xs.append(float(st.params.get("max_x", 0)))
        ys.append(float(st.params.get("max_y", 0)))
    if net.mob is not None:
        xs.append(net.mob.max_x or 0.0)
        ys.append(net.mob.max_y or 0.0)
    for legs in net.scripted.values():
        xs += [p[0] for _, p in legs]
        ys += [p[1] for _, p in legs]
    if net.plot_bounds is not None:
        xs.append(net.plot_bounds[0])
        ys.append(net.plot_bounds[1])
    field = (max(max(xs), 1.0), max(max(ys), 1.0))
    overrides = net.propagation.radio_overrides()
    freq = _frequency(net)
    if freq is not None:
        overrides["frequency_hz"] = freq
    protocol = PROTOCOLS[net.proto]
    routing: dict[str, Any] = {"protocol": protocol}
    ids = [st.id for st in net.stations]
    if net.proto is None:
        routing["routes"] = {a: {b: b for b in ids if b != a} for a in ids}
    data: dict[str, Any] = {
        "name": re.sub(r"[^a-z0-9_-]+", "-", f"mnwifi-{net.name}".lower()).strip("-") or "mnwifi",
        "description": "built by testbed.mnwifi from a Mininet-WiFi script",
        "duration_s": motion.HORIZON_S,
        "seed": net.seed,
        "field": {"x_m": field[0], "y_m": field[1]},
        "stations": {
            "count": len(net.stations),
            "positions": [list(st.params["position"][:2]) for st in net.stations],
            "tx_power_dbm": {st.id: tx_power_of(net, st) for st in net.stations},
        },
        "radio": {"preset": "wmediumd", "overrides": overrides},
        "routing": routing,
    }
    trajs = trajectories(net, field)
    if trajs is not None:
        if movements is None:
            raise MnWifiError("internal: moving stations need a movements file")
        movements.write_text(bonnmotion.export_text(trajs))
        data["mobility"] = {"model": "bonnmotion", "file": str(movements)}
        del data["stations"]["positions"]
    if net.hosts or net.switches or net.gateways:
        data["wired"] = wired_data(net)
    return data


def wired_data(net: Mininet_wifi) -> dict[str, Any]:
    from testbed.mnwifi.net import MnWifiError

    subnet = ipaddress.ip_network(DEFAULT_SUBNET)
    given = [h for h in net.hosts if "ip" in h.params]
    if given:
        subnet = ipaddress.ip_interface(given[0].params["ip"]).network
    hosts = []
    for h in net.hosts:
        item: dict[str, Any] = {"name": h.name}
        if "ip" in h.params:
            iface = ipaddress.ip_interface(h.params["ip"])
            if iface.network != subnet:
                raise MnWifiError(
                    f"addHost({h.name!r}): ip={h.params['ip']!r} is not in {subnet} (the wired subnet, "
                    f"from {given[0].name}); all wired hosts share one subnet"
                )
            item["ip"] = str(iface.ip)
        hosts.append(item)
    return {
        "subnet": str(subnet),
        "switches": [s.name for s in net.switches],
        "hosts": hosts,
        "links": [list(link) for link in net.wired_links],
        "gateways": [{"station": sid, "switch": sw} for sid, sw in net.gateways],
    }


def build_scenario(net: Mininet_wifi) -> Scenario:
    """Validate the network as a scenario. Moving stations' trajectories go to a temporary
    BonnMotion file that ``release_movements`` moves into the run's results once it started."""
    fd, name = tempfile.mkstemp(prefix="mnwifi-", suffix=".movements")
    os.close(fd)
    movements = Path(name)
    try:
        sc = scenario_from_dict(scenario_data(net, movements), source=net.name)
    except BaseException:
        movements.unlink(missing_ok=True)
        raise
    if not isinstance(sc.mobility, BonnMotionMobility):
        movements.unlink(missing_ok=True)
    return sc


def release_movements(sc: Scenario, results_dir: Path | None) -> None:
    """Move the temporary movement file (if any) to ``results_dir/mnwifi.movements``."""
    if isinstance(sc.mobility, BonnMotionMobility) and Path(sc.mobility.file).name.startswith("mnwifi-"):
        src = Path(sc.mobility.file)
        if results_dir is not None and src.exists():
            shutil.copyfile(src, results_dir / "mnwifi.movements")
        src.unlink(missing_ok=True)
