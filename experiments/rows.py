"""Results that last: one CSV row per run in ``docs/results/data/<experiment>.csv``, kept in git.

Issue 10, item 4: "The per-run summary row of every sweep (point, seed, validity, the metrics, git
revision, host; no pcaps or logs) is written to a text file under version control, one row per
run, appended as runs complete. The runner treats rows already there as complete (so a sweep
resumes on a new machine), and ``experiments.aggregate`` / ``compare`` work from these files alone."

The file is the record of every run the sweep paid for, valid or not: an invalid run (real time
did not hold, ``testbed.validity``) is a row with ``valid = false`` and its reasons, so the number
of re-runs is in the file too; only valid rows are aggregated.

Format: a header, then one row per run. Columns: ``BASE_COLS``, one column per axis of the sweep
(labels as ``experiments.spec.label`` writes them), ``RUN_COLS``, the metrics
(``experiments.aggregate.METRICS``), ``TAIL_COLS``; the last column, ``check``, is the CRC-32 of
the row's other fields, so a row cut short by a killed process is recognised and skipped.

Appending (``RowStore.append``) takes an exclusive ``flock`` on a lock file beside the CSV, repairs
a cut last line (a row without its newline gets one, and is then reported as cut on load), writes
the row with one ``write`` and ``fsync``s. Reading (``RowStore.load``) reports and skips: cut or
corrupted rows (wrong field count or check), rows of another sweep definition (a point id the
sweep does not have), and duplicates (a second valid row for a point id: the first one counts).
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import math
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from experiments.rundirs import write_text_atomic
from testbed.results import ROWS_DIR

#: Where the rows live, relative to the repository root (the working directory of every command).
DATA_DIR: Final = Path(ROWS_DIR)

BASE_COLS: Final = ("experiment", "point_id", "index")
RUN_COLS: Final = ("seed", "attempt", "valid", "invalid_reasons")
#: The run's TCP profile (``summary.json`` ``tcp_profile``: its name and settings digest,
#: topologies/tcp_profiles.py), right after ``RUN_COLS``: rows of different TCP are told apart.
#: A file from before profiles gets them added with ``LEGACY_PROFILE`` and no digest.
TCP_COLS: Final = ("tcp_profile", "tcp_digest")
LEGACY_PROFILE: Final = "legacy"
#: The run's routing profile (``summary.json`` ``routing_profile``: DSR and AODV only, its name and
#: the digest of the parameters the cores ran, nodes/protocols/profiles.py), after ``TCP_COLS``;
#: empty for static routing. A file from before routing profiles gets them with
#: ``LEGACY_PROFILE`` and no digest (its DSR and AODV rows ran the legacy behaviour).
ROUTING_COLS: Final = ("routing_profile", "routing_digest")
#: The run's behaviour key (experiments/behaviour.py: the code every run executes, the protocols and
#: extensions its sweep names, its scenario files), after ``ROUTING_COLS``: a sweep pools only
#: the rows of the current key. A file from before keys gets the column empty, filled from each
#: row's revision by ``python -m experiments.behaviour relabel``.
BEHAVIOUR_COLS: Final = ("behaviour",)
#: Validity signals kept with every row (``summary.json`` ``validity``), so that the cost and the
#: real-time margin of a sweep can be studied from git alone.
SIGNAL_COLS: Final = (
    "medium_lag_p99_ms",
    "medium_lag_max_ms",
    "router_lag_p99_ms",
    "host_cpu_busy_share",
    "cpu_pressure_share",
    "run_cpu_s",
)
TAIL_COLS: Final = ("flows", "duration_s", "wall_s", "run_id", "revision", "host", "finished_at", "check")
#: How the ``revision`` column marks a run made from a working tree with uncommitted changes to
#: tracked files (outside the rows folder): ``<12-hex revision>-dirty``.
DIRTY_SUFFIX: Final = "-dirty"
ROW_COLUMNS: Final = frozenset(
    (*BASE_COLS, *RUN_COLS, *TCP_COLS, *ROUTING_COLS, *BEHAVIOUR_COLS, *SIGNAL_COLS, *TAIL_COLS)
)
"""The columns every rows file has: no sweep axis may take one of these names (the axis' column
would shadow it, e.g. an axis ``flows`` and the per-flow column ``flows``)."""


class RowsError(Exception):
    """A rows file that cannot be appended to (its header does not fit the sweep)."""


TRANSFER_TIME_LB: Final = "transfer_time_lb_s"
"""A metric derived from the row, not a column: ``transfer_time_s``, or for a run whose file never
arrived (``flows_failed`` > 0, no transfer time) the run's duration, the limit that ended it. A
right-censored run then counts as at least its limit instead of leaving means and paired
comparisons, where dropping it would favour the variant that failed to finish."""


RTO_PER_100MB: Final = "rto_per_100mb"
"""A metric derived from the row, not a column: TCP timeouts per 100 Mb (1e8 bits) delivered,
``tcp_timeouts_total`` x 1e8 / (8 x ``bytes_received_total``): Cohen & Levin's "number of RTOs
during 100Mb transmission" (Fig. 6(a)) from our shorter transfers (Cohen: 2 MB, 16 Mb); NaN for
a run that delivered nothing."""


@dataclass(frozen=True, slots=True)
class FlowRow:
    """One TCP flow of a run."""

    throughput_bps: float
    tcp_timeouts: float
    retransmits: float


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of a sweep point, as kept in git."""

    experiment: str
    point_id: str
    index: int
    params: dict[str, str]  # axis -> label
    seed: int
    attempt: int
    valid: bool
    invalid_reasons: tuple[str, ...]
    metrics: dict[str, float]
    signals: dict[str, float]
    flows: tuple[FlowRow, ...]
    duration_s: float
    wall_s: float
    run_id: str
    revision: str
    host: str
    finished_at: str
    tcp_profile: str = LEGACY_PROFILE
    tcp_digest: str = ""
    routing_profile: str = ""
    routing_digest: str = ""
    behaviour: str = ""

    def metric(self, name: str) -> float:
        if name == TRANSFER_TIME_LB and name not in self.metrics:
            return self._transfer_time_lb()
        if name == RTO_PER_100MB and name not in self.metrics:
            delivered = self.metrics.get("bytes_received_total", math.nan)
            if not delivered > 0:
                return math.nan
            return self.metrics.get("tcp_timeouts_total", math.nan) * 1e8 / (8.0 * delivered)
        return self.metrics.get(name, math.nan)

    def censored(self, name: str) -> bool:
        """Whether ``metric(name)`` is a bound and not a measurement (an undelivered file)."""
        return (
            name == TRANSFER_TIME_LB
            and math.isnan(self.metric("transfer_time_s"))
            and not math.isnan(self.metric(name))
        )

    def _transfer_time_lb(self) -> float:
        t = self.metrics.get("transfer_time_s", math.nan)
        if not math.isnan(t):
            return t
        if self.metrics.get("flows_failed", 0.0) > 0 and self.duration_s > 0:
            return self.duration_s  # the file was still arriving when the run's limit ended it
        return math.nan


CC_FAULTS: Final = "tcp_cc_faults"
"""The metric that makes a run not count although real time held: its TCP state went out of range
(a BPF congestion control fault, docs/tcpctl.md), so its TCP was not the TCP under study."""

CC_REPAIRS: Final = "tcp_cc_repairs"
"""Out-of-range values the BPF repair put back. Each one is a fault too: the kernel skipped our
programs when it came, so the repair came late (up to one round trip of ACKs, docs/tcpctl.md
"The repair is late"), even when no 100 ms sample caught the state out of range."""


def cc_fault_reason(metrics: Mapping[str, float]) -> str | None:
    """The invalid reason of a run whose TCP state went out of range (sampled, or put back by the
    BPF repair), else None."""
    n = metrics.get(CC_FAULTS, math.nan)
    if not math.isnan(n) and n > 0:
        return f"TCP state out of range in {int(n)} episode(s) (BPF congestion control fault, docs/tcpctl.md)"
    r = metrics.get(CC_REPAIRS, math.nan)
    if not math.isnan(r) and r > 0:
        return f"TCP state out of range, repaired {int(r)} time(s) (BPF congestion control fault, docs/tcpctl.md)"
    return None


def fmt_num(x: float) -> str:
    """A number as the rows and CSVs write it: integers plainly, others to 6 significant digits,
    NaN as the empty string."""
    if math.isnan(x):
        return ""
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _num(text: str) -> float:
    try:
        return float(text) if text != "" else math.nan
    except ValueError:
        return math.nan


def _csv_line(fields: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue()


def _check(fields: Sequence[str]) -> str:
    return f"{zlib.crc32(_csv_line(fields).encode('utf-8')):08x}"


def _checked(line: str, ncols: int) -> list[str] | None:
    """The fields of a complete, unaltered row (its end of line, ``ncols`` fields, its ``check``);
    None for a row cut short or altered."""
    if not line.endswith("\n"):
        return None
    fields = next(csv.reader([line]), [])
    return fields if len(fields) == ncols and _check(fields[:-1]) == fields[-1] else None


def check_reason(reason: str, where: str) -> None:
    """An invalid reason kept in a rows cell must be one printable line without '; ' (which
    separates a row's reasons); ``RowsError`` naming ``where`` otherwise."""
    if not reason.strip() or not reason.isprintable() or "; " in reason:
        raise RowsError(f"{where}: an invalid reason must be one printable line without '; ': {reason!r}")


def header(axes: Sequence[str], metrics: Sequence[str]) -> list[str]:
    cols = [
        *BASE_COLS,
        *axes,
        *RUN_COLS,
        *TCP_COLS,
        *ROUTING_COLS,
        *BEHAVIOUR_COLS,
        *metrics,
        *SIGNAL_COLS,
        *TAIL_COLS,
    ]
    twice = sorted({c for c in cols if cols.count(c) > 1})
    if twice:
        raise RowsError(f"column {twice[0]!r} twice in a rows header (an axis named like a column)")
    return cols


def encode(record: RunRecord, columns: Sequence[str]) -> str:
    """The CSV line of ``record`` for a file with these ``columns`` (its header)."""
    flows = json.dumps(
        [[f.throughput_bps, f.tcp_timeouts, f.retransmits] for f in record.flows], separators=(",", ":")
    ).replace("NaN", "null")
    fixed = {
        "experiment": record.experiment,
        "point_id": record.point_id,
        "index": str(record.index),
        "seed": str(record.seed),
        "attempt": str(record.attempt),
        "valid": "true" if record.valid else "false",
        "invalid_reasons": "; ".join(record.invalid_reasons),
        "tcp_profile": record.tcp_profile,
        "tcp_digest": record.tcp_digest,
        "routing_profile": record.routing_profile,
        "routing_digest": record.routing_digest,
        "behaviour": record.behaviour,
        "flows": flows,
        "duration_s": fmt_num(record.duration_s),
        "wall_s": fmt_num(record.wall_s),
        "run_id": record.run_id,
        "revision": record.revision,
        "host": record.host,
        "finished_at": record.finished_at,
    }
    values: list[str] = []
    for col in columns[:-1]:
        if col in fixed:
            values.append(fixed[col])
        elif col in record.params:
            values.append(record.params[col])
        elif col in record.metrics:
            values.append(fmt_num(record.metrics[col]))
        elif col in record.signals:
            values.append(fmt_num(record.signals[col]))
        else:
            values.append("")
    return _csv_line([*values, _check(values)])


def _flows(text: str) -> tuple[FlowRow, ...]:
    try:
        data = json.loads(text) if text else []
    except ValueError:
        return ()
    out: list[FlowRow] = []
    for f in data if isinstance(data, list) else []:
        vals = [math.nan if v is None else float(v) for v in f] if isinstance(f, list) else []
        if len(vals) == 3:
            out.append(FlowRow(*vals))
    return tuple(out)


def decode(values: Sequence[str], columns: Sequence[str], axes: Sequence[str]) -> RunRecord:
    """A record from one row's fields (checked already)."""
    row = dict(zip(columns, values, strict=True))
    known = (
        set(BASE_COLS)
        | set(RUN_COLS)
        | set(TCP_COLS)
        | set(ROUTING_COLS)
        | set(BEHAVIOUR_COLS)
        | set(SIGNAL_COLS)
        | set(TAIL_COLS)
        | set(axes)
    )
    metrics = {c: _num(v) for c, v in row.items() if c not in known}
    reasons = tuple(r for r in row["invalid_reasons"].split("; ") if r)
    fault = cc_fault_reason(metrics)
    if fault is not None and fault not in reasons:  # a row written valid before faults were seen
        reasons = (*reasons, fault)
    return RunRecord(
        experiment=row["experiment"],
        point_id=row["point_id"],
        index=int(row["index"]),
        params={a: row[a] for a in axes},
        seed=int(row["seed"]),
        attempt=int(row["attempt"] or 1),
        valid=row["valid"] == "true" and fault is None,
        invalid_reasons=reasons,
        metrics=metrics,
        signals={c: _num(row[c]) for c in SIGNAL_COLS if c in row},
        flows=_flows(row.get("flows", "")),
        duration_s=_num(row.get("duration_s", "")),
        wall_s=_num(row.get("wall_s", "")),
        run_id=row.get("run_id", ""),
        revision=row.get("revision", ""),
        host=row.get("host", ""),
        finished_at=row.get("finished_at", ""),
        tcp_profile=row.get("tcp_profile") or LEGACY_PROFILE,
        tcp_digest=row.get("tcp_digest", ""),
        routing_profile=row.get("routing_profile", LEGACY_PROFILE),
        routing_digest=row.get("routing_digest", ""),
        behaviour=row.get("behaviour", ""),
    )


def axes_of(columns: Sequence[str]) -> list[str]:
    """The axis columns of a rows file: those between ``index`` and ``seed``."""
    try:
        return list(columns[columns.index("index") + 1 : columns.index("seed")])
    except ValueError:
        return []


@dataclass
class Loaded:
    """What ``RowStore.load`` found: every well-formed record (valid or not, in file order), the
    valid ones that count (one per point id) and what was skipped, with the reason."""

    records: list[RunRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def counted(self, behaviour: str | None = None) -> list[RunRecord]:
        """The first valid record of each point id, in file order (the ones aggregation uses);
        with ``behaviour``, of the records with that behaviour key only (a sweep pools nothing else)."""
        seen: set[str] = set()
        out: list[RunRecord] = []
        for r in self.records:
            if behaviour is not None and r.behaviour != behaviour:
                continue
            if r.valid and r.point_id not in seen:
                seen.add(r.point_id)
                out.append(r)
        return out

    def invalid(self) -> list[RunRecord]:
        return [r for r in self.records if not r.valid]


class RowStore:
    """``<data_dir>/<experiment>.csv``: append one run at a time, load with checks."""

    def __init__(self, experiment: str, data_dir: str | Path = DATA_DIR) -> None:
        self.experiment = experiment
        self.path = Path(data_dir) / f"{experiment}.csv"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def columns(self) -> list[str] | None:
        """The file's header, or None if there is no file yet."""
        try:
            with open(self.path, newline="", encoding="utf-8") as fh:
                first = fh.readline()
        except FileNotFoundError:
            return None
        return next(csv.reader([first]), None) if first else None

    def append(self, record: RunRecord, axes: Sequence[str], metrics: Sequence[str]) -> None:
        """Append ``record`` (one ``write``, fsync'd, under the lock). A new file gets the header of
        ``axes`` and ``metrics``; an existing one keeps its own header, which must have the same
        axes (else ``RowsError``: the rows belong to another sweep definition). Metrics the header
        lacks are not written (the header is extended by ``rewrite_header`` only)."""
        with self._locked():
            cols = self.columns()
            if cols is not None:
                cols = self._add_missing_groups(cols)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if cols is None:
                    cols = header(axes, metrics)
                    os.write(fd, _csv_line(cols).encode("utf-8"))
                elif axes_of(cols) != list(axes):
                    raise RowsError(
                        f"{self.path}: its axes {axes_of(cols)} are not the sweep's {list(axes)}: "
                        "the rows belong to another sweep definition (give the experiment another name)"
                    )
                size = os.fstat(fd).st_size
                if size:
                    with open(self.path, "rb") as fh:
                        fh.seek(size - 1)
                        if fh.read(1) != b"\n":  # a row cut short by a killed writer: end it
                            os.write(fd, b"\n")
                os.write(fd, encode(record, cols).encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)

    def load(self, point_ids: Mapping[str, int] | None = None) -> Loaded:
        """Every well-formed row. ``point_ids`` (the sweep's point id -> index), if given, rejects
        rows of another sweep definition."""
        out = Loaded()
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return out
        lines = text.splitlines(keepends=True)
        if not lines:
            return out
        cols = next(csv.reader([lines[0]]), [])
        if cols[-1:] != ["check"] or "point_id" not in cols:
            out.problems.append(f"{self.path}:1: not a rows file (header without point_id/check)")
            return out
        axes = axes_of(cols)
        valid_seen: dict[str, int] = {}
        for n, line in enumerate(lines[1:], start=2):
            where = f"{self.path}:{n}"
            if not line.endswith("\n"):
                out.problems.append(f"{where}: row cut short (no end of line): skipped")
                continue
            fields = _checked(line, len(cols))
            if fields is None:
                out.problems.append(f"{where}: row cut short or altered (field count or check): skipped")
                continue
            try:
                rec = decode(fields, cols, axes)
            except (ValueError, KeyError) as exc:
                out.problems.append(f"{where}: unreadable row ({exc}): skipped")
                continue
            if rec.experiment != self.experiment:
                out.problems.append(f"{where}: row of experiment {rec.experiment!r}: skipped")
                continue
            if point_ids is not None and rec.point_id not in point_ids:
                out.problems.append(
                    f"{where}: point {rec.point_id} (seed {rec.seed}) is not a point of this sweep "
                    "definition: skipped"
                )
                continue
            if rec.valid:
                if rec.point_id in valid_seen:
                    out.problems.append(
                        f"{where}: duplicate of the valid row at line {valid_seen[rec.point_id]} "
                        f"(point {rec.point_id}, seed {rec.seed}): skipped"
                    )
                    continue
                valid_seen[rec.point_id] = n
            out.records.append(rec)
        return out

    def _rewrite(self, lines: list[str]) -> None:
        """Replace the file by ``lines`` atomically; the caller holds the lock, so an appender
        waits and then appends to the new file."""
        write_text_atomic(self.path, "".join(lines), mode=0o644)

    def add_columns(self, metrics: Sequence[str]) -> list[str]:
        """Give the file a column for each of ``metrics`` it lacks (after its last metric column,
        before the validity signals), empty in the rows already there; returns the columns added.
        Well-formed rows get their check recomputed; a cut or altered row is kept as it was (load
        still skips it). A sweep running with the old header appends to the new one (``append``
        reads the header under the same lock)."""
        with self._locked():
            cols = self.columns()
            if cols is None:
                return []
            new = [m for m in metrics if m not in cols]
            if not new:
                return []
            at = cols.index(SIGNAL_COLS[0]) if SIGNAL_COLS[0] in cols else len(cols) - len(TAIL_COLS)
            self._insert_columns(cols, at, new, [""] * len(new))
            return new

    def _add_missing_groups(self, cols: list[str]) -> list[str]:
        """Give a file from before TCP profiles, routing profiles or behaviour keys the column
        groups it lacks, in that order. The caller holds the lock; returns the new header."""
        if not set(TCP_COLS) <= set(cols):
            cols = self._add_tcp_cols(cols)
        if not set(ROUTING_COLS) <= set(cols):
            cols = self._add_routing_cols(cols)
        if not set(BEHAVIOUR_COLS) <= set(cols):
            cols = self._add_behaviour_cols(cols)
        return cols

    def _add_tcp_cols(self, cols: list[str]) -> list[str]:
        """Give a file from before TCP profiles the ``TCP_COLS`` (after ``invalid_reasons``); its
        rows ran the legacy TCP, so they read ``LEGACY_PROFILE`` with no digest. The caller holds
        the lock; returns the new header."""
        return self._insert_columns(
            cols, cols.index("invalid_reasons") + 1, list(TCP_COLS), [LEGACY_PROFILE, ""]
        )

    def _add_routing_cols(self, cols: list[str]) -> list[str]:
        """Give a file from before routing profiles the ``ROUTING_COLS`` (after ``TCP_COLS``); its
        rows ran the legacy routing code, so they read ``LEGACY_PROFILE`` with no digest. The
        caller holds the lock; returns the new header."""
        return self._insert_columns(
            cols, cols.index(TCP_COLS[-1]) + 1, list(ROUTING_COLS), [LEGACY_PROFILE, ""]
        )

    def _add_behaviour_cols(self, cols: list[str]) -> list[str]:
        """Give a file from before behaviour keys the ``BEHAVIOUR_COLS`` (after ``ROUTING_COLS``),
        empty (``fill_behaviour`` labels them). The caller holds the lock; returns the new header."""
        return self._insert_columns(cols, cols.index(ROUTING_COLS[-1]) + 1, list(BEHAVIOUR_COLS), [""])

    def fill_behaviour(self, label: Callable[[str, str], str], overwrite: bool = False) -> int:
        """Set every empty ``behaviour`` cell (every cell with ``overwrite``) to
        ``label(revision, run_id)``, adding the column to a file from before keys first; returns
        the number of rows labelled."""
        with self._locked():
            cols = self.columns()
            if cols is None:
                return 0
            self._add_missing_groups(cols)

        def fill_row(cols: list[str], vals: list[str]) -> int:
            at = cols.index("behaviour")
            if vals[at] and not overwrite:
                return 0
            new = label(vals[cols.index("revision")], vals[cols.index("run_id")])
            changed = int(new != vals[at])
            vals[at] = new
            return changed

        return self._edit(fill_row)

    def _insert_columns(self, cols: list[str], at: int, new: list[str], fill: list[str]) -> list[str]:
        """Rewrite the file with ``new`` columns at ``at``, ``fill`` in its well-formed rows (their
        checks recomputed; a cut or altered row is kept as it was, and load still skips it). The
        caller holds the lock; returns the new header."""
        out_cols = [*cols[:at], *new, *cols[at:]]
        lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        out = [_csv_line(out_cols)]
        for line in lines[1:]:
            fields = _checked(line, len(cols))
            if fields is None:
                out.append(line if line.endswith("\n") else line + "\n")
                continue
            values = [*fields[:at], *fill, *fields[at:-1]]
            out.append(_csv_line([*values, _check(values)]))
        self._rewrite(out)
        return out_cols

    def _edit(self, edit: Callable[[list[str], list[str]], int]) -> int:
        """Rewrite well-formed rows under the lock: ``edit(columns, values)`` changes the row's
        values (all but ``check``) in place and returns how many changes it made; a changed row
        gets its check recomputed, the others (and cut or altered rows) are kept byte for byte.
        Returns the total of the changes; the file is rewritten only if there were any."""
        with self._locked():
            cols = self.columns()
            if cols is None or "run_id" not in cols:
                return 0
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
            out = lines[:1]
            total = 0
            for line in lines[1:]:
                fields = _checked(line, len(cols))
                vals = list(fields[:-1]) if fields is not None else []
                n = edit(cols, vals) if fields is not None else 0
                out.append(_csv_line([*vals, _check(vals)]) if n else line)
                total += n
            if total:
                self._rewrite(out)
            return total

    def fill(self, values: Mapping[str, Mapping[str, float]]) -> int:
        """Set empty metric cells from ``values`` (run id -> metric -> value) in the rows of those
        runs; a cell that has a value is never changed, a NaN value is not written. Returns the
        number of cells filled. The rows' checks are recomputed; other rows are kept byte for byte."""

        def fill_row(cols: list[str], vals: list[str]) -> int:
            new = values.get(vals[cols.index("run_id")], {})
            filled = 0
            for i, col in enumerate(cols[:-1]):
                x = new.get(col)
                if vals[i] == "" and x is not None and not math.isnan(x):
                    vals[i] = fmt_num(x)
                    filled += 1
            return filled

        return self._edit(fill_row)

    def invalid_run_ids(self) -> frozenset[str]:
        """The run ids of the file's invalid rows (none if there is no file): runs whose folders an
        analysis of run directories must skip (``experiments.rundirs.valid_runs``)."""
        if self.columns() is None:
            return frozenset()
        return frozenset(r.run_id for r in self.load().invalid())

    def invalidate(self, run_ids: Sequence[str], reason: str) -> int:
        """Mark the valid rows of ``run_ids`` invalid with ``reason`` (a fault found after the runs:
        the rows stay, as every run paid for does, and the sweep runs their points again). The
        rows' checks are recomputed; other rows are kept byte for byte. Returns the number of rows
        changed."""
        check_reason(reason, str(self.path))
        wanted = set(run_ids)

        def mark(cols: list[str], vals: list[str]) -> int:
            valid_col, why_col = cols.index("valid"), cols.index("invalid_reasons")
            if vals[cols.index("run_id")] not in wanted or vals[valid_col] != "true":
                return 0
            vals[valid_col] = "false"
            vals[why_col] = "; ".join(r for r in (vals[why_col], reason) if r)
            return 1

        return self._edit(mark)
