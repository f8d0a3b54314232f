"""The station router's configuration: one typed value shared by the orchestrator, which writes it
(``testbed.run.router_config``), and the router, which reads it (docs/interfaces.md section 4,
docs/router.md "Configuration").

``RouterConfig.to_json()`` is what travels (the zygote's stdin, ``routers/sta<N>.config.json``,
``python -m nodes.router --config``); ``RouterConfig.from_json()`` reads it back and rejects a
missing, unknown or ill-typed key with a ``ConfigError`` naming the field
(``router config: ifq_len: expected an int, got '50'``).

The protocol's ``params`` and an extension's ``params`` stay mappings here: each core and each
extension reads them into its own frozen parameter dataclass and names a wrong one itself
(``protocol.params: ...``). Importing this module is cheap (the zygote imports it).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

from nodes.core.addr import MAX_STATIONS
from nodes.core.icmp import IcmpParams
from nodes.core.ifq import DEFAULT_IFQ_LEN
from nodes.core.ipip import WiredRoute
from nodes.formats.radiotap import DEFAULT_FREQ_MHZ, DEFAULT_RATE_500KBPS

MirrorMode = Literal["always", "auto", "off"]
TraceMode = Literal["auto", "on", "off"]
FastpathMode = Literal["auto", "off"]
MIRROR_MODES: tuple[MirrorMode, ...] = ("always", "auto", "off")
"""``mirror``: write mirror frames always, only while something captures, or never."""
TRACE_MODES: tuple[TraceMode, ...] = ("auto", "on", "off")
"""``trace``: the per-packet trace ``sta<N>.trace.bin`` (nodes/core/trace.py). ``auto``
(default): on, unless the native fast path runs (static routes): the packets it forwards never
reach Python, so the trace steps aside for it; ``on``: always (the fast path steps aside)."""
FASTPATH_MODES: tuple[FastpathMode, ...] = ("auto", "off")
"""``fastpath``: the native forwarding fast path (nodes/router/fastpath.py) where it can run, or not."""
WELCOME_TIMEOUT_S = 30.0
COUNTERS_INTERVAL_S = 1.0
LAG_PROBE_INTERVAL_S = 0.2
"""Mean period of the loop-lag probe: a no-op timer whose lateness samples the event loop's lag
(``loop_lag`` in the counters) even when the protocol sets no timers (static routing with the
fast path). It runs only while the station handles traffic: it stops after a period with no
packet, and the counters timer (every second anyway) restarts it, so an idle station pays nothing
(a fixed 5 Hz probe cost 3.4 % of a core for 50 idle stations). Each period is drawn uniformly
from 0.5-1.5 times this (a fixed period can lock onto a periodic stall and never see it); a stall
of D ms is sampled with probability ~D/200 ms. ``lag_probe_interval_s: 0`` turns it off."""
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

WHERE = "router config"
T = TypeVar("T")


class ConfigError(ValueError):
    """A router config that cannot be used; the message names the field and the reason."""


# ------------------------------------------------------------------ parts


@dataclass(frozen=True, slots=True)
class ProtocolConfig:
    """``protocol``: the core's name, its routing profile (DSR and AODV: ``ns2``, ``rfc`` or
    ``legacy``, nodes/protocols/profiles.py), its explicit parameters on top of the profile (read
    by the core) and, for ``static``, the routing table ``destination -> next hop``."""

    name: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    routes: Mapping[int, int] | None = None
    profile: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "params": dict(self.params)}
        if self.profile is not None:
            out["profile"] = self.profile
        if self.routes is not None:
            out["routes"] = {str(d): nh for d, nh in sorted(self.routes.items())}
        return out


@dataclass(frozen=True, slots=True)
class ExtensionConfig:
    """One entry of ``extensions``: the extension's name and its parameters (read by it)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}


@dataclass(frozen=True, slots=True)
class MirrorConfig:
    """``mirror``: the radiotap mirror TAP (docs/router.md, "The mirror interface")."""

    mode: MirrorMode = "auto"
    freq_mhz: int = DEFAULT_FREQ_MHZ
    rate_500kbps: int = DEFAULT_RATE_500KBPS

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "freq_mhz": self.freq_mhz, "rate_500kbps": self.rate_500kbps}


@dataclass(frozen=True, slots=True)
class TcpctlConfig:
    """``tcpctl``: the endpoint agent in the router (docs/tcpctl.md); ``bpf`` false runs it without
    the kernel side, ``control_socket`` serves the station's control socket."""

    bpf: bool = True
    control_socket: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"enabled": True, "bpf": self.bpf}
        if self.control_socket is not None:
            out["control_socket"] = self.control_socket
        return out


# ------------------------------------------------------------------ the config


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """One station router's configuration (docs/interfaces.md section 4)."""

    station_id: int
    medium_socket: str
    protocol: ProtocolConfig
    out_dir: str
    run_id: str | None = None
    n_stations: int = 0
    seed: int = 1
    extensions: tuple[ExtensionConfig, ...] = ()
    ifq_len: int = DEFAULT_IFQ_LEN
    hop_loss: float = 0.0
    """Per-hop loss above the MAC, a probability (nodes.core.hoploss)."""
    promiscuous: bool = False
    mirror: MirrorConfig = MirrorConfig()
    trace: TraceMode = "auto"
    fastpath: FastpathMode = "auto"
    tcpctl: TcpctlConfig | None = None
    wired: WiredRoute | None = None
    icmp: IcmpParams = IcmpParams()
    """``icmp``: Destination Unreachable for packets the core drops (nodes/core/icmp.py)."""
    log_level: str | None = None
    welcome_timeout_s: float = WELCOME_TIMEOUT_S
    counters_interval_s: float = COUNTERS_INTERVAL_S
    lag_probe_interval_s: float = LAG_PROBE_INTERVAL_S

    def __post_init__(self) -> None:
        if not 1 <= self.station_id <= MAX_STATIONS:
            raise ConfigError(f"{WHERE}: station_id: must be in 1..{MAX_STATIONS}, got {self.station_id}")
        if self.ifq_len < 1:
            raise ConfigError(f"{WHERE}: ifq_len: must be at least 1, got {self.ifq_len}")
        if not 0.0 <= self.hop_loss <= 1.0:
            raise ConfigError(f"{WHERE}: hop_loss: must be a probability in [0, 1], got {self.hop_loss}")
        for name in ("welcome_timeout_s", "counters_interval_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"{WHERE}: {name}: must be a positive number of seconds, got {v}")
        if not (math.isfinite(self.lag_probe_interval_s) and self.lag_probe_interval_s >= 0):
            raise ConfigError(
                f"{WHERE}: lag_probe_interval_s: must be >= 0 (0: off), got {self.lag_probe_interval_s}"
            )
        if self.log_level is not None and self.log_level.upper() not in LOG_LEVELS:
            raise ConfigError(f"{WHERE}: log_level: must be one of {LOG_LEVELS}, got {self.log_level!r}")

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        """The JSON object the router reads back with ``from_json`` (defaults are written too)."""
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "station_id": self.station_id,
            "n_stations": self.n_stations,
            "seed": self.seed,
            "medium_socket": self.medium_socket,
            "protocol": self.protocol.to_json(),
            "extensions": [e.to_json() for e in self.extensions],
            "ifq_len": self.ifq_len,
            "hop_loss": self.hop_loss,
            "promiscuous": self.promiscuous,
            "mirror": self.mirror.to_json(),
            "trace": self.trace,
            "fastpath": self.fastpath,
            "out_dir": self.out_dir,
            "welcome_timeout_s": self.welcome_timeout_s,
            "counters_interval_s": self.counters_interval_s,
            "lag_probe_interval_s": self.lag_probe_interval_s,
        }
        if self.tcpctl is not None:
            out["tcpctl"] = self.tcpctl.to_json()
        if self.wired is not None:
            out["wired"] = {"subnet": str(self.wired.subnet), "gateway": self.wired.gateway}
        if self.icmp != IcmpParams():
            i = self.icmp
            out["icmp"] = {
                "unreachable": i.unreachable,
                "ratelimit_ms": i.ratelimit_ms,
                "ratelimit_burst": i.ratelimit_burst,
                "ttl": i.ttl,
                "reasons": list(i.reasons),
            }
        if self.log_level is not None:
            out["log_level"] = self.log_level
        return out

    @classmethod
    def from_json(cls, data: object) -> RouterConfig:
        """Read and check a config object; ``ConfigError`` names the first bad field."""
        d = _mapping(data, "")
        _known(d, _KEYS, "")
        missing = [k for k in ("station_id", "medium_socket", "protocol", "out_dir") if k not in d]
        if missing:
            raise ConfigError(f"{WHERE}: missing key(s) {missing}")
        ext = d.get("extensions")
        return cls(
            station_id=_int(d["station_id"], "station_id"),
            medium_socket=_str(d["medium_socket"], "medium_socket"),
            protocol=_protocol(d["protocol"]),
            out_dir=_str(d["out_dir"], "out_dir"),
            run_id=None if d.get("run_id") is None else _str(d["run_id"], "run_id"),
            n_stations=_int(d.get("n_stations", 0), "n_stations"),
            seed=_int(d.get("seed", 1), "seed"),
            extensions=() if ext is None else _extensions(ext),
            ifq_len=_int(d.get("ifq_len", DEFAULT_IFQ_LEN), "ifq_len"),
            hop_loss=_float(d.get("hop_loss", 0.0), "hop_loss"),
            promiscuous=_bool(d.get("promiscuous", False), "promiscuous"),
            mirror=_mirror(d.get("mirror", "auto")),
            trace=_trace(d.get("trace", "auto")),
            fastpath=_fastpath(d.get("fastpath")),
            tcpctl=_tcpctl(d.get("tcpctl")),
            wired=None if d.get("wired") is None else _wired(d["wired"]),
            icmp=_icmp(d.get("icmp")),
            log_level=None if d.get("log_level") is None else _str(d["log_level"], "log_level"),
            welcome_timeout_s=_float(d.get("welcome_timeout_s", WELCOME_TIMEOUT_S), "welcome_timeout_s"),
            counters_interval_s=_float(
                d.get("counters_interval_s", COUNTERS_INTERVAL_S), "counters_interval_s"
            ),
            lag_probe_interval_s=_float(
                d.get("lag_probe_interval_s", LAG_PROBE_INTERVAL_S), "lag_probe_interval_s"
            ),
        )


_KEYS = frozenset(RouterConfig.__dataclass_fields__)


# ------------------------------------------------------------------ readers (each names its field)


def _err(path: str, what: str, value: object) -> ConfigError:
    return ConfigError(f"{WHERE}: {path}: {what}, got {value!r}")


def _mapping(v: object, path: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
        raise ConfigError(f"{WHERE}: {path or 'the config'}: expected an object with string keys, got {v!r}")
    return cast(Mapping[str, Any], v)


def _known(d: Mapping[str, Any], keys: frozenset[str], path: str) -> None:
    unknown = sorted(set(d) - keys)
    if unknown:
        where = f"{path}: " if path else ""
        raise ConfigError(f"{WHERE}: {where}unknown key(s) {unknown}; known: {sorted(keys)}")


def _int(v: object, path: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _err(path, "expected an int", v)
    return v


def _float(v: object, path: str) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _err(path, "expected a number", v)
    return float(v)


def _str(v: object, path: str) -> str:
    if not isinstance(v, str):
        raise _err(path, "expected a string", v)
    return v


def _bool(v: object, path: str) -> bool:
    if not isinstance(v, bool):
        raise _err(path, "expected true or false", v)
    return v


def _choice(v: object, choices: tuple[T, ...], path: str) -> T:
    for c in choices:
        if v == c and isinstance(v, str):
            return c
    raise _err(path, f"expected one of {list(choices)} or a boolean", v)


def _protocol(v: object) -> ProtocolConfig:
    d = _mapping(v, "protocol")
    _known(d, frozenset({"name", "params", "routes", "profile"}), "protocol")
    params = _mapping(d.get("params") or {}, "protocol.params")
    routes: dict[int, int] | None = None
    if d.get("routes") is not None:
        raw = _mapping(d["routes"], "protocol.routes")
        routes = {}
        for k, nh in raw.items():
            try:
                dst = int(k)
            except ValueError:
                raise _err(f"protocol.routes[{k!r}]", "destination must be a station id", k) from None
            routes[dst] = _int(nh, f"protocol.routes[{k!r}]")
    profile = None if d.get("profile") is None else _str(d["profile"], "protocol.profile")
    return ProtocolConfig(
        _str(d.get("name"), "protocol.name"), MappingProxyType(dict(params)), routes, profile
    )


def _extensions(v: object) -> tuple[ExtensionConfig, ...]:
    if not isinstance(v, (list, tuple)):
        raise _err("extensions", "expected a list", v)
    out = []
    for i, spec in enumerate(v):
        path = f"extensions[{i}]"
        if isinstance(spec, str):
            out.append(ExtensionConfig(spec))
            continue
        d = _mapping(spec, path)
        _known(d, frozenset({"name", "params"}), path)
        params = _mapping(d.get("params") or {}, f"{path}.params")
        out.append(ExtensionConfig(_str(d.get("name"), f"{path}.name"), MappingProxyType(dict(params))))
    return tuple(out)


def _mirror(v: object) -> MirrorConfig:
    """``"always"`` | ``"auto"`` | ``"off"``; ``true``/``false`` mean ``always``/``off``; or an
    object ``{"mode": ..., "enabled": bool, "freq_mhz": 2412, "rate_500kbps": 4}``."""
    if isinstance(v, bool):
        return MirrorConfig("always" if v else "off")
    if isinstance(v, str):
        return MirrorConfig(_choice(v, MIRROR_MODES, "mirror"))
    d = _mapping(v, "mirror")
    _known(d, frozenset({"mode", "enabled", "freq_mhz", "rate_500kbps"}), "mirror")
    mode = _choice(d.get("mode", "auto"), MIRROR_MODES, "mirror.mode")
    if not _bool(d.get("enabled", True), "mirror.enabled"):
        mode = "off"
    return MirrorConfig(
        mode,
        _int(d.get("freq_mhz", DEFAULT_FREQ_MHZ), "mirror.freq_mhz"),
        _int(d.get("rate_500kbps", DEFAULT_RATE_500KBPS), "mirror.rate_500kbps"),
    )


def _trace(v: object) -> TraceMode:
    if isinstance(v, bool):
        return "on" if v else "off"
    return _choice(v, TRACE_MODES, "trace")


def _fastpath(v: object) -> FastpathMode:
    if v is None:
        return "auto"
    if isinstance(v, bool):
        return "auto" if v else "off"
    return _choice(v, FASTPATH_MODES, "fastpath")


def _tcpctl(v: object) -> TcpctlConfig | None:
    """``{"enabled": true, "bpf": true, "control_socket": PATH}``; absent or not enabled: None."""
    if v is None:
        return None
    d = _mapping(v, "tcpctl")
    _known(d, frozenset({"enabled", "bpf", "control_socket"}), "tcpctl")
    if not _bool(d.get("enabled", False), "tcpctl.enabled"):
        return None
    sock = d.get("control_socket")
    return TcpctlConfig(
        _bool(d.get("bpf", True), "tcpctl.bpf"), None if sock is None else _str(sock, "tcpctl.control_socket")
    )


def _wired(v: object) -> WiredRoute:
    """``{"subnet": "10.1.0.0/24", "gateway": 2}`` (nodes/core/ipip.py)."""
    d = _mapping(v, "wired")
    _known(d, frozenset({"subnet", "gateway"}), "wired")
    gw = _int(d.get("gateway"), "wired.gateway")
    if not 1 <= gw <= MAX_STATIONS:
        raise _err("wired.gateway", f"must be a station id in 1..{MAX_STATIONS}", gw)
    try:
        subnet = ipaddress.IPv4Network(_str(d.get("subnet"), "wired.subnet"))
    except ValueError as exc:
        raise _err("wired.subnet", f"not an IPv4 network ({exc})", d.get("subnet")) from None
    return WiredRoute(subnet, gw)


def _icmp(v: object) -> IcmpParams:
    """``{"unreachable": true, "ratelimit_ms": 1000, "ratelimit_burst": 6, "ttl": 64, "reasons":
    ["link_failure", "no_route"]}`` (nodes/core/icmp.py); absent: the defaults (off)."""
    if v is None:
        return IcmpParams()
    d = _mapping(v, "icmp")
    _known(d, frozenset({"unreachable", "ratelimit_ms", "ratelimit_burst", "ttl", "reasons"}), "icmp")
    dflt = IcmpParams()
    reasons = d.get("reasons", list(dflt.reasons))
    if not isinstance(reasons, (list, tuple)) or not all(isinstance(r, str) for r in reasons):
        raise _err("icmp.reasons", "expected a list of drop reasons", reasons)
    try:
        return IcmpParams(
            unreachable=_bool(d.get("unreachable", dflt.unreachable), "icmp.unreachable"),
            ratelimit_ms=_int(d.get("ratelimit_ms", dflt.ratelimit_ms), "icmp.ratelimit_ms"),
            ratelimit_burst=_int(d.get("ratelimit_burst", dflt.ratelimit_burst), "icmp.ratelimit_burst"),
            ttl=_int(d.get("ttl", dflt.ttl), "icmp.ttl"),
            reasons=tuple(reasons),
        )
    except ValueError as exc:
        raise ConfigError(f"{WHERE}: {exc}") from None
