"""How many runs a sweep runs at once: ``--parallel auto`` (issue 10, item 2).

"The sweep picks how many runs to start from the host's cores and the scenarios' measured cost
(stations, flows), and backs off when validity signals degrade."

The emulation is real time: a run is only worth its row if the medium and the routers kept up
(``testbed.validity``). A run is light (20 Python routers forwarding a few hundred packets a second
use a few per cent of a core), so a 2-core host can hold several at once; how many depends on the
scenario. ``AutoParallel`` is a sans-I/O controller:

- **Start**: ``limit = floor(cores x target_cpu_share / cost)``, where ``cost`` is the cores one run
  of this scenario uses: measured (``run_cpu_s / wall_s`` of the experiment's earlier rows) when
  there are rows, else ``CapacityModel.estimate`` from the scenario's stations and flows.
  Capped by memory (``MemAvailable`` / per-run memory), by ``stations_per_core`` (the routers a
  flood wakes at once) and ``max_runs``.
- **Back off** (multiplicative, as TCP does): an invalid run halves the limit; a valid run whose
  signals are in the warning band (medium or router loop lag p99 above ``warn_*``) lowers it by one.
  The band is judged by lag alone: CPU pressure (PSI) is recorded but not judged, because a
  2-core host running 3 valid runs of the 20-station scenario showed PSI "some" 0.55-0.57 with
  medium lag p99 0.34-0.41 ms (docs/benchmarks.md, sweep_capacity); ``testbed.validity`` does the
  same for its invalid thresholds.
- **Grow** (additive): after ``limit`` valid runs in a row without a warning, and while the host's
  CPU is below ``max_host_busy``, one more.

``SweepHostSampler`` (the only I/O here) reads ``/proc/stat`` for the host's busy share.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from experiments.rows import RunRecord, cc_fault_reason
from testbed.validity import cpu_times


@dataclass(frozen=True, slots=True)
class CapacityModel:
    """The constants of ``--parallel auto``; docs/experiments.md gives the measurements behind them."""

    #: Share of the host's CPU the runs may use together when starting (the rest: bring-up bursts,
    #: the sweep itself, noise).
    target_cpu_share: float = 0.7
    #: Cores one run uses, before any row measured it: a fixed part (medium, iperf3, orchestrator)
    #: plus a part per station (its router) and per flow (traffic through several routers).
    #: Measured (``run_cpu_s / wall_s`` of valid serial runs, 2026-11-24): the 20-station Ghanem
    #: scenario with DSR (Python forwarding), 1 TCP + 10 CBR flows, uses 0.35-0.48 cores
    #: (median 0.39, 9 runs of 45 s; 0.39 for its 120 s runs too): 0.03 + 20 x 0.012 + 11 x 0.01.
    base_cores: float = 0.03
    per_station_cores: float = 0.012
    per_flow_cores: float = 0.01
    #: Memory one station costs (router process, namespace, iperf3/tcpdump when present), MB.
    per_station_mb: float = 40.0
    #: Never more runs at once than this.
    max_runs: int = 24
    #: Stations per core that may run at once, whatever their mean cost: a route discovery floods
    #: every router of a run at the same instant, and on 2 cores the last of 100 Python routers
    #: waits its turn. A 100-station Cohen run (AODV) uses 0.25 cores on average yet, alone on the
    #: 2-core host, 6 of its first 17 runs went invalid (one router's loop lag p99 53-100 ms), and
    #: the mean cost alone started 4 at once (2026-11-26, docs/results/cohen.md); three 50-station
    #: Klemm runs beside one Cohen run were all invalid. 55 per core: Cohen 1 at a time, Klemm
    #: (52 stations) 2, the 20-station Ghanem runs 5 (their CPU cost keeps them at 3). It was 50,
    #: which held Klemm's 52 stations to one run at a time although two at once were valid with
    #: room to spare (2026-11-26, 20 m/s: router loop lag p99 12.8 and 16.3 ms, medium lag p99
    #: 0.14 ms, 0.23 cores each).
    stations_per_core: float = 55.0
    #: Warning band: a valid run above these lowers the limit by one. Half of
    #: ``testbed.validity``'s invalid thresholds (medium lag p99 2 ms, router loop lag p99 50 ms),
    #: so the sweep backs off before runs become invalid. It was a quarter (0.5 ms, 12.5 ms):
    #: too tight. In ``sweep_capacity`` (docs/benchmarks.md) runs at router loop lag p99 13-17 ms
    #: and medium lag p99 0.5-0.65 ms were valid and gave the serial runs' results (Wilcoxon
    #: p 0.105 and 0.77), yet held auto at 1-2 runs; in the multihop study (docs/results/multihop.md)
    #: DSR chains at medium lag 0.57-1.75 ms were all valid and held it at 1.
    warn_medium_lag_p99_ms: float = 1.0
    warn_router_lag_p99_ms: float = 25.0
    #: The limit grows only while the host's CPU is busier than this less often.
    max_host_busy: float = 0.85
    #: Seconds between two run starts (bring-up is a CPU burst: namespaces, routers, iperf3).
    start_gap_s: float = 2.0

    def estimate(self, stations: int, flows: int) -> float:
        """Cores one run of a scenario with ``stations`` and ``flows`` uses (before measurement)."""
        return self.base_cores + self.per_station_cores * stations + self.per_flow_cores * flows


DEFAULT_MODEL: Final = CapacityModel()


class Concurrency(Protocol):
    """What the runner asks: how many runs now, and here is a finished one."""

    def limit(self) -> int: ...
    def observe(self, rec: RunRecord, host_busy: float) -> str | None: ...
    def describe(self) -> str: ...


class FixedParallel:
    """``--parallel N``."""

    def __init__(self, n: int) -> None:
        self.n = max(1, n)

    def limit(self) -> int:
        return self.n

    def observe(self, rec: RunRecord, host_busy: float) -> str | None:
        return None

    def describe(self) -> str:
        return f"parallel {self.n}"


def measured_cost(rows: list[RunRecord]) -> float | None:
    """Median cores per run over valid rows that recorded their CPU time (None if none did; an
    invalid run was starved of CPU, so its CPU time understates the cost)."""
    costs = sorted(
        r.signals["run_cpu_s"] / r.wall_s
        for r in rows
        if r.valid and r.wall_s > 0 and not math.isnan(r.signals.get("run_cpu_s", math.nan))
    )
    return costs[len(costs) // 2] if costs else None


class AutoParallel:
    """``--parallel auto``: start from the cost, back off on degraded runs, grow when healthy."""

    def __init__(
        self,
        cores: int,
        cost_cores: float,
        mem_available_mb: float,
        stations: int,
        model: CapacityModel = DEFAULT_MODEL,
    ) -> None:
        self.model = model
        self.cores = cores
        self.cost = max(cost_cores, 1e-3)
        mem_cap = int(mem_available_mb * 0.8 // max(1.0, model.per_station_mb * stations))
        burst_cap = int(cores * model.stations_per_core // max(1, stations))
        self.cap = max(1, min(model.max_runs, mem_cap, burst_cap))
        self.start = max(1, min(self.cap, int(cores * model.target_cpu_share / self.cost)))
        self._limit = self.start
        self._healthy = 0
        self.backoffs = 0

    def limit(self) -> int:
        return self._limit

    def observe(self, rec: RunRecord, host_busy: float) -> str | None:
        """A finished run; returns a log line when the limit changed."""
        m = self.model
        old = self._limit
        why = ""
        fault = cc_fault_reason(rec.metrics)
        if not rec.valid and any(r != fault for r in rec.invalid_reasons):  # a real-time reason
            self._limit = max(1, self._limit // 2)
            why = "invalid run (" + "; ".join(rec.invalid_reasons) + ")"
        else:
            lag = rec.signals.get("medium_lag_p99_ms", math.nan)
            rlag = rec.signals.get("router_lag_p99_ms", math.nan)
            if lag > m.warn_medium_lag_p99_ms or rlag > m.warn_router_lag_p99_ms:
                self._limit = max(1, self._limit - 1)
                why = f"warning band (medium lag p99 {lag:.2f} ms, router loop lag p99 {rlag:.1f} ms)"
            else:
                self._healthy += 1
                if self._healthy >= self._limit and host_busy < m.max_host_busy and self._limit < self.cap:
                    self._limit += 1
                    why = f"{self._healthy} healthy runs, host CPU busy {host_busy:.0%}"
        if self._limit != old:
            self._healthy = 0
            if self._limit < old:
                self.backoffs += 1
            return f"parallel {old} -> {self._limit}: {why}"
        return None

    def describe(self) -> str:
        return (
            f"parallel auto: {self._limit} (started at {self.start}: {self.cores} cores x "
            f"{self.model.target_cpu_share:.0%} / {self.cost:.3f} cores per run; cap {self.cap})"
        )


def mem_available_mb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 4096.0


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs (``testbed.validity.cpu_times`` parses /proc/stat)."""
    return cpu_times(Path("/proc/stat").read_text())


class SweepHostSampler:
    """The host's CPU busy share for the sweep's controller, sampled every ``interval_s`` in a
    thread, smoothed over ``window`` samples (a run's own record of the host is
    ``testbed.validity.HostSampler``)."""

    def __init__(self, interval_s: float = 2.0, window: int = 5) -> None:
        self.interval_s = interval_s
        self.window = window
        self._samples: list[float] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="host-sampler", daemon=True)

    def __enter__(self) -> SweepHostSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        prev = _cpu_times()
        while not self._stop.wait(self.interval_s):
            cur = _cpu_times()
            d_busy, d_total = cur[0] - prev[0], cur[1] - prev[1]
            prev = cur
            if d_total > 0:
                with self._lock:
                    self._samples = [*self._samples[-(self.window - 1) :], d_busy / d_total]

    def busy(self) -> float:
        with self._lock:
            return sum(self._samples) / len(self._samples) if self._samples else 0.0


def cores() -> int:
    return len(os.sched_getaffinity(0))
