"""Run validity: did real time hold during a run? (docs/orchestrator.md, "Run validity")

The testbed emulates in wall-clock time: the medium runs each event when the monotonic clock
reaches it, the routers forward when their event loops get the CPU, and the kernels' TCP stacks
see whatever delays result. When the host cannot keep up (other load, too many parallel runs, a
stalled process), frames are delivered late, timers fire late, queues overflow outside the
emulated network, and TCP measures the host instead of the MANET. Such a run must not be averaged
with the others (issue 10, item 1).

This module is the sans-I/O part: ``Thresholds`` (each a named parameter, documented with the
measurement that justifies it), ``Measurements`` (what a run recorded), and the pure
``judge(measurements, thresholds) -> Validity``. Parsing of the counters files is pure too
(``medium_lag``, ``router_lag``, ``run_cpu_s``, ``tun_drops_from_net_dev``). The I/O (the host
sampler, reading the files) is in ``HostSampler`` and ``testbed.run``.

The thresholds come from a study on ``topologies/chain5.yaml`` (4 hops, static routes, window 8)
and the same chain without the window cap, with CPU hogs and with periodic SIGSTOP/SIGCONT stalls
of the medium (``bench/validity/lag_study.py``; the table is in docs/orchestrator.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nodes.router.loop import LagHistogram

MEDIUM_LATE_THRESHOLDS_MS = (0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
"""The lags the medium counts events at or beyond (medium/src/stats.rs ``LATE_THRESHOLDS_NS``)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Limits beyond which a run is invalid. Each is justified in docs/orchestrator.md,
    "Run validity", by how far a lag or load of that size moves TCP throughput on the chain."""

    medium_lag_p99_ms: float = 2.0
    """The medium's event lag, 99th percentile. In the study, runs whose throughput stayed within
    the noise (no load, 1-4 CPU hogs, medium stalls of 1 and 5 ms every second) had 0.12-0.79 ms;
    20 ms stalls every second, the first condition to move throughput (-1.4 % and -1.7 %, at the
    edge of the noise), 4.9-6.9 ms; 100 ms stalls (-8.5 % and -9.2 %) 77-87 ms. 2 ms lies between
    the healthy runs and the first measurable effect."""

    medium_lag_max_ms: float = 50.0
    """The medium's worst event lag. Healthy runs: 1.6-15 ms (one event; the host is shared);
    20 ms stalls: 25-29 ms (throughput within noise); 100 ms stalls: 101-104 ms (-9 %)."""

    medium_late_ms: float = 10.0
    """Lag from which an event counts as late for ``medium_late_share`` (one of
    ``MEDIUM_LATE_THRESHOLDS_MS``). At 10 ms the healthy runs and the stalled ones separate best
    (at 1 ms an unloaded run had 0.77 % late events and a 100 ms-stall run 1.1 %)."""

    medium_late_share: float = 0.005
    """Share of the medium's events at least ``medium_late_ms`` late. Healthy runs: 0-0.084 %;
    20 ms stalls every second: 0.78-0.87 %; 100 ms stalls: 1.0-1.3 % (the medium's events are
    clocked by the traffic, which a stall also stops, so the share stays small even then)."""

    router_lag_p99_ms: float = 50.0
    """The routers' event-loop timer lateness, 99th percentile, worst station (sampled by every
    timer and by a jittered probe every ~0.2 s). ``epoll_wait``'s millisecond rounding alone
    makes ~1 ms; on the shared 2-core host the runs of the study whose throughput stayed within
    the noise had 3-49 ms (1-4 CPU hogs delay the routers' wake-ups without moving the chain's
    throughput: it is limited by the air). A run during heavy load from other sessions had 72 ms
    and lost 7 % of its throughput; the relay sta3 stopped for 100 ms every second gives ~90 ms.
    50 ms is at the top of the harmless range."""

    router_lag_max_ms: float = 200.0
    """The routers' worst timer lateness, worst station. Healthy runs: up to 154 ms. A router
    frozen longer than Linux's minimum RTO (200 ms, ``TCP_RTO_MIN``) can fire a spurious RTO at
    an endpoint, and RTO counts are what the papers measure."""

    tun_drops: int = 0
    """Packets the kernel dropped on a station's TUN (tx: the router did not read them in time;
    rx: it could not take what the router wrote). None in any healthy run: any drop means the
    router fell behind the kernel outside the emulated network."""

    medium_socket_drops: int = 0
    """Messages the medium could not send to a router (its receive buffer full: the router fell
    behind) plus those a router could not send to the medium. None in any healthy run."""

    host_cpu_busy_share: float = 1.0
    """Share of the run's wall time during which every core of the host was at least
    ``HostSampler.busy_level`` busy. Recorded for the sweep's back-off; 1.0 (never invalid by
    itself): with 4 CPU hogs the host is saturated all the time and the chain's throughput
    still holds, because the medium runs SCHED_FIFO and the routers sleep most of the time. The
    lags above are what decides."""

    cpu_pressure_share: float = 1.0
    """PSI ``/proc/pressure/cpu`` "some" stall time over the run's wall time. Recorded, not
    judged (1.0), for the same reason as ``host_cpu_busy_share``."""

    def __post_init__(self) -> None:
        if self.medium_late_ms not in MEDIUM_LATE_THRESHOLDS_MS:
            raise ValueError(
                f"Thresholds.medium_late_ms: {self.medium_late_ms} is not one the medium counts "
                f"({', '.join(str(t) for t in MEDIUM_LATE_THRESHOLDS_MS)})"
            )

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Measurements:
    """What a run recorded about its own timing (None: not measured, e.g. the run stopped first)."""

    medium_lag_p99_ms: float | None = None
    medium_lag_max_ms: float | None = None
    medium_late_share: float | None = None
    medium_events: int = 0
    router_lag_p99_ms: float | None = None
    router_lag_max_ms: float | None = None
    router_lag_station: int | None = None
    """The station whose loop had the worst p99 (or max)."""
    tun_drops: int | None = None
    medium_socket_drops: int | None = None
    host_cpu_busy_share: float | None = None
    cpu_pressure_share: float | None = None
    run_cpu_s: float | None = None
    #: TCP profile read-backs that differ from the profile (testbed.tcpprofile.Mismatch, as text)
    tcp_readback: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Validity:
    valid: bool
    reasons: tuple[str, ...]
    measurements: Measurements
    thresholds: Thresholds

    def to_dict(self) -> dict[str, Any]:
        """``summary["validity"]`` (docs/orchestrator.md)."""
        m = asdict(self.measurements)
        return {"reasons": list(self.reasons), **m, "thresholds": self.thresholds.to_dict()}


def _over(name: str, value: float | None, limit: float, unit: str = "", fmt: str = ".2f") -> str | None:
    if value is None or value <= limit:
        return None
    return f"{name} {value:{fmt}}{unit} > {limit:{fmt}}{unit}"


def judge(m: Measurements, t: Thresholds = DEFAULT_THRESHOLDS) -> Validity:
    """Valid when every measured signal is within its threshold and the lags were measured.

    A reason names the signal, its value and the threshold ("medium lag p99 2.31 ms > 1.00 ms").
    The medium's and the routers' lags are required (without them nothing says real time held);
    drops and host load are judged when measured.
    """
    reasons: list[str] = []
    if m.medium_lag_p99_ms is None or m.medium_events == 0:
        reasons.append("medium lag not measured (no medium counters, or no event ran)")
    else:
        for r in (
            _over("medium lag p99", m.medium_lag_p99_ms, t.medium_lag_p99_ms, " ms"),
            _over("medium lag max", m.medium_lag_max_ms, t.medium_lag_max_ms, " ms"),
        ):
            if r:
                reasons.append(r)
        if m.medium_late_share is not None and m.medium_late_share > t.medium_late_share:
            reasons.append(
                f"medium late share (>= {t.medium_late_ms:g} ms) {100 * m.medium_late_share:.3f} % "
                f"> {100 * t.medium_late_share:.3f} %"
            )
    where = f" (sta{m.router_lag_station})" if m.router_lag_station is not None else ""
    if m.router_lag_p99_ms is None:
        reasons.append("router loop lag not measured (no router counters)")
    else:
        for r in (
            _over("router loop lag p99", m.router_lag_p99_ms, t.router_lag_p99_ms, " ms"),
            _over("router loop lag max", m.router_lag_max_ms, t.router_lag_max_ms, " ms"),
        ):
            if r:
                reasons.append(r + where)
    for r in (
        _over("TUN drops", m.tun_drops, t.tun_drops, fmt="d"),
        _over("medium socket drops", m.medium_socket_drops, t.medium_socket_drops, fmt="d"),
        _over("host CPU saturated share", m.host_cpu_busy_share, t.host_cpu_busy_share),
        _over("CPU pressure share", m.cpu_pressure_share, t.cpu_pressure_share),
    ):
        if r:
            reasons.append(r)
    if m.tcp_readback:
        more = f" (and {len(m.tcp_readback) - 1} more)" if len(m.tcp_readback) > 1 else ""
        reasons.append(f"TCP profile read-back: {m.tcp_readback[0]}{more}")
    return Validity(not reasons, tuple(reasons), m, t)


# ---------------------------------------------------------------------- parsing (pure)
@dataclass(frozen=True, slots=True)
class MediumLag:
    p99_ms: float
    max_ms: float
    late_share: float | None
    events: int
    socket_drops: int


def medium_lag(counters: Mapping[str, Any], late_ms: float) -> MediumLag | None:
    """The medium's ``counters.json``: lag p99/max, the share of events >= ``late_ms`` late (None
    if this medium does not count at that lag), and its per-station ``send_dropped`` total."""
    lag = counters.get("lag")
    if not isinstance(lag, Mapping):
        return None
    n = int(lag.get("count", 0))
    late = lag.get("late") or {}
    key = str(round(late_ms * 1e6))
    share = int(late[key]) / n if key in late and n else (0.0 if key in late else None)
    per_station = ((counters.get("io") or {}).get("per_station") or {}).values()
    drops = sum(int(s.get("send_dropped", 0)) for s in per_station)
    return MediumLag(int(lag.get("p99_ns", 0)) / 1e6, int(lag.get("max_ns", 0)) / 1e6, share, n, drops)


ROUTER_LAG_P99_MIN_SAMPLES = 100
"""A station's loop-lag p99 is judged on its own only if its loop woke at least this often. Below
100 samples the 99th percentile is the maximum (the ceil(0.99 n)-th of n samples is the n-th), so
the p99 rule (``Thresholds.router_lag_p99_ms``, made for sustained lag) would judge one late wake-up
by 50 ms, four times stricter than the rule for single stalls (``Thresholds.router_lag_max_ms``).
The stations of a short 100-station run wake 17-94 times (off the path mostly for the 0.2 s probe):
on 2026-11-29, 16 Cohen route-control runs were invalid by the p99 rule alone, each at such a
station (one wake-up 52-76 ms late), 10 of them at fast seeds whose 2 MB took 13-32 s, so that a
fast seed's route-control arm could not become valid and the pairs lost exactly the seeds with short
transfers. The stations under this count are pooled (their histograms added, ``LagHistogram.merge``)
and the pool's p99 is judged like one station's; a station whose counters have no histogram (written
before 2026-11-29) is judged on its own, as before."""


@dataclass(frozen=True, slots=True)
class RouterLag:
    p99_ms: float
    max_ms: float
    station: int | None
    """The station with the worst p99; if that is the pool of stations under
    ``ROUTER_LAG_P99_MIN_SAMPLES`` samples, the pooled station with the latest wake-up."""
    send_dropped: int


def router_lag(snapshots: Iterable[Mapping[str, Any]]) -> RouterLag | None:
    """The worst p99 and max of the routers' ``loop_lag`` over their counters files (p99: over the
    stations with at least ``ROUTER_LAG_P99_MIN_SAMPLES`` samples and the pool of the others), and
    the routers' ``medium_send_dropped`` total. A malformed histogram raises ValueError."""
    worst: tuple[int, int | None] | None = None  # (p99_ns, station)
    pool: LagHistogram | None = None
    pool_station: tuple[int, int | None] = (-1, None)  # (max_ns, station) of the pool's latest
    mx = 0
    seen = False
    dropped = 0
    for snap in snapshots:
        dropped += int((snap.get("io") or {}).get("medium_send_dropped", 0))
        ll = snap.get("loop_lag")
        if not isinstance(ll, Mapping):
            continue
        seen = True
        station = snap.get("station")
        sid = None if station is None else int(station)
        mx = max(mx, int(ll.get("max_ns", 0)))
        hist = LagHistogram.from_dict(ll)
        if hist is not None and hist.count < ROUTER_LAG_P99_MIN_SAMPLES:
            if pool is None:
                pool = LagHistogram()
            pool.merge(hist)
            if hist.max_ns > pool_station[0]:
                pool_station = (hist.max_ns, sid)
            continue
        p99 = int(ll.get("p99_ns", 0))
        if worst is None or p99 > worst[0]:
            worst = (p99, sid)
    if not seen:
        return None
    pooled_p99 = pool.quantile_ns(0.99) if pool is not None and pool.count else None
    if pooled_p99 is not None and (worst is None or pooled_p99 > worst[0]):
        worst = (pooled_p99, pool_station[1])
    p99_ns, sid = worst if worst is not None else (0, None)
    return RouterLag(p99_ns / 1e6, mx / 1e6, sid, dropped)


def _rusage_s(snap: Mapping[str, Any] | None) -> float | None:
    ru = (snap or {}).get("rusage")
    if not isinstance(ru, Mapping):
        return None
    return float(ru.get("utime_s", 0.0)) + float(ru.get("stime_s", 0.0))


def iperf3_cpu_s(result: Mapping[str, Any] | None) -> float:
    """CPU seconds of one iperf3 process from its ``-J`` output (``cpu_utilization_percent``
    ``host_total`` is its getrusage over the test's duration)."""
    end = (result or {}).get("end") or {}
    cpu = end.get("cpu_utilization_percent") or {}
    summ = end.get("sum_sent") or end.get("sum_received") or end.get("sum") or {}
    return float(cpu.get("host_total", 0.0)) / 100.0 * float(summ.get("seconds", 0.0))


def run_cpu_s(
    medium: Mapping[str, Any] | None,
    routers: Iterable[Mapping[str, Any]],
    iperf3: Iterable[Mapping[str, Any] | None] = (),
    other_s: float = 0.0,
) -> float | None:
    """CPU seconds of the run's own processes: the medium and every router (getrusage written at
    exit), the iperf3 clients and servers, plus ``other_s`` (the runner's observer thread). None
    when the medium or no router reported it (the run stopped before they wrote it)."""
    med = _rusage_s(medium)
    rts = [r for r in (_rusage_s(s) for s in routers) if r is not None]
    if med is None or not rts:
        return None
    return med + sum(rts) + sum(iperf3_cpu_s(j) for j in iperf3) + other_s


def tun_drops_from_net_dev(text: str, ifname: str = "tun0") -> int | None:
    """rx_drop + tx_drop of ``ifname`` in a ``/proc/<pid>/net/dev`` text (None if absent)."""
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name.strip() == ifname:
            f = rest.split()
            # receive: bytes packets errs drop ...(8 fields); transmit: bytes packets errs drop ...
            return int(f[3]) + int(f[11])
    return None


# ---------------------------------------------------------------------- host load (I/O)
def cpu_times(stat_text: str) -> tuple[int, int]:
    """(busy, total) jiffies of the aggregate ``cpu`` line of ``/proc/stat``."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
            total = sum(v[:8])  # user..steal (guest is inside user)
            return total - idle, total
    raise ValueError("/proc/stat: no aggregate cpu line")


def psi_some_total_us(text: str) -> int | None:
    """The ``some ... total=`` field (us) of a ``/proc/pressure/*`` text."""
    for line in text.splitlines():
        if line.startswith("some "):
            for part in line.split():
                if part.startswith("total="):
                    return int(part[6:])
    return None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


class HostSampler:
    """Samples the host's CPU while a run is live (a daemon thread, one ``/proc/stat`` read per
    ``interval_s``). ``busy_share``: the share of the sampled time in intervals where the host's
    CPUs were on average at least ``busy_level`` busy (with 2 cores: both saturated).
    ``pressure_share``: the PSI cpu "some" stall time over the wall time between start and stop."""

    def __init__(
        self,
        interval_s: float = 0.5,
        busy_level: float = 0.95,
        *,
        read: Callable[[str], str | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.busy_level = busy_level
        self._read = read or _read  # seams for tests: /proc reader and clock
        self._clock = clock
        self.busy_s = 0.0
        self.sampled_s = 0.0
        self.wall_s = 0.0
        self.pressure_share: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._psi0: int | None = None

    def start(self) -> HostSampler:
        self._t0 = self._clock()
        self._psi0 = psi_some_total_us(self._read("/proc/pressure/cpu") or "")
        self._thread = threading.Thread(target=self._loop, name="host-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        text = self._read("/proc/stat")
        if text is None:
            return
        busy0, total0 = cpu_times(text)
        t0 = self._clock()
        while not self._stop.wait(self.interval_s):
            text = self._read("/proc/stat")
            if text is None:
                return
            busy, total = cpu_times(text)
            t = self._clock()
            if total > total0:
                if (busy - busy0) / (total - total0) >= self.busy_level:
                    self.busy_s += t - t0
                self.sampled_s += t - t0
            busy0, total0, t0 = busy, total, t

    def stop(self) -> None:
        """Stop sampling (idempotent); fixes ``pressure_share`` and ``wall_s``."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(2.0)
        self._thread = None
        self.wall_s = self._clock() - self._t0
        psi1 = psi_some_total_us(self._read("/proc/pressure/cpu") or "")
        if self._psi0 is not None and psi1 is not None and self.wall_s > 0:
            self.pressure_share = (psi1 - self._psi0) / 1e6 / self.wall_s

    @property
    def busy_share(self) -> float | None:
        return self.busy_s / self.sampled_s if self.sampled_s > 0 else None
