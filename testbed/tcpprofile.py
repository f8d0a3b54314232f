"""The run's TCP profile on the kernel: write it into every station, read it back, check it
(issue 45, items 1 and 2; docs/orchestrator.md "TCP profile").

``topologies.tcp_profiles`` says what each knob is worth and which mechanism carries it; this
module turns an ``EffectiveTcp`` into

- per-namespace sysctls (written by the zygote when a station starts, ``station_sysctls``),
- metrics of the station's route over ``tun0`` (``ip route replace ... initcwnd/initrwnd/quickack``,
  once the router has made the device, ``apply_routes``),
- the BPF program's per-namespace parameters (``nodes.tcpctl.tcpprof``),

and, after the stations are up, reads each of them back from the kernel (sysctls from /proc/sys in
the station's namespace, the route with ``ip route show``), and from the first tcp_info sample of
each connection the options it negotiated (SACK, timestamps, window scaling, MSS, RTO floor). A
read-back that differs from the profile makes the run invalid with the difference as the reason.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from nodes.core.addr import NET_PREFIX_LEN
from nodes.tcpctl import nsutil
from nodes.tcpctl.observe import TCP_STATES
from nodes.tcpctl.tcpprof import ProfileParams
from topologies.tcp_profiles import KNOB_MECHANISMS, EffectiveTcp, Mechanism, TcpKnobs

#: TCP_ESTABLISHED (include/net/tcp_states.h)
TCP_ESTABLISHED: Final = 1
#: tcp_info ``tcpi_options`` bits (include/uapi/linux/tcp.h TCPI_OPT_*).
TCPI_OPT_TIMESTAMPS: Final = 1
TCPI_OPT_SACK: Final = 2
TCPI_OPT_WSCALE: Final = 4
#: Bytes of the timestamp option in every segment (RFC 7323 section 3: 10, padded to 12).
TIMESTAMP_OPTION_BYTES: Final = 12
#: Buffer minima and defaults written with a profile's ``rmem_max``/``wmem_max`` (Linux's own).
RMEM_MIN_DEFAULT: Final = "4096 131072"
WMEM_MIN_DEFAULT: Final = "4096 16384"
#: Sysctls every station has whatever the profile: the router forwards in user space, tun0
#: carries only the experiment's IPv4 traffic.
STATION_BASE_SYSCTLS: Final = {
    "net.ipv4.ip_forward": "0",
    "net.ipv6.conf.all.disable_ipv6": "1",
    "net.ipv6.conf.default.disable_ipv6": "1",
}


def _sysctl_value(knob: str, value: object) -> str:
    """The text a knob's sysctl takes."""
    if knob == "frto":
        return "2" if value else "0"  # 2: F-RTO for SACK and non-SACK connections (Linux default)
    if knob == "tlp":
        return "3" if value else "0"  # 3: TLP on (tcp_early_retrans default)
    if knob == "rto_min_ms":
        return str(int(str(value)) * 1000)
    if knob == "rmem_max":
        return f"{RMEM_MIN_DEFAULT} {value}"
    if knob == "wmem_max":
        return f"{WMEM_MIN_DEFAULT} {value}"
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def station_sysctls(eff: EffectiveTcp, cc_kernel_name: str | None = None) -> dict[str, str]:
    """Every sysctl a station of this profile gets (``net.*`` names): the profile's set knobs,
    the extra sysctls, and ``STATION_BASE_SYSCTLS``. ``cc_kernel_name`` replaces the congestion
    control's scenario name (``vegas`` -> ``vegas_<runid>``)."""
    out: dict[str, str] = {}
    for knob, value in asdict(eff.knobs).items():
        mech = KNOB_MECHANISMS[knob]
        if value is None or mech.mechanism is not Mechanism.SYSCTL:
            continue
        out[f"net.ipv4.{mech.target}"] = _sysctl_value(knob, value)
    if cc_kernel_name is not None:
        out["net.ipv4.tcp_congestion_control"] = cc_kernel_name
    out.update(STATION_BASE_SYSCTLS)
    out.update(eff.extra_sysctls)
    return out


def route_metrics(knobs: TcpKnobs) -> dict[str, int]:
    """The route metrics of the profile (``ip route`` names and values)."""
    out: dict[str, int] = {}
    for knob, value in asdict(knobs).items():
        mech = KNOB_MECHANISMS[knob]
        if value is not None and mech.mechanism is Mechanism.ROUTE:
            if isinstance(value, bool):
                if value:  # quickack 0 is the kernel's default: nothing to write
                    out[mech.target] = 1
            else:
                out[mech.target] = int(str(value))
    return out


def bpf_params(knobs: TcpKnobs) -> ProfileParams:
    """The BPF program's parameters of the profile (all 0: the program is not needed)."""
    return ProfileParams(
        rto_init_ms=knobs.rto_init_ms or 0,
        cwnd_clamp=knobs.window_pkts or 0,
        max_backoff=knobs.max_backoff or 0,
        rto_max_ms=knobs.rto_max_ms or 120_000,
    )


# ----------------------------------------------------------------------------------------------
# Writing and reading back


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One read-back that differs from the profile."""

    where: str  # "sta3", "sta1 10.0.0.1:40000->10.0.0.8:5201"
    what: str  # sysctl name, route metric, negotiated option
    want: str
    got: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what} is {self.got}, the profile wants {self.want}"


#: The route metrics a profile can set (``Mechanism.ROUTE`` targets): what the read-back parses.
ROUTE_METRICS: Final = tuple(m.target for m in KNOB_MECHANISMS.values() if m.mechanism is Mechanism.ROUTE)


def _route_cmd(sid_ip: str, metrics: Mapping[str, int]) -> list[str]:
    """The connected route the router's address made (``nodes/router/netdev.py``), with metrics."""
    net = ipaddress.ip_network(f"{sid_ip}/{NET_PREFIX_LEN}", strict=False)
    args = [str(x) for kv in metrics.items() for x in kv]
    return [
        "route", "replace", str(net), "dev", "tun0", "proto", "kernel",
        "scope", "link", "src", sid_ip, *args,
    ]  # fmt: skip


def apply_routes(netns: str, ip: str, metrics: Mapping[str, int]) -> dict[str, int]:
    """Put ``metrics`` on the station's route over tun0 and read them back (``ip -n``, one process)."""
    script = " ".join(_route_cmd(ip, metrics)) + "\nroute show dev tun0\n"
    res = subprocess.run(
        ["ip", "-n", netns, "-batch", "-"],
        input=script,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    if res.returncode != 0:
        raise OSError(f"route metrics in {netns}: {res.stderr.strip() or res.stdout.strip()}")
    return parse_route_metrics(res.stdout)


def parse_route_metrics(text: str, names: Iterable[str] = ROUTE_METRICS) -> dict[str, int]:
    """The metrics named in ``ip route show`` output (the first route line that has any)."""
    for line in text.splitlines():
        words = line.split()
        found = {
            w: int(words[i + 1]) for i, w in enumerate(words[:-1]) if w in names and words[i + 1].isdigit()
        }
        if found:
            return found
    return {}


def read_sysctls(netns: str, names: Iterable[str]) -> dict[str, str]:
    """The values of ``names`` (``net.*``) as the station's namespace has them (whitespace
    normalised; a missing one reads ``"<absent>"``)."""

    def body() -> dict[str, str]:
        out: dict[str, str] = {}
        for name in names:
            try:
                out[name] = " ".join(Path("/proc/sys", *name.split(".")).read_text().split())
            except OSError:
                out[name] = "<absent>"
        return out

    return nsutil.in_netns(netns, body)


def sysctl_mismatches(where: str, want: Mapping[str, str], got: Mapping[str, str]) -> list[Mismatch]:
    return [
        Mismatch(where, name, " ".join(value.split()), got.get(name, "<absent>"))
        for name, value in want.items()
        if " ".join(value.split()) != got.get(name)
    ]


def route_mismatches(where: str, want: Mapping[str, int], got: Mapping[str, int]) -> list[Mismatch]:
    return [
        Mismatch(where, f"route {name}", str(value), str(got.get(name, "<absent>")))
        for name, value in want.items()
        if got.get(name) != value
    ]


def flow_mismatches(
    where: str, sample: Mapping[str, Any], knobs: TcpKnobs, mss: int | None, cc_kernel_name: str | None
) -> list[Mismatch]:
    """What one connection negotiated (its first ESTABLISHED tcp_info sample, ``observe``'s
    ``options``, ``snd_mss``, ``rto_ms``, ``cc``) against the profile's set knobs and the flow's
    MSS."""
    out: list[Mismatch] = []
    opts = sample.get("options")
    if not isinstance(opts, int):
        return [Mismatch(where, "tcp_info options", "read", "not read")]
    for knob, bit, label in (
        ("sack", TCPI_OPT_SACK, "SACK"),
        ("timestamps", TCPI_OPT_TIMESTAMPS, "timestamps"),
        ("window_scaling", TCPI_OPT_WSCALE, "window scaling"),
    ):
        want = getattr(knobs, knob)
        got = bool(opts & bit)
        if want is not None and want != got:
            out.append(
                Mismatch(where, f"negotiated {label}", "on" if want else "off", "on" if got else "off")
            )
    snd_mss = sample.get("snd_mss")
    if mss is not None and isinstance(snd_mss, int):
        want_mss = mss - (TIMESTAMP_OPTION_BYTES if opts & TCPI_OPT_TIMESTAMPS else 0)
        if snd_mss != want_mss:
            out.append(Mismatch(where, "snd_mss", str(want_mss), str(snd_mss)))
    rto = sample.get("rto_ms")
    if knobs.rto_min_ms is not None and isinstance(rto, int | float) and rto < knobs.rto_min_ms:
        out.append(Mismatch(where, "rto", f">= {knobs.rto_min_ms} ms", f"{rto:g} ms"))
    cc = sample.get("cc")
    if cc_kernel_name is not None and isinstance(cc, str) and cc != cc_kernel_name:
        out.append(Mismatch(where, "congestion control", cc_kernel_name, cc))
    return out


#: The fields of a tcp_info sample kept as a flow's ``negotiated`` record.
NEGOTIATED_FIELDS: Final = (
    "options",
    "snd_wscale",
    "rcv_wscale",
    "snd_mss",
    "rcv_mss",
    "rto_ms",
    "cwnd",
    "cc",
)


def first_established(samples: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Per connection, its first sample in state ESTABLISHED (sampling order)."""
    out: dict[str, Mapping[str, Any]] = {}
    for s in samples:
        conn = s.get("conn")
        if isinstance(conn, str) and conn not in out and s.get("state") == TCP_STATES[TCP_ESTABLISHED]:
            out[conn] = s
    return out
