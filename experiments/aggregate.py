"""Aggregate a sweep's runs: ``python -m experiments.aggregate EXPERIMENT [--data DIR] [--out results]``.

Reads only the experiment's rows, ``docs/results/data/<experiment>.csv`` (``experiments.rows``; kept
in git, so a new machine aggregates what another ran), counts the valid ones (one per point; invalid
runs and skipped rows are reported, never averaged in) and writes into ``results/<experiment>/``:

- ``aggregate.csv`` — one row per run: the point's parameters, the seed, run metrics (totals over
  the TCP flows; UDP cross traffic is left out) and, per TCP flow k, ``flow<k>_throughput_bps``,
  ``flow<k>_tcp_timeouts``, ``flow<k>_retransmits``.
- ``summary.csv`` — one row per point (parameters without the seed): for each metric the mean over
  seeds, the sample standard deviation and the 90 % and 95 % Student-t confidence half-widths.

A file is rewritten only when its content changes (so ``collect.yml`` can tell a change).

Metrics (``METRICS``): TCP timeouts come from the source station's ``TcpExtTCPTimeouts`` (nstat),
counted once per source station; ``rto_per_100_pkts`` divides them by the packets delivered
(bytes received / MSS), Klemm 2004's metric; ``transfer_time_s`` is, for flows that send a file
(``transfer_bytes``, Liu 2001's file transfer time), when the slowest receiver had its whole file
(testbed/xfer.py, to the receiver's end of file; NaN and a failed flow if one never had it), and
otherwise bytes received x 8 / throughput of the slowest flow.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pandas as pd

from experiments.rows import DATA_DIR, RTO_PER_100MB, TRANSFER_TIME_LB, RowStore, RunRecord, axes_of, fmt_num
from experiments.stats import Summary, summarize

#: Per-run metrics, in CSV column order, with their meaning.
METRICS: Final[dict[str, str]] = {
    "throughput_total_bps": "sum of the TCP flows' receiver throughput, bit/s",
    "throughput_per_flow_bps": "mean receiver throughput per TCP flow, bit/s",
    "tcp_timeouts_total": "TCP retransmission timeouts at the flows' source stations",
    "tcp_timeouts_per_flow": "tcp_timeouts_total / number of TCP flows",
    "retransmits_total": "TCP retransmitted segments (iperf3 sender)",
    "routing_packets": "routing packets sent and forwarded, all stations",
    "bytes_received_total": "bytes received by the TCP sinks",
    "rto_per_100_pkts": "TCP timeouts per 100 delivered packets",
    "transfer_time_s": "time until the slowest flow's receiver had its file (else: what it got), s",
    "flows_failed": "TCP flows without a throughput figure, or whose file never arrived",
    "packet_loss_pct": "IP packets the stations sent into the MANET and never delivered, % (summary.json)",
    "false_link_failure_pct": "failed unicasts whose receiver was in range (collision, channel error), %",
    "srtt_norm_var_s": "the kernel's RTT estimator error E[(SRTT - RTT)^2] / E[RTT] over the TCP flows' "
    "samples (Cohen & Levin Fig. 7(b)), s; needs the BPF side (tcpctl), else empty",
    "rts_one_attempt_pct": "unicast frames sent with RTS/CTS that needed one RTS attempt, % (Klemm 2004 "
    "Fig. 13; the medium's counters, all stations)",
    "tcp_aborts_total": "connections the TCP flows' source stations gave up on after their "
    "retransmissions timed out (nstat TcpExtTCPAbortOnTimeout): a flow that ended early; empty "
    "before it was recorded",
    "tcp_spurious_rtos_total": "of tcp_timeouts_total, the timeouts the kernel's F-RTO (RFC 5682) "
    "found spurious and undid (nstat TcpExtTCPSpuriousRTOs at the flows' source stations); empty "
    "before it was recorded",
    "tcp_real_timeouts_total": "tcp_timeouts_total - tcp_spurious_rtos_total: the timeouts that "
    "were not undone; empty before tcp_spurious_rtos_total was recorded",
    "tcp_max_rto_ms": "the largest RTO the kernel set on a TCP flow's data connection (its tcp_info "
    "samples, flows[].tcp.max_rto_ms), ms: shows an estimator inflated by RTT samples that span a "
    "recovery (ATCP's or an agent's own copies); empty without samples",
    "tcp_rto_p50_ms": "the median, over the TCP flows, of each data connection's median RTO at "
    "backoff 0 (the estimator's RTO over its tcp_info samples, flows[].tcp.p50_rto_ms), ms: "
    "tells an estimator inflated by an agent's copies from earlier repair; empty before it was "
    "recorded",
    "rto_policy_off_paper_pct": "of the kernel RTO expirations under ABRA or Fixed RTO (their "
    "extension's counters at every station), the share whose next RTO the kernel could not set to "
    "the paper's value (TCP_RTO_MAX_MS cannot go below 1 s: docs/fidelity.md 'ABRA backoff'), %; "
    "empty without such an extension or expiration",
    "tcp_cc_faults": "episodes in which the sampled TCP state was out of range (ssthresh above "
    "0x7fffffff or cwnd above 2^20: a BPF congestion control fault the repair did "
    "not catch first; docs/tcpctl.md): a run with any is not counted",
    "tcp_cc_repairs": "out-of-range ssthresh/cwnd values the BPF congestion controls put back "
    "(bpf/common.bpf.h cc_repair; each is a fault whose repair came late): a run with any is not "
    "counted; empty before the repair existed",
}


DERIVED_METRICS: Final[dict[str, str]] = {
    TRANSFER_TIME_LB: "transfer_time_s, or the run's duration when the file never arrived (a lower "
    "bound: right-censored runs count as at least the limit), s",
    RTO_PER_100MB: "tcp_timeouts_total per 100 Mb delivered (x 1e8 / (8 x bytes_received_total)): "
    "Cohen & Levin's RTOs during a 100 Mb transfer",
}
"""Metrics computed from a row's columns (``RunRecord.metric``), usable in claims and ``until``."""


def _num(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _mss_by_flow(scenario: Any) -> list[int]:
    try:
        return [int(f.get("mss", 1460)) for f in scenario["traffic"]["tcp"]]
    except (TypeError, KeyError, AttributeError):
        return []


def run_metrics(
    summary: Mapping[str, Any], scenario: Any = None
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Run metrics and per-TCP-flow metrics from a ``summary.json`` (and the run's ``scenario.json``)."""
    flows = [f for f in summary.get("flows") or [] if isinstance(f, dict) and f.get("proto", "tcp") == "tcp"]
    mss = _mss_by_flow(scenario)
    per_flow: list[dict[str, float]] = []
    delivered_pkts = 0.0
    transfer = math.nan
    file_missing = False
    failed = 0
    for k, f in enumerate(flows):
        thr, to, rtx, nbytes = (
            _num(f.get(x)) for x in ("throughput_bps", "tcp_timeouts", "retransmits", "bytes_received")
        )
        per_flow.append({"throughput_bps": thr, "tcp_timeouts": to, "retransmits": rtx})
        if math.isnan(thr):  # iperf3 may report an error at the end and still have measured
            failed += 1
        if not math.isnan(nbytes):
            delivered_pkts += nbytes / (mss[k] if k < len(mss) else 1460)
            if thr > 0 and "file_delivered" not in f:
                t = nbytes * 8 / thr
                transfer = t if math.isnan(transfer) else max(transfer, t)
        if "file_delivered" in f:  # a file transfer: when the receiver had the whole file
            if f.get("file_delivered"):
                t = _num(f.get("transfer_time_s"))
                transfer = t if math.isnan(transfer) else max(transfer, t)
            else:  # not in the run's time: no transfer time (and a failed flow), never a short one
                file_missing = True
                failed += 0 if math.isnan(thr) else 1
    if file_missing:
        transfer = math.nan
    n = len(flows)
    thr_total = (
        math.fsum(x["throughput_bps"] for x in per_flow if not math.isnan(x["throughput_bps"]))
        if n
        else math.nan
    )
    to_total = _sum_by_source(flows, "tcp_timeouts")  # a station's count, repeated by its flows
    rtx_vals = [x["retransmits"] for x in per_flow if not math.isnan(x["retransmits"])]
    routing = summary.get("routing_packets")
    if isinstance(routing, dict):  # per type or per station: the total
        routing = sum(_num(v) for v in routing.values() if not math.isnan(_num(v)))
    bytes_vals = [_num(f.get("bytes_received")) for f in flows]
    metrics = {
        "throughput_total_bps": thr_total,
        "throughput_per_flow_bps": thr_total / n if n else math.nan,
        "tcp_timeouts_total": to_total,
        "tcp_timeouts_per_flow": to_total / n if n else math.nan,
        "retransmits_total": math.fsum(rtx_vals) if rtx_vals else math.nan,
        "routing_packets": _num(routing),
        "bytes_received_total": math.fsum(b for b in bytes_vals if not math.isnan(b))
        if bytes_vals
        else math.nan,
        "rto_per_100_pkts": 100.0 * to_total / delivered_pkts if delivered_pkts > 0 else math.nan,
        "transfer_time_s": transfer,
        "flows_failed": float(failed),
        "packet_loss_pct": _num(summary.get("packet_loss_pct")),
        "false_link_failure_pct": _num(summary.get("false_link_failure_pct")),
        "srtt_norm_var_s": _srtt_norm_var(flows),
        "rts_one_attempt_pct": _num(summary.get("rts_one_attempt_pct")),
        "tcp_aborts_total": _sum_by_source(flows, "tcp_aborts"),
        "tcp_spurious_rtos_total": (spurious := _sum_by_source(flows, "tcp_spurious_rtos")),
        "tcp_real_timeouts_total": to_total - spurious,
        "tcp_max_rto_ms": max(
            (v for f in flows if not math.isnan(v := _num((f.get("tcp") or {}).get("max_rto_ms")))),
            default=math.nan,
        ),
        "tcp_rto_p50_ms": _median(
            [v for f in flows if not math.isnan(v := _num((f.get("tcp") or {}).get("p50_rto_ms")))]
        ),
        "tcp_cc_faults": _num(summary.get("tcp_cc_faults")),
        "tcp_cc_repairs": _num(summary.get("tcp_cc_repairs")),
    }
    return metrics, per_flow


RTO_POLICY_EXTENSIONS: Final = ("abra", "fixed_rto")
"""The extensions whose counters give ``rto_policy_off_paper_pct`` (nodes/extensions/_rto.py)."""


def rto_policy_metrics(router_counters: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``rto_policy_off_paper_pct`` from the routers' counters files (``sta<N>.counters.json``:
    ``extensions.<abra|fixed_rto>.counters`` ``timeouts`` and ``mismatches``)."""
    timeouts = mismatches = 0
    for c in router_counters:
        exts = c.get("extensions") if isinstance(c.get("extensions"), dict) else {}
        assert isinstance(exts, dict)
        for name in RTO_POLICY_EXTENSIONS:
            counters = (exts.get(name) or {}).get("counters") or {}
            timeouts += int(counters.get("timeouts", 0))
            mismatches += int(counters.get("mismatches", 0))
    return {"rto_policy_off_paper_pct": 100.0 * mismatches / timeouts if timeouts else math.nan}


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def _sum_by_source(flows: list[dict[str, Any]], key: str) -> float:
    """A per-station count that every flow of a source station repeats, summed once per source
    (NaN when no flow has it)."""
    by_src = {f.get("src"): _num(f.get(key)) for f in flows if not math.isnan(_num(f.get(key)))}
    return math.fsum(by_src.values()) if by_src else math.nan


def _srtt_norm_var(flows: list[dict[str, Any]]) -> float:
    """E[(SRTT - RTT)^2] / E[RTT] over all the flows' estimator samples (``flows[].tcp.srtt_error``,
    testbed.metrics): the flows' squared errors and RTTs pooled, weighted by their sample counts."""
    n = sq = rtt = 0.0
    for f in flows:
        e = (f.get("tcp") or {}).get("srtt_error") or {}
        k = _num(e.get("samples"))
        if math.isnan(k) or k <= 0:
            continue
        n += k
        sq += k * (_num(e.get("rmse_ms")) / 1e3) ** 2
        rtt += k * _num(e.get("mean_rtt_ms")) / 1e3
    return sq / rtt if n > 0 and rtt > 0 else math.nan


@dataclass
class Group:
    """The counted runs of one point over its seeds."""

    params: dict[str, str]  # axis -> label
    runs: list[RunRecord] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return sorted(r.seed for r in self.runs)

    def stat(self, metric: str) -> Summary:
        return summarize([r.metric(metric) for r in self.runs])

    def by_seed(self, metric: str) -> dict[int, float]:
        return {r.seed: r.metric(metric) for r in self.runs}

    def behaviour_by_seed(self) -> dict[int, str]:
        """Each seed's run's behaviour key (``experiments.behaviour``)."""
        return {r.seed: r.behaviour for r in self.runs}


def group_runs(rows: Iterable[RunRecord]) -> list[Group]:
    out: dict[tuple[tuple[str, str], ...], Group] = {}
    for r in rows:
        key = tuple(r.params.items())
        out.setdefault(key, Group(dict(r.params))).runs.append(r)
    return list(out.values())


@dataclass
class Rows:
    """An experiment's rows as aggregation sees them: the counted records (valid, one per point, in
    sweep order), the invalid ones (the re-runs they caused) and what was skipped and why."""

    experiment: str
    axes: list[str]
    counted: list[RunRecord]
    invalid: list[RunRecord]
    problems: list[str]


def load_rows(
    experiment: str, data_dir: str | Path = DATA_DIR, point_ids: Mapping[str, int] | None = None
) -> Rows:
    """The experiment's rows from ``<data_dir>/<experiment>.csv`` (``experiments.rows``).

    ``point_ids`` (a sweep's point id -> index) rejects rows of another sweep definition; without
    it, every well-formed row counts."""
    store = RowStore(experiment, data_dir)
    loaded = store.load(point_ids)
    counted = sorted(loaded.counted(), key=lambda r: (r.index, r.seed, r.point_id))
    return Rows(experiment, axes_of(store.columns() or []), counted, loaded.invalid(), loaded.problems)


def frame(rows: Rows) -> pd.DataFrame:
    """One row per counted run: point, axes, seed, metrics, per-flow columns (pandas)."""
    nflows = max((len(r.flows) for r in rows.counted), default=0)
    records = []
    for r in rows.counted:
        rec: dict[str, Any] = {"experiment": rows.experiment, "point_id": r.point_id, "index": r.index}
        rec.update({a: r.params.get(a, "") for a in rows.axes})
        rec.update({"seed": r.seed, "run_id": r.run_id, "revision": r.revision, "host": r.host})
        rec.update({"duration_s": r.duration_s, "n_flows": len(r.flows)})
        rec.update({m: r.metric(m) for m in METRICS})
        for k in range(nflows):
            f = r.flows[k] if k < len(r.flows) else None
            rec[f"flow{k + 1}_throughput_bps"] = f.throughput_bps if f else math.nan
            rec[f"flow{k + 1}_tcp_timeouts"] = f.tcp_timeouts if f else math.nan
            rec[f"flow{k + 1}_retransmits"] = f.retransmits if f else math.nan
        records.append(rec)
    return pd.DataFrame.from_records(records)


def _to_csv(df: pd.DataFrame) -> str:
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = [fmt_num(float(x)) for x in out[col]]
    text: str = out.to_csv(index=False, lineterminator="\n")
    return text


def aggregate_csv(rows: Rows) -> str:
    return _to_csv(frame(rows))


def summary_frame(rows: Rows) -> pd.DataFrame:
    """One row per point over its seeds: n_runs, seeds, and per metric mean, std, ci90, ci95."""
    out = []
    for g in group_runs(rows.counted):
        rec: dict[str, Any] = {"experiment": rows.experiment, **{a: g.params.get(a, "") for a in rows.axes}}
        rec["n_runs"] = len(g.runs)
        rec["seeds"] = " ".join(map(str, g.seeds))
        for m in METRICS:
            s = g.stat(m)
            rec.update({f"{m}_mean": s.mean, f"{m}_std": s.std, f"{m}_ci90": s.ci90, f"{m}_ci95": s.ci95})
        out.append(rec)
    return pd.DataFrame.from_records(out)


def summary_csv(rows: Rows) -> str:
    return _to_csv(summary_frame(rows))


def write_if_changed(path: Path, text: str) -> bool:
    """Replace ``path`` atomically with ``text`` unless it already holds exactly that; True if written."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def aggregate(rows: Rows, out_dir: Path) -> dict[Path, bool]:
    """Write ``aggregate.csv`` and ``summary.csv`` into ``out_dir``; each path and whether it changed."""
    if not rows.counted:
        return {}
    return {
        out_dir / "aggregate.csv": write_if_changed(out_dir / "aggregate.csv", aggregate_csv(rows)),
        out_dir / "summary.csv": write_if_changed(out_dir / "summary.csv", summary_csv(rows)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.aggregate",
        description="Write aggregate.csv and summary.csv from docs/results/data/<experiment>.csv.",
    )
    ap.add_argument("experiment", help="experiment name (its rows: <data>/<name>.csv)")
    ap.add_argument("--data", default=str(DATA_DIR), help=f"rows folder (default {DATA_DIR})")
    ap.add_argument(
        "--out", default="results", help="where <experiment>/aggregate.csv goes (default results)"
    )
    args = ap.parse_args(argv)
    rows = load_rows(args.experiment, args.data)
    for p in rows.problems:
        print(f"warning: {p}", file=sys.stderr)
    if not rows.counted:
        print(f"error: {RowStore(args.experiment, args.data).path}: no valid rows", file=sys.stderr)
        return 2
    written = aggregate(rows, Path(args.out) / args.experiment)
    for path, changed in written.items():
        print(
            f"{path}: {'written' if changed else 'unchanged'} ({len(rows.counted)} runs, "
            f"{len(rows.invalid)} invalid re-run, {len(rows.problems)} rows skipped)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
