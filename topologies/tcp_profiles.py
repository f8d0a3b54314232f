"""Named TCP profiles: the TCP each paper ran, and today's Linux, as data (issue 45, item 1).

A scenario picks one with ``tcp: {profile: NAME}``; an explicit ``tcp`` field overrides the
profile's value (``resolve``), and ``EffectiveTcp.sources`` says, knob by knob, which won. A knob
that is ``None`` in the profile and absent from the scenario is left at the value a fresh network
namespace has on this kernel (nothing is written).

- ``legacy``: what every run used before profiles existed (the old ``tcp`` defaults: Reno, SACK
  and timestamps on, ECN off, 4 MiB socket buffers, no saved metrics). A scenario without
  ``tcp.profile`` runs it, so the rows of the earlier experiments keep their meaning.
- ``linux``: a fresh namespace's defaults; only the congestion control is written (CUBIC, the
  kernel's own default, since the host's default here is BBR).
- ``ns2-2.1b8a`` (Klemm 2004, Yu 2004), ``ns2-2.29`` (Ghanem 2008) and ``ns2-2.33`` (Cohen &
  Levin): ns-2's ``Agent/TCP`` defaults of that release with a ``TCPSink`` that ACKs every packet
  (read in the ns-2 CVS history: 2.1b8 aa55c3b9, 2.29 6084f99c, 2.32 484c511c, 2.33 1581b34d).
- ``freebsd-liu2001``: the FreeBSD TCP of Liu & Singh 2001 as the paper describes it.

Every value cites its source in ``PROFILES[...].sources``; docs/fidelity.md has the per-knob table
and the ns-2 behaviours Linux cannot match. The kernel side (which sysctl, route metric or BPF
program carries a knob) is ``KNOB_MECHANISMS``; testbed/tcpprofile.py writes and reads them back.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Final, Literal


@dataclass(frozen=True, slots=True)
class TcpKnobs:
    """Every TCP setting a profile or a scenario can make (``None``: leave the kernel's value)."""

    #: congestion control of every station and the default of each flow's ``cc``
    cc: str | None = None
    #: default MSS of the flows, bytes of payload per segment (a flow's ``mss`` overrides it)
    mss: int | None = None
    sack: bool | None = None
    dsack: bool | None = None
    #: F-RTO (RFC 5682), ``tcp_frto`` 2 / 0
    frto: bool | None = None
    #: tail loss probe, ``tcp_early_retrans`` 3 / 0 (Linux's TLP needs SACK)
    tlp: bool | None = None
    timestamps: bool | None = None
    window_scaling: bool | None = None
    ecn: bool | None = None
    #: the duplicate-ACK threshold a connection starts with (``tcp_reordering``)
    reordering: int | None = None
    #: the largest it may grow to when Linux sees reordering (``tcp_max_reordering``)
    max_reordering: int | None = None
    #: compressed SACK: at most this many ACKs held back (``tcp_comp_sack_nr``; 0 = none)
    comp_sack_nr: int | None = None
    #: RTO floor, ms (``tcp_rto_min_us``; Linux adds it to srtt through rttvar, see fidelity.md)
    rto_min_ms: int | None = None
    #: RTO ceiling, ms (``tcp_rto_max_ms``, 1000..120000 on Linux 6.15+)
    rto_max_ms: int | None = None
    #: RTO before the first RTT sample, ms (BPF ``BPF_SOCK_OPS_TIMEOUT_INIT``: the SYN's timer)
    rto_init_ms: int | None = None
    #: largest backoff factor: after this many doublings the RTO stops growing (BPF at each
    #: expiration; ns-2's rtt_backoff() and BSD's tcp_backoff[] stop at 64)
    max_backoff: int | None = None
    #: initial congestion window, segments (route ``initcwnd``)
    init_cwnd: int | None = None
    #: initial receive window advertised, segments (route ``initrwnd``)
    init_rwnd: int | None = None
    #: ACK every segment at once (route ``quickack 1``): ns-2's TCPSink has no delayed ACK
    quickack: bool | None = None
    #: cap on the congestion window, segments (BPF ``TCP_BPF_SNDCWND_CLAMP`` at connection set-up)
    window_pkts: int | None = None
    #: RTO expirations before an established connection gives up (``tcp_retries2``)
    retries2: int | None = None
    #: SYN retransmissions before connect() gives up (``tcp_syn_retries``)
    syn_retries: int | None = None
    #: SYN retransmissions at a fixed RTO before backing off (``tcp_syn_linear_timeouts``)
    syn_linear_timeouts: int | None = None
    #: restart from the initial window after an idle RTO (``tcp_slow_start_after_idle``)
    slow_start_after_idle: bool | None = None
    #: largest socket buffers, bytes: the maxima of ``tcp_rmem`` / ``tcp_wmem``
    rmem_max: int | None = None
    wmem_max: int | None = None
    #: do not cache ssthresh/RTT per destination between connections (``tcp_no_metrics_save``)
    no_metrics_save: bool | None = None


#: The knob names, in declaration order (the scenario's ``tcp`` fields besides profile/extra_sysctls).
KNOBS: Final = tuple(f.name for f in fields(TcpKnobs))


class Mechanism(enum.Enum):
    """How a knob reaches the kernel of a station."""

    SYSCTL = "sysctl"  # a per-namespace sysctl, written when the station starts
    ROUTE = "route"  # a metric of the station's route over tun0
    BPF = "bpf"  # the run's sock_ops program (nodes/tcpctl/bpf/tcpprof.bpf.c)
    FLOW = "flow"  # a per-connection option set by the traffic generator (iperf3 -M)


@dataclass(frozen=True, slots=True)
class KnobMechanism:
    mechanism: Mechanism
    #: sysctl name (under net.ipv4), route metric name or BPF field; "" for FLOW
    target: str


KNOB_MECHANISMS: Final[Mapping[str, KnobMechanism]] = {
    "cc": KnobMechanism(Mechanism.SYSCTL, "tcp_congestion_control"),
    "mss": KnobMechanism(Mechanism.FLOW, ""),
    "sack": KnobMechanism(Mechanism.SYSCTL, "tcp_sack"),
    "dsack": KnobMechanism(Mechanism.SYSCTL, "tcp_dsack"),
    "frto": KnobMechanism(Mechanism.SYSCTL, "tcp_frto"),
    "tlp": KnobMechanism(Mechanism.SYSCTL, "tcp_early_retrans"),
    "timestamps": KnobMechanism(Mechanism.SYSCTL, "tcp_timestamps"),
    "window_scaling": KnobMechanism(Mechanism.SYSCTL, "tcp_window_scaling"),
    "ecn": KnobMechanism(Mechanism.SYSCTL, "tcp_ecn"),
    "reordering": KnobMechanism(Mechanism.SYSCTL, "tcp_reordering"),
    "max_reordering": KnobMechanism(Mechanism.SYSCTL, "tcp_max_reordering"),
    "comp_sack_nr": KnobMechanism(Mechanism.SYSCTL, "tcp_comp_sack_nr"),
    "rto_min_ms": KnobMechanism(Mechanism.SYSCTL, "tcp_rto_min_us"),
    "rto_max_ms": KnobMechanism(Mechanism.SYSCTL, "tcp_rto_max_ms"),
    "rto_init_ms": KnobMechanism(Mechanism.BPF, "rto_init_ms"),
    "max_backoff": KnobMechanism(Mechanism.BPF, "max_backoff"),
    "init_cwnd": KnobMechanism(Mechanism.ROUTE, "initcwnd"),
    "init_rwnd": KnobMechanism(Mechanism.ROUTE, "initrwnd"),
    "quickack": KnobMechanism(Mechanism.ROUTE, "quickack"),
    "window_pkts": KnobMechanism(Mechanism.BPF, "cwnd_clamp"),
    "retries2": KnobMechanism(Mechanism.SYSCTL, "tcp_retries2"),
    "syn_retries": KnobMechanism(Mechanism.SYSCTL, "tcp_syn_retries"),
    "syn_linear_timeouts": KnobMechanism(Mechanism.SYSCTL, "tcp_syn_linear_timeouts"),
    "slow_start_after_idle": KnobMechanism(Mechanism.SYSCTL, "tcp_slow_start_after_idle"),
    "rmem_max": KnobMechanism(Mechanism.SYSCTL, "tcp_rmem"),
    "wmem_max": KnobMechanism(Mechanism.SYSCTL, "tcp_wmem"),
    "no_metrics_save": KnobMechanism(Mechanism.SYSCTL, "tcp_no_metrics_save"),
}

#: ``net.ipv4.<sysctl>`` -> the knob that owns it (an ``extra_sysctls`` entry may not name one).
SYSCTL_KNOBS: Final[Mapping[str, str]] = {
    f"net.ipv4.{m.target}": k for k, m in KNOB_MECHANISMS.items() if m.mechanism is Mechanism.SYSCTL
}

#: Linux's bounds on ``tcp_rto_max_ms`` (net/ipv4/sysctl_net_ipv4.c: tcp_rto_max_min .. TCP_RTO_MAX).
LINUX_RTO_MAX_RANGE_MS: Final = (1000, 120_000)
#: Linux's bound on ``tcp_syn_retries`` (MAX_TCP_SYNCNT).
LINUX_MAX_SYN_RETRIES: Final = 127
#: MSS of a flow when neither the profile nor the flow names one (the earlier scenarios' value).
DEFAULT_MSS: Final = 1460


class KnobSource(enum.Enum):
    """Who set an effective value."""

    PROFILE = "profile"
    SCENARIO = "scenario"  # an explicit ``tcp`` field, overriding the profile
    KERNEL = "kernel"  # neither: the fresh namespace's value, not written


@dataclass(frozen=True, slots=True)
class TcpProfile:
    name: str
    description: str
    knobs: TcpKnobs
    #: knob -> where its value comes from (file and line of ns-default.tcl, the paper, ...)
    sources: Mapping[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# The profiles. ns-2 values: tcl/lib/ns-default.tcl and tcp/tcp.cc of the release (docs/fidelity.md
# "TCP profiles" quotes the lines).

_NS2_COMMON = TcpKnobs(
    cc="reno",
    mss=1000,
    sack=False,
    dsack=False,
    frto=False,
    tlp=False,
    timestamps=False,
    window_scaling=False,
    ecn=False,
    reordering=3,
    max_reordering=3,
    comp_sack_nr=0,
    init_cwnd=2,
    init_rwnd=20,
    quickack=True,
    window_pkts=20,
    rto_max_ms=LINUX_RTO_MAX_RANGE_MS[1],
    rto_init_ms=6000,
    max_backoff=64,
    retries2=100,
    syn_retries=LINUX_MAX_SYN_RETRIES,
    syn_linear_timeouts=0,
    no_metrics_save=True,
)

_NS2_SOURCES: Final[Mapping[str, str]] = {
    "cc": "Agent/TCP/Newreno or Agent/TCP/Reno; Linux's reno does NewReno partial-ACK recovery "
    "(tcp_input.c); Klemm's Vegas and Cohen's SACK are set by their scenarios",
    "mss": "ns-default.tcl: Agent/TCP set packetSize_ 1000 (payload; tcpip_base_hdr_size_ 40 added)",
    "sack": "Agent/TCP and Agent/TCP/Newreno carry no SACK (Agent/TCP/Sack1 is a separate agent)",
    "dsack": "no D-SACK in ns-2's one-way TCP agents",
    "frto": "no F-RTO in Agent/TCP/Newreno (tcp-newreno.cc)",
    "tlp": "no tail loss probe in ns-2",
    "timestamps": "ns-default.tcl: Agent/TCP set timestamps_ false",
    "window_scaling": "no window scaling: ns-2 counts windows in packets (window_)",
    "ecn": "ns-default.tcl: Agent/TCP set ecn_ 0",
    "reordering": "ns-default.tcl: Agent/TCP set numdupacks_ 3",
    "max_reordering": "numdupacks_ is fixed: ns-2 never adapts the dupACK threshold",
    "comp_sack_nr": "no SACK, no compressed SACK",
    "init_cwnd": "ns-default.tcl: Agent/TCP set windowInit_ 2; syn_ and delay_growth_ true: the "
    "first packet is a 40-byte 'SYN' sent at cwnd 1, then cwnd = initial_window() (tcp.cc "
    "set_initial_window(), recv()); Linux's handshake takes that round trip",
    "init_rwnd": "the receiver's window_ (20 packets) from the start",
    "quickack": "Agent/TCPSink ACKs every packet (tcp-sink.cc TcpSink::recv; DelAck only with "
    "Agent/TCPSink/DelAck)",
    "window_pkts": "ns-default.tcl: Agent/TCP set window_ 20 (wnd_ caps cwnd_ in TcpAgent::window())",
    "rto_max_ms": "ns-default.tcl: Agent/TCP set maxrto_ 100000 (seconds: no cap in practice); "
    "Linux's largest tcp_rto_max_ms",
    "rto_init_ms": "ns-default.tcl: Agent/TCP set rtxcur_init_ 6.0 (3 s only from 2006-01-23, "
    "after 2.29); Yu 2004 s3.1 'the default value 6 s for RTO'",
    "max_backoff": "tcp.cc rtt_backoff(): if (t_backoff_ < 64) t_backoff_ <<= 1",
    "retries2": "ns-2 never gives up (tcp.cc timeout() has no retransmission limit); 100 RTOs at "
    "the ceiling outlast every run",
    "syn_retries": "ns-2 has no handshake; Linux's largest SYN retry count (MAX_TCP_SYNCNT)",
    "syn_linear_timeouts": "exponential backoff from the first expiration, as ns-2's rtt_backoff()",
    "no_metrics_save": "every ns-2 run starts from the defaults",
}

NS2_2_1B8A: Final = TcpProfile(
    "ns2-2.1b8a",
    "ns-2.1b8a's Agent/TCP (Klemm 2004, Yu 2004): no SACK, timestamps or F-RTO; 1000-byte "
    "segments, window 20, initial window 2, RTO floor 1 s, initial RTO 6 s, backoff up to 64x, "
    "never gives up, sink ACKs every packet",
    replace(_NS2_COMMON, rto_min_ms=1000),
    {
        **_NS2_SOURCES,
        "rto_min_ms": "ns-default.tcl (2.1b8, 2001-05-14): Agent/TCP set minrto_ 1",
    },
)

NS2_2_29: Final = TcpProfile(
    "ns2-2.29",
    "ns-2.29's Agent/TCP (Ghanem 2008): as 2.1b8a but an RTO floor of 0.2 s "
    "(applied before the backoff, rfc2988_) and a 10 ms timer tick",
    replace(_NS2_COMMON, rto_min_ms=200),
    {
        **_NS2_SOURCES,
        "rto_min_ms": "ns-default.tcl (2.29; default changed 2004-10-14): Agent/TCP set minrto_ 0.2",
    },
)

NS2_2_33: Final = TcpProfile(
    "ns2-2.33",
    "ns-2.33's Agent/TCP (Cohen & Levin, whose newest references are of 2007: ns-2.32 of 2007-09 "
    "and 2.33 of 2008-03 have the same TCP defaults): as 2.29 but an initial RTO of 3 s and an RTO "
    "ceiling of 60 s, with no 64x cap on the backoff below it",
    replace(_NS2_COMMON, rto_min_ms=200, rto_max_ms=60_000, rto_init_ms=3000, max_backoff=None),
    {
        **_NS2_SOURCES,
        "rto_min_ms": "ns-default.tcl (2.33): Agent/TCP set minrto_ 0.2",
        "rto_max_ms": "ns-default.tcl (2.33): Agent/TCP set maxrto_ 60 ; # default changed on 2007/03/28",
        "rto_init_ms": "ns-default.tcl (2.33): Agent/TCP set rtxcur_init_ 3.0 ; # Default changed on 2006/01/21",
        "max_backoff": "tcp.cc (2.32, 2.33) rtt_backoff(): if (t_backoff_ < 64 || rfc2988_) t_backoff_ <<= 1 "
        "(rfc2988_ true: no cap below maxrto_)",
    },
)

FREEBSD_LIU2001: Final = TcpProfile(
    "freebsd-liu2001",
    "FreeBSD's TCP of Liu & Singh 2001's testbed as the paper describes it: NewReno without SACK "
    "('we chose not to use SACKs'), RFC 1323 timestamps and window scaling on, delayed ACKs, "
    "RTO floor 1 s, ceiling 64 s, initial RTO 3 s, initial window 1 segment, gives up after 12 RTOs",
    TcpKnobs(
        cc="reno",
        sack=False,
        dsack=False,
        frto=False,
        tlp=False,
        timestamps=True,
        window_scaling=True,
        ecn=False,
        reordering=3,
        max_reordering=3,
        comp_sack_nr=0,
        rto_min_ms=1000,
        rto_max_ms=64_000,
        rto_init_ms=3000,
        max_backoff=64,
        init_cwnd=1,
        retries2=12,
        syn_linear_timeouts=0,
        no_metrics_save=True,
    ),
    {
        "cc": "FreeBSD's tcp_input.c: Reno with NewReno partial ACKs (tcp_do_newreno)",
        "sack": "Liu & Singh 2001 s.III-C: 'we chose not to use SACKs' (FreeBSD had no SACK before 5.3)",
        "dsack": "no SACK",
        "frto": "no F-RTO in FreeBSD of 2001",
        "tlp": "no tail loss probe in FreeBSD of 2001",
        "timestamps": "netinet/tcp_subr.c: tcp_do_rfc1323 = 1 (not verified in a 4.x tree)",
        "window_scaling": "netinet/tcp_subr.c: tcp_do_rfc1323 = 1 (not verified in a 4.x tree)",
        "ecn": "off in the paper's TCP arm; the ATCP arm turns ECN on (s.III)",
        "reordering": "netinet/tcp_input.c: tcprexmtthresh = 3",
        "max_reordering": "tcprexmtthresh is fixed",
        "comp_sack_nr": "no SACK",
        "rto_min_ms": "netinet/tcp_timer.h: TCPTV_MIN (1 s)",
        "rto_max_ms": "netinet/tcp_timer.h: TCPTV_REXMTMAX (64 s)",
        "rto_init_ms": "netinet/tcp_timer.h: TCPTV_RTOBASE (3 s)",
        "max_backoff": "netinet/tcp_timer.c: tcp_backoff[] = {1, 2, 4, 8, 16, 32, 64, 64, ...}",
        "init_cwnd": "netinet/tcp_output.c: ss_fltsz = 1 (4 to a local peer, ss_fltsz_local, which "
        "this profile does not take: the paper's hosts talk over multi-hop links)",
        "retries2": "netinet/tcp_timer.h: TCP_MAXRXTSHIFT 12, then the connection is dropped",
        "syn_linear_timeouts": "BSD backs off from the first expiration (tcp_backoff[])",
        "no_metrics_save": "each of the paper's transfers is one fresh connection",
    },
)

LEGACY: Final = TcpProfile(
    "legacy",
    "the settings every run had before profiles (issue 45): Reno, SACK and timestamps on, ECN off, "
    "4 MiB socket buffers, no saved metrics, everything else the fresh namespace's (RACK, TLP, "
    "F-RTO, initial window 10, delayed ACKs)",
    TcpKnobs(
        cc="reno",
        mss=DEFAULT_MSS,
        sack=True,
        timestamps=True,
        ecn=False,
        rmem_max=4_194_304,
        wmem_max=4_194_304,
        no_metrics_save=True,
    ),
    {
        k: "the scenario schema's default before issue 45"
        for k in ("cc", "mss", "sack", "timestamps", "ecn", "rmem_max", "wmem_max", "no_metrics_save")
    },
)

LINUX: Final = TcpProfile(
    "linux",
    "Linux as a fresh network namespace has it (SACK with RACK, TLP, F-RTO, DSACK, timestamps, "
    "initial window 10, delayed ACKs, RTO floor 200 ms); only the congestion control is written",
    TcpKnobs(cc="cubic"),
    {"cc": "CUBIC, the kernel's built-in default (the host's default here is BBR, so it is named)"},
)

PROFILES: Final[Mapping[str, TcpProfile]] = {
    p.name: p for p in (LEGACY, LINUX, NS2_2_1B8A, NS2_2_29, NS2_2_33, FREEBSD_LIU2001)
}

ProfileName = Literal["legacy", "linux", "ns2-2.1b8a", "ns2-2.29", "ns2-2.33", "freebsd-liu2001"]


# ----------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True, slots=True)
class EffectiveTcp:
    """The TCP a scenario runs: its profile, each knob's value and who set it, extra sysctls."""

    profile: str
    knobs: TcpKnobs
    sources: Mapping[str, KnobSource]
    extra_sysctls: Mapping[str, str] = field(default_factory=dict)

    @property
    def cc(self) -> str:
        return self.knobs.cc or "reno"

    @property
    def mss(self) -> int:
        return self.knobs.mss or DEFAULT_MSS

    def written(self) -> dict[str, object]:
        """The knobs that are set (by the profile or the scenario), by name."""
        return {k: v for k, v in asdict(self.knobs).items() if v is not None}

    def digest(self) -> str:
        """12 hex digits of the profile name, every set knob and the extra sysctls: runs with the
        same digest ran the same TCP settings (a column of every results row)."""
        canon = json.dumps(
            {"profile": self.profile, "knobs": self.written(), "extra_sysctls": dict(self.extra_sysctls)},
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(canon.encode()).hexdigest()[:12]

    def summary(self) -> dict[str, object]:
        """``summary.json`` ``tcp_profile``: name, digest, each set knob with its value and source."""
        return {
            "profile": self.profile,
            "digest": self.digest(),
            "knobs": {
                k: {"value": v, "source": self.sources[k].value}
                for k, v in asdict(self.knobs).items()
                if v is not None
            },
            "extra_sysctls": dict(self.extra_sysctls),
        }


class ProfileError(ValueError):
    """An unknown profile or a combination of knobs the kernel cannot run; ``field`` names the knob."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def resolve(
    profile: str, explicit: Mapping[str, object], extra_sysctls: Mapping[str, str] | None = None
) -> EffectiveTcp:
    """The effective TCP of ``profile`` with the scenario's ``explicit`` knobs on top.

    Raises ``ProfileError`` for an unknown profile or knob; ``combination_problems`` lists the
    knob combinations that cannot work (checked by the scenario loader)."""
    base = PROFILES.get(profile)
    if base is None:
        raise ProfileError("profile", f"unknown TCP profile {profile!r}; choices: {', '.join(PROFILES)}")
    unknown = sorted(set(explicit) - set(KNOBS))
    if unknown:
        raise ProfileError(unknown[0], f"not a TCP knob; knobs: {', '.join(KNOBS)}")
    values = asdict(base.knobs)
    sources: dict[str, KnobSource] = {}
    for k in KNOBS:
        if k in explicit and explicit[k] is not None:
            values[k] = explicit[k]
            sources[k] = KnobSource.SCENARIO
        elif values[k] is not None:
            sources[k] = KnobSource.PROFILE
        else:
            sources[k] = KnobSource.KERNEL
    return EffectiveTcp(profile, TcpKnobs(**values), sources, dict(extra_sysctls or {}))


def combination_problems(k: TcpKnobs) -> list[tuple[str, str]]:
    """``(knob, reason)`` for every combination Linux cannot run as asked."""
    out: list[tuple[str, str]] = []
    if k.tlp and k.sack is False:
        out.append(("tlp", "Linux's tail loss probe needs SACK (tcp_schedule_loss_probe); sack is false"))
    if k.dsack and k.sack is False:
        out.append(("dsack", "D-SACK needs SACK; sack is false"))
    lo, hi = LINUX_RTO_MAX_RANGE_MS
    if k.rto_max_ms is not None and not lo <= k.rto_max_ms <= hi:
        out.append(("rto_max_ms", f"{k.rto_max_ms} ms is outside Linux's {lo}..{hi} ms"))
    if k.rto_min_ms is not None and k.rto_max_ms is not None and k.rto_min_ms > k.rto_max_ms:
        out.append(("rto_min_ms", f"{k.rto_min_ms} ms is above rto_max_ms ({k.rto_max_ms} ms)"))
    if k.rto_init_ms is not None and k.rto_init_ms > hi:
        out.append(("rto_init_ms", f"{k.rto_init_ms} ms is above Linux's TCP_RTO_MAX ({hi} ms)"))
    if k.init_cwnd is not None and k.window_pkts is not None and k.init_cwnd > k.window_pkts:
        out.append(("init_cwnd", f"{k.init_cwnd} segments is above window_pkts ({k.window_pkts})"))
    if k.syn_retries is not None and k.syn_retries > LINUX_MAX_SYN_RETRIES:
        out.append(("syn_retries", f"{k.syn_retries} is above Linux's {LINUX_MAX_SYN_RETRIES}"))
    if k.max_reordering is not None and k.reordering is not None and k.reordering > k.max_reordering:
        out.append(("reordering", f"{k.reordering} is above max_reordering ({k.max_reordering})"))
    return out


# ----------------------------------------------------------------------------------------------
# What this kernel can run

#: Congestion controls the project provides itself (BPF struct_ops, nodes/tcpctl/bpf): always there.
PROJECT_CCS: Final = frozenset({"vegas"})


def kernel_problems(
    knobs: TcpKnobs, has_sysctl: Callable[[str], bool], available_cc: frozenset[str] | None
) -> list[tuple[str, str]]:
    """``(knob, reason)`` for each set knob this kernel lacks the sysctl of, and for a congestion
    control it does not offer. ``has_sysctl`` answers for a name under ``net.ipv4``;
    ``available_cc`` is ``tcp_available_congestion_control`` (None: unknown, not checked)."""
    out: list[tuple[str, str]] = []
    for name, value in asdict(knobs).items():
        mech = KNOB_MECHANISMS[name]
        if value is not None and mech.mechanism is Mechanism.SYSCTL and not has_sysctl(mech.target):
            out.append(
                (
                    name,
                    f"this kernel has no net.ipv4.{mech.target} (Linux {SYSCTL_SINCE.get(mech.target, '?')} or later)",
                )
            )
    out += cc_problems("cc", knobs.cc, available_cc)
    return out


def cc_problems(field: str, cc: str | None, available_cc: frozenset[str] | None) -> list[tuple[str, str]]:
    """A congestion control this kernel does not offer, with the choices it does."""
    if cc is None or available_cc is None or cc in PROJECT_CCS or cc in available_cc:
        return []
    choices = ", ".join(sorted(available_cc | PROJECT_CCS))
    return [(field, f"congestion control {cc!r} is not available on this kernel; choices: {choices}")]


#: The first Linux release with each of the newer sysctls (for the error message).
SYSCTL_SINCE: Final[Mapping[str, str]] = {
    "tcp_rto_min_us": "6.11",
    "tcp_rto_max_ms": "6.15",
    "tcp_syn_linear_timeouts": "6.18",
    "tcp_comp_sack_nr": "4.19",
    "tcp_max_reordering": "4.4",
}
