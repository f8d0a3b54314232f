"""What a run measures beside its flows, and how it goes into ``summary.json``.

- kernel TCP counters of every station and wired host before and after the traffic (``nstat``,
  ``nstat/{before,after}.json``), giving each flow's and station's TCP timeouts;
- the per-connection ``tcp_info`` time series of every TCP flow (``tcp/``, testbed's observer);
- at teardown, the routers' and the medium's counters: routing packets, the network-layer totals
  (``network_totals``), a cause for every TCP timeout (testbed.explain);
- whether the run kept real time (testbed/validity.py): the host's CPU while the run is live,
  TUN drops during the traffic, the medium's and routers' loop lag.

docs/orchestrator.md describes ``summary.json``. ``Testbed`` (testbed/run.py) owns one
``RunMetrics`` and calls it at the points of its lifecycle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import traffic
from testbed.naming import station_ip
from testbed.results import Results, read_json, write_json
from testbed.station import Station
from testbed.tcpprofile import NEGOTIATED_FIELDS, Mismatch, first_established, flow_mismatches
from testbed.traffic import node_label
from testbed.validity import (
    HostSampler,
    Measurements,
    Thresholds,
    Validity,
    judge,
    medium_lag,
    router_lag,
    run_cpu_s,
    tun_drops_from_net_dev,
)
from topologies.scenario import Scenario, TcpFlow

FALSE_FAILURE_CAUSES = ("collision", "channel_error")
"""Ground-truth causes (medium TX_STATUS) of a failed unicast whose receiver was in range: the
routing layer is told the link broke although it did not (Klemm 2004's "false link failures")."""


def nstat_snapshot(st: Station, history: Path) -> dict[str, int]:
    """Absolute kernel counters of the station (``nstat -asz --json`` with a private history)."""
    res = st.cmd(["nstat", "-asz", "--json"], env={"NSTAT_HISTORY": str(history)}, timeout=10)
    if res.rc != 0:
        return {}
    try:
        data = json.loads(res.stdout)
    except ValueError:
        return {}
    kernel: dict[str, int] = data.get("kernel", {})
    return kernel


def tun_drops(stations: Mapping[int, Station]) -> int | None:
    """Kernel drops (rx + tx) on every station's ``tun0`` now, summed; None if no router runs.

    Read from ``/proc/<router pid>/net/dev``, which shows the router's network namespace.
    """
    total, found = 0, False
    for st in stations.values():
        if st.router_pid is None:
            continue
        try:
            text = Path(f"/proc/{st.router_pid}/net/dev").read_text()
        except OSError:
            continue
        n = tun_drops_from_net_dev(text)
        if n is not None:
            total, found = total + n, True
    return total if found else None


class RunMetrics:
    """The measurements of one run of ``scenario``; ``timings`` is the run's (shared) dict of
    phase durations, ``thresholds`` what makes a run invalid."""

    def __init__(self, scenario: Scenario, thresholds: Thresholds, timings: dict[str, float]) -> None:
        self.scenario = scenario
        self.thresholds = thresholds
        self.timings = timings
        self.host_load: HostSampler | None = None  # the host's CPU while the run is live
        self.sampler: Any = None  # nodes.tcpctl.observe.DiagSampler during run()
        self.validity: Validity | None = None
        self._tun_drops_base: int = 0  # TUN drops before the traffic (bring-up is not judged)
        self._tun_drops_end: int | None = None
        self._nstat_before: dict[int | str, dict[str, int]] = {}
        #: read-backs of the TCP profile that differ from it (testbed.tcpprofile); each one
        #: makes the run invalid
        self.tcp_mismatches: list[Mismatch] = []

    # ------------------------------------------------------------------ host and TUN
    def start_host_load(self) -> None:
        self.host_load = HostSampler().start()

    def stop_host_load(self) -> None:
        if self.host_load is not None:
            self.host_load.stop()

    def traffic_starts(self, stations: Mapping[int, Station]) -> None:
        """Mark the start of the traffic: TUN drops from here on are judged."""
        self._tun_drops_base = tun_drops(stations) or 0

    def routers_stopping(self, stations: Mapping[int, Station]) -> None:
        """Mark the end (routers still up: their namespaces exist)."""
        self._tun_drops_end = tun_drops(stations)

    # ------------------------------------------------------------------ nstat
    def nstat_before(self, nodes: Mapping[int | str, Station], history: Path, res: Results) -> None:
        self._nstat_before = {k: nstat_snapshot(st, history) for k, st in nodes.items()}
        write_json(
            res.dir / "nstat" / "before.json", {node_label(k): v for k, v in self._nstat_before.items()}
        )

    def nstat_after(
        self, nodes: Mapping[int | str, Station], history: Path, res: Results, flows: list[traffic.Flow]
    ) -> None:
        """Counters after the traffic; each station's, host's and TCP flow's TCP timeouts."""
        before = self._nstat_before
        after = {k: nstat_snapshot(st, history) for k, st in nodes.items()}
        write_json(res.dir / "nstat" / "after.json", {node_label(k): v for k, v in after.items()})

        def delta(counter: str) -> dict[int | str, int]:
            return {
                k: after[k].get(counter, 0) - before[k].get(counter, 0)
                for k in after
                if after.get(k) and before.get(k)
            }

        timeouts = delta("TcpExtTCPTimeouts")
        res.summary["stations"] = {
            f"sta{k}": {"tcp_timeouts": v} for k, v in timeouts.items() if isinstance(k, int)
        }
        if any(isinstance(k, str) for k in nodes):
            res.summary["hosts"] = {k: {"tcp_timeouts": v} for k, v in timeouts.items() if isinstance(k, str)}
        aborts = delta("TcpExtTCPAbortOnTimeout")
        spurious = delta("TcpExtTCPSpuriousRTOs")
        for fl, fs in zip(flows, res.summary["flows"], strict=True):
            if fl.proto == "tcp":
                fs["tcp_timeouts"] = timeouts.get(fl.src)
                # connections the sender's kernel gave up on (retransmissions timed out)
                fs["tcp_aborts"] = aborts.get(fl.src)
                # timeouts F-RTO (RFC 5682) found spurious and undid: counted in tcp_timeouts too
                fs["tcp_spurious_rtos"] = spurious.get(fl.src)

    # ------------------------------------------------------------------ per-connection time series
    def start_observer(
        self, flows: list[traffic.Flow], nodes: Mapping[int | str, Station], clock: Any
    ) -> None:
        """Sample tcp_info of every TCP flow's connections in the sender's namespace (inet_diag).

        Every ``tcpctl.observe_interval_ms`` (default 100 ms) one netlink dump per sending station,
        from one thread of the runner (no subprocess); written to ``tcp/staN.{csv,jsonl}``.
        """
        ms = self.scenario.tcpctl.observe_interval_ms
        tcp = [fl for fl in flows if fl.proto == "tcp"]
        if not ms or not tcp or self.sampler is not None:
            return
        from nodes.tcpctl.observe import DiagSampler

        senders = {node_label(fl.src): nodes[fl.src].netns for fl in tcp}
        self.sampler = DiagSampler(senders, ms / 1000, {fl.port for fl in tcp}, clock=clock).start()

    def kick_observer(self) -> None:
        """A client has just started: sample now."""
        if self.sampler is not None:
            self.sampler.kick()

    def stop_observer(self, res: Results | None) -> None:
        smp = self.sampler
        if smp is None or smp.socks == {}:
            return
        t0 = time.monotonic()
        smp.stop()
        if res is not None:
            smp.write(res.dir / "tcp")
            res.summary["observer"] = {
                "interval_ms": self.scenario.tcpctl.observe_interval_ms,
                "dumps": smp.n_dumps,
                "cpu_s": round(smp.cpu_s, 3),
                "files": "tcp/",
            }
        self.timings["observer_write_s"] = time.monotonic() - t0

    def summarise_series(self, flows: list[traffic.Flow], res: Results) -> None:
        """Per flow: the data connection's time series in numbers (``flows[].tcp``)."""
        smp = self.sampler
        if smp is None:
            return
        from nodes.tcpctl.observe import conn_summary, out_of_range_episodes

        res.summary["tcp_cc_faults"] = sum(out_of_range_episodes(rows) for rows in smp.samples.values())

        for fl, fs in zip(flows, res.summary["flows"], strict=True):
            if fl.proto != "tcp":
                continue
            rows = [r for r in smp.samples.get(node_label(fl.src), []) if r["conn"].endswith(f":{fl.port}")]
            by_conn: dict[str, list[dict[str, Any]]] = {}
            for r in rows:
                by_conn.setdefault(r["conn"], []).append(r)
            if not by_conn:
                continue
            data = max(by_conn, key=lambda c: int(by_conn[c][-1].get("bytes_acked", 0) or 0))
            fs["tcp"] = {"conn": data, **conn_summary(by_conn[data])}

    # ------------------------------------------------------------------ teardown
    def summarise_estimator(self, flows: list[traffic.Flow], res: Results, run_id: str) -> None:
        """Per TCP flow with the run's BPF side loaded: the kernel's RTT estimator error over the
        data connection (``flows[].tcp.srtt_error``, nodes.tcpctl.observe.srtt_error), read from
        the sender's ``tcpctl_st`` entry before the maps are unpinned."""
        from nodes.tcpctl import kernel as K
        from nodes.tcpctl.observe import srtt_error

        try:
            faults = K.cc_faults(run_id)
        except OSError:
            faults = {}
        if faults:
            res.summary["tcp_cc_repairs"] = sum(sum(c.values()) for c in faults.values())
            res.summary["tcp_cc_repairs_by_cc"] = faults
        try:
            maps = K.Maps(run_id)
        except OSError:
            return
        try:
            states = [(str(k), maps.state(k)) for k in maps.keys()]
        finally:
            maps.close()
        for fl, fs in zip(flows, res.summary["flows"], strict=True):
            if fl.proto != "tcp":
                continue
            src = f"{station_ip(fl.src)}:" if isinstance(fl.src, int) else ""
            mine = [
                (c, st)
                for c, st in states
                if st is not None and c.endswith(f":{fl.port}") and c.startswith(src)
            ]
            data = fs.get("tcp", {}).get("conn")
            best = [m for m in mine if m[0] == data] or sorted(mine, key=lambda m: -int(m[1]["rtt_err_n"]))
            if best and (err := srtt_error(best[0][1], K.RTT_ERR_UNIT_US)):
                fs.setdefault("tcp", {})["srtt_error"] = {
                    "conn": best[0][0],
                    **err,
                    "rtt_callbacks": int(best[0][1]["n_rtt"]),
                }

    def finalize(self, res: Results, station_ids: list[int], flows: list[traffic.Flow]) -> None:
        """Router and medium counters into the summary (whatever the run got to write)."""
        total = 0
        found = False
        snaps = []
        for sid in station_ids:
            c = read_json(res.dir / "routers" / f"sta{sid}.counters.json")
            if c is not None:
                found = True
                snaps.append(c)
                total += int((c.get("counters") or {}).get("routing_packets", 0))
        res.summary["routing_packets"] = total if found else None
        net = network_totals(snaps)
        res.summary["network"] = net
        res.summary["packet_loss_pct"] = net["packet_loss_pct"]
        res.summary["false_link_failure_pct"] = net["false_link_failure_pct"]
        mc = read_json(res.dir / "medium" / "counters.json")
        if mc is not None:
            res.summary["medium_counters"] = "medium/counters.json"
        res.summary.update(medium_summary(mc))
        if res.summary.get("complete"):
            explain_timeouts(res)
        self.validity = judge(self.measurements(mc, snaps, flows, res), self.thresholds)
        res.summary["valid"] = self.validity.valid
        res.summary["validity"] = self.validity.to_dict()
        res.summary["teardown_at"] = time.time()
        res.save_summary()

    def measurements(
        self,
        medium: dict[str, Any] | None,
        routers: list[dict[str, Any]],
        flows: list[traffic.Flow],
        res: Results | None,
    ) -> Measurements:
        """What this run recorded about real time (testbed/validity.py), from its counters files."""
        ml = medium_lag(medium, self.thresholds.medium_late_ms) if medium else None
        rl = router_lag(routers)
        iperf3 = []
        for fl in flows:
            iperf3 += [traffic.load_json(fl.client_json), traffic.load_json(fl.server_json)]
        observer = (res.summary.get("observer") or {}).get("cpu_s", 0.0) if res else 0.0
        tun = None
        if self._tun_drops_end is not None:
            tun = max(0, self._tun_drops_end - self._tun_drops_base)
        sock = None
        if ml is not None or rl is not None:
            sock = (ml.socket_drops if ml else 0) + (rl.send_dropped if rl else 0)
        busy = self.host_load.busy_share if self.host_load else None
        pressure = self.host_load.pressure_share if self.host_load else None
        cpu = run_cpu_s(medium, routers, iperf3, float(observer or 0.0))
        return Measurements(
            medium_lag_p99_ms=ml.p99_ms if ml else None,
            medium_lag_max_ms=ml.max_ms if ml else None,
            medium_late_share=ml.late_share if ml else None,
            medium_events=ml.events if ml else 0,
            router_lag_p99_ms=rl.p99_ms if rl else None,
            router_lag_max_ms=rl.max_ms if rl else None,
            router_lag_station=rl.station if rl else None,
            tun_drops=tun,
            medium_socket_drops=sock,
            host_cpu_busy_share=None if busy is None else round(busy, 4),
            cpu_pressure_share=None if pressure is None else round(pressure, 4),
            run_cpu_s=None if cpu is None else round(cpu, 3),
            tcp_readback=tuple(str(m) for m in self.tcp_mismatches),
        )

    def tcp_flow_readback(self, flows: list[traffic.Flow], res: Results) -> None:
        """What each TCP flow's data connection negotiated (its first ESTABLISHED tcp_info
        sample: ``flows[].tcp.negotiated``), checked against the profile and the flow's MSS."""
        knobs = self.scenario.tcp.effective.knobs
        readback = res.summary.setdefault("tcp_profile", {}).setdefault("readback", {})
        smp = self.sampler
        if smp is None:
            readback["flows"] = "not read (no tcp_info samples: tcpctl.observe_interval_ms is 0)"
            return
        found: list[Mismatch] = []
        checked = 0
        for fl, fs in zip(flows, res.summary["flows"], strict=True):
            conn = (fs.get("tcp") or {}).get("conn") if fl.proto == "tcp" else None
            if conn is None:
                continue
            rows = [r for r in smp.samples.get(node_label(fl.src), []) if r["conn"] == conn]
            first = first_established(rows).get(conn)
            if first is None:
                continue
            spec = fl.spec
            assert isinstance(spec, TcpFlow)  # only TCP flows have a data connection
            fs["tcp"]["negotiated"] = {k: first.get(k) for k in NEGOTIATED_FIELDS}
            found += flow_mismatches(f"{fl.id} {conn}", first, knobs, spec.mss, fl.cc_name or spec.cc)
            checked += 1
        readback["flows"] = {"checked": checked, "mismatches": [str(m) for m in found]}
        self.tcp_mismatches += found


def explain_timeouts(res: Results) -> None:
    """A cause for every TCP timeout (testbed.explain): ``explain.json`` and the summary's
    ``timeouts_by_cause``; a run without a trace (routing.trace off) gets its reason."""
    from testbed import explain

    try:
        data, expl, rep = explain.analyze(res.dir)
    except explain.RunDirError as exc:
        res.summary["timeouts_by_cause"] = None
        res.summary["explain_error"] = str(exc)
        return
    except Exception as exc:  # an analysis bug must not lose the run's summary
        res.summary["timeouts_by_cause"] = None
        res.summary["explain_error"] = f"testbed.explain failed: {exc!r}"
        return
    explain.write_report(res.dir, rep)
    res.summary["timeouts_by_cause"] = rep["by_cause"]
    res.summary["explain"] = "explain.json"


def network_totals(snapshots: list[dict[str, Any]]) -> dict[str, Any]:
    """Network-layer totals over the routers' counters files (docs/orchestrator.md, summary.json).

    ``packet_loss_pct``: 100 x (1 - delivered / originated) over the IP packets the stations'
    kernels sent into the MANET (TCP data and ACKs, UDP), i.e. lost in the network or still in it
    at the end; Klemm 2004's packet loss ratio. ``false_link_failure_pct``: the share of failed
    unicast transmissions (retry limit reached, reported to routing as a broken link) whose
    ground-truth cause was a collision or channel error rather than the receiver being out of
    range (``FALSE_FAILURE_CAUSES``). None where the denominator is 0.
    """
    orig = deliv = fwd = failed = 0
    causes: dict[str, int] = {}
    drops: dict[str, int] = {}
    for snap in snapshots:
        c = snap.get("counters") or {}
        orig += int(c.get("data_originated", 0))
        deliv += int(c.get("data_delivered", 0))
        fwd += int(c.get("data_forwarded", 0))
        mac = c.get("mac") or {}
        failed += int(mac.get("tx_failed", 0))
        for k, v in mac.items():
            if k.startswith("failed_cause_"):
                cause = k.removeprefix("failed_cause_")
                causes[cause] = causes.get(cause, 0) + int(v)
        for k, v in (c.get("drops") or {}).items():
            drops[k] = drops.get(k, 0) + int(v)
    false = sum(causes.get(k, 0) for k in FALSE_FAILURE_CAUSES)
    return {
        "data_originated": orig,
        "data_delivered": deliv,
        "data_forwarded": fwd,
        "drops": dict(sorted(drops.items())),
        "link_failures": failed,
        "link_failures_by_cause": dict(sorted(causes.items())),
        "packet_loss_pct": round(100.0 * (1.0 - deliv / orig), 3) if orig else None,
        "false_link_failure_pct": round(100.0 * false / failed, 3) if failed else None,
    }


def rts_one_attempt_pct(histogram: Mapping[str, Any] | None) -> float | None:
    """Klemm 2004 §5.3 (Fig. 13): of the unicast frames sent with an RTS/CTS handshake (acknowledged
    or dropped at the retry limit), the share that needed a single RTS attempt, %. ``histogram``
    is the medium's ``rts_attempts_histogram`` (RTS attempts -> frames, medium/counters.json); the
    frames sent without RTS (attempts 0: below the RTS threshold) are not in the denominator.
    None when no frame used RTS."""
    if not histogram:
        return None
    counts: dict[int, int] = {}
    for k, v in histogram.items():
        try:
            attempts, frames = int(k), int(v)
        except (TypeError, ValueError):
            continue
        if attempts >= 1 and frames > 0:
            counts[attempts] = counts.get(attempts, 0) + frames
    total = sum(counts.values())
    return round(100.0 * counts.get(1, 0) / total, 3) if total else None


def medium_summary(medium_counters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The summary.json fields derived from the medium's counters (``medium/counters.json``), also
    for a run directory written before a field existed (``experiments.rows`` backfill)."""
    mc = medium_counters or {}
    return {"rts_one_attempt_pct": rts_one_attempt_pct(mc.get("rts_attempts_histogram"))}
