"""How stale were the links a run's packets failed on: ground truth for every MAC give-up.

``python3 -m testbed.staleness results/<exp>/<run> [...] [--between A B]`` prints, per run, the
MAC give-ups whose last attempt the medium found out of range (``medium/trace.bin``,
docs/explain.md), split by how long before the give-up the link had left radio range. The
trajectories are the ones the medium ran (``medium/config.json``), and the range is the radio
preset's decode range (``topologies.radio``). Each give-up on link {a, b} is one of:

- ``fresh``: the link left range less than ``FRESH_S`` before. It broke while in use.
- ``undetected``: the link had been out of range for ``FRESH_S`` or more, and no give-up on it
  since it left range had detected the break. A route with that link was stale, and no one
  could have known: nothing had tried the link since.
- ``burst``: the first give-up on the same break came less than ``FRESH_S`` before. These are
  the packets queued behind it.
- ``reused``: the first give-up on the same break came ``FRESH_S`` or more before. The break was
  known at the link's end, and a packet was still routed over it. Only these can be prevented by
  telling other nodes about a detected break, which is the aim of Yu 2004's DSR-Update (s2.2)
  and of DSR's ROUTE ERRORs (RFC 4728 section 8.3.4).

Why it exists: the Yu 2004 runs (docs/results/notes/yu2004.md) needed to know whether the stale
routes that DSR-Update removes are what fails our flows. ``--between A B`` keeps the give-ups of
packets between stations A and B (either direction: a flow's data and its ACKs). ``--salvage``
(DSR runs) also reads each give-up's packet from the failing router's trace
(``routers/staN.trace.bin``) and counts how often it had been salvaged before (the Salvage field
of its Source Route option, RFC 4728 section 6.7): a packet salvaged over a route from a
forwarder's cache that is itself stale fails again.

Limits: the positions are the trajectories' alone. A scripted ``move`` event (the medium
config's ``events``) teleports a station, and this tool does not follow it, so a run with such
events gets wrong ages for that station's links. The range is the preset's decode range, so
per-station transmit power is not followed. A give-up that the medium calls ``out_of_range`` for
another reason (a radio switched off) at a distance within range is counted ``fresh``, age 0.

The classification (``classify``) is sans-I/O and unit-tested on synthetic trajectories
(tests/unit/test_staleness.py). Only ``load_run`` and ``main`` read files.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nodes.core.addr import ip_to_station
from nodes.core.trace import EV_TX_FAIL, MediumFailure, TraceFormatError, packet_key, read_medium, read_raw
from nodes.protocols.dsr.options import DSR_HEADER_LEN, IPPROTO_DSR, OPT_PAD1, OPT_SRCRT
from testbed.medium import trajectories_of
from topologies.mobility import Trajectory, legs, position_at
from topologies.radio import radio_model

FRESH_S = 1.0
"""A link that left range less than this before a give-up broke while in use; an earlier
give-up on the same break less than this before is the same burst."""

STEP_S = 0.05
"""Resolution of the search back in time for the moment a link left range (1 m at 20 m/s)."""

CLASSES = ("fresh", "undetected", "burst", "reused")


@dataclass(frozen=True, slots=True)
class Staleness:
    """One out-of-range give-up with its ground truth."""

    t_s: float
    link: tuple[int, int]
    cls: str
    out_of_range_s: float
    """How long the link had been out of range at the give-up (since 0 when it never was in range)."""
    distance_m: float


def max_speed(traj: Trajectory) -> float:
    """The fastest leg of a trajectory, m/s (0 for a station that never moves)."""
    return max((v for _, _, v in legs(traj)), default=0.0)


def left_range_at(
    a: Trajectory, b: Trajectory, t_s: float, range_m: float, *, closing_mps: float, step_s: float = STEP_S
) -> float | None:
    """The last time at or before ``t_s`` at which ``a`` and ``b`` were within ``range_m`` (the
    link left range just after it), within ``step_s``, or None when they never were since 0.

    Going back in time the distance shrinks by at most ``closing_mps`` (the sum of the two
    stations' top speeds) per second, so the search jumps back by the distance still to close
    over that speed (at least ``step_s``): it misses no time in range longer than ``step_s``,
    and it looks at 0 last."""
    t = t_s
    while True:
        (xa, ya), (xb, yb) = position_at(a, t), position_at(b, t)
        d = math.hypot(xa - xb, ya - yb)
        if d <= range_m:
            return t
        if closing_mps <= 0.0 or t <= 0.0:
            return None
        t = max(0.0, t - max(step_s, (d - range_m) / closing_mps))


def give_ups(failures: Iterable[MediumFailure]) -> list[MediumFailure]:
    """The ``out_of_range`` give-ups among ``failures``, in time order: what ``classify`` classes."""
    return sorted((f for f in failures if f.cause == "out_of_range"), key=lambda f: f.t_ns)


def classify(
    failures: Iterable[MediumFailure],
    trajectories: dict[int, Trajectory],
    range_m: float,
    *,
    fresh_s: float = FRESH_S,
    step_s: float = STEP_S,
) -> list[Staleness]:
    """Every give-up of ``give_ups(failures)``, in that order, with its class."""
    first_detect: dict[tuple[int, int], float] = {}
    """link -> the first give-up on its latest break."""
    speed = {sid: max_speed(traj) for sid, traj in trajectories.items()}
    out: list[Staleness] = []
    for f in give_ups(failures):
        link = (min(f.src, f.dst), max(f.src, f.dst))
        t = f.t_ns / 1e9
        a, b = link
        closing = speed[a] + speed[b]
        inside = left_range_at(
            trajectories[a], trajectories[b], t, range_m, closing_mps=closing, step_s=step_s
        )
        broke = -1.0 if inside is None else inside
        age = t - inside if inside is not None else t
        first = first_detect.get(link)
        if first is not None and first > broke:  # this break was detected before
            cls = "reused" if t - first >= fresh_s else "burst"
        else:
            cls = "fresh" if inside is not None and age < fresh_s else "undetected"
            first_detect[link] = t
        out.append(Staleness(t, link, cls, age, f.distance_m))
    return out


def between(failures: Iterable[MediumFailure], a: int, b: int) -> list[MediumFailure]:
    """The give-ups of packets from ``a`` to ``b`` or back (by the IPv4 addresses they carried)."""
    want = {a, b}
    return [f for f in failures if {ip_to_station(f.ip_src), ip_to_station(f.ip_dst)} == want]


def summary(items: Sequence[Staleness]) -> dict[str, float]:
    counts = Counter(s.cls for s in items)
    n = len(items)
    row: dict[str, float] = {"give_ups": n}
    for c in CLASSES:
        row[c] = counts[c]
        row[f"{c}_pct"] = round(100.0 * counts[c] / n, 1) if n else 0.0
    ages = sorted(s.out_of_range_s for s in items)
    row["median_out_of_range_s"] = round(ages[len(ages) // 2], 2) if ages else 0.0
    return row


MATCH_NS = 50_000_000
"""A router's ``tx_fail`` record and the medium's give-up of the same frame are this close in time."""

TxFail = tuple[int, tuple[str, str, int], int | None]
"""A router's ``tx_fail`` record: (time in ns, the packet's ``packet_key``, its ``dsr_salvage``)."""


def tx_fail(t_ns: int, packet: bytes) -> TxFail:
    """A ``tx_fail`` record of ``packet`` (its first bytes) at ``t_ns``, decoded once."""
    return t_ns, packet_key(packet), dsr_salvage(packet)


def dsr_salvage(packet: bytes) -> int | None:
    """The Salvage field of a DSR packet's Source Route option (RFC 4728 section 6.7), from the
    packet's first bytes; None for a packet that is not DSR or has no Source Route option in
    them. Never raises."""
    n = len(packet)
    if n < 20 or packet[0] >> 4 != 4 or packet[9] != IPPROTO_DSR:
        return None
    start = (packet[0] & 0x0F) * 4 + DSR_HEADER_LEN
    if start < 20 + DSR_HEADER_LEN or start > n:
        return None
    end = min(n, start + int.from_bytes(packet[start - 2 : start], "big"))  # the DSR Payload Length
    i = start
    while i + 4 <= end:
        t = packet[i]
        if t == OPT_PAD1:
            i += 1
            continue
        if t == OPT_SRCRT:
            return (int.from_bytes(packet[i + 2 : i + 4], "big") >> 6) & 0x0F
        i += 2 + packet[i + 1]
    return None


def salvage_counts(
    failures: Sequence[MediumFailure], tx_fails: Mapping[tuple[int, int], Sequence[TxFail]]
) -> list[int | None]:
    """For each give-up, the Salvage field of the packet the failing router gave up on: its
    ``tx_fail`` record towards the same next hop with the same IPv4 source, destination and
    identification, nearest in time within ``MATCH_NS`` and not matched to another give-up, from
    ``tx_fails[(station, next hop)]`` sorted by time; None when there is none or it is not DSR."""
    out: list[int | None] = []
    used: set[tuple[tuple[int, int], int]] = set()
    for f in failures:
        key = (f.ip_src, f.ip_dst, f.ip_id)
        recs = tx_fails.get((f.src, f.dst), ())
        lo = bisect.bisect_left(recs, f.t_ns - MATCH_NS, key=lambda r: r[0])
        hi = bisect.bisect_right(recs, f.t_ns + MATCH_NS, key=lambda r: r[0])
        near = [
            (abs(recs[j][0] - f.t_ns), j)
            for j in range(lo, hi)
            if ((f.src, f.dst), j) not in used and recs[j][1] == key
        ]
        if not near:
            out.append(None)
            continue
        _, j = min(near)
        used.add(((f.src, f.dst), j))
        out.append(recs[j][2])
    return out


def salvage_summary(counts: Sequence[int | None]) -> dict[str, float]:
    known = [c for c in counts if c is not None]
    n = len(known)
    return {
        "first_route_pct": round(100.0 * sum(c == 0 for c in known) / n, 1) if n else 0.0,
        "salvaged_pct": round(100.0 * sum(c > 0 for c in known) / n, 1) if n else 0.0,
        "no_source_route": len(counts) - n,
    }


def load_tx_fails(run: Path, stations: Iterable[int]) -> dict[tuple[int, int], list[TxFail]]:
    """The ``tx_fail`` records of the given stations' router traces, by (station, next hop)."""
    out: dict[tuple[int, int], list[TxFail]] = {}
    for st in sorted(set(stations)):
        path = run / "routers" / f"sta{st}.trace.bin"
        for t, ev, _code, peer, packet in read_raw(path.read_bytes(), str(path)):
            if ev == EV_TX_FAIL:
                out.setdefault((st, peer), []).append(tx_fail(t, packet))
    for recs in out.values():
        recs.sort(key=lambda r: r[0])
    return out


def load_run(run: Path) -> tuple[list[MediumFailure], dict[int, Trajectory], float]:
    """The run's give-ups, the trajectories its medium ran, and its decode range."""
    cfg_path, trace_path = run / "medium" / "config.json", run / "medium" / "trace.bin"
    for p in (cfg_path, trace_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: missing (is {run} a finished run directory?)")
    try:
        cfg = json.loads(cfg_path.read_text())
        radio = cfg["radio"]
        range_m = radio_model(radio["preset"], radio.get("overrides") or None).range_m
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{cfg_path}: field radio: {e!r}") from e
    trajectories = trajectories_of(cfg, cfg_path)
    failures = read_medium(trace_path.read_bytes(), str(trace_path))
    for f in failures:
        for st in (f.src, f.dst):
            if st not in trajectories:
                raise ValueError(f"{trace_path}: a give-up of station {st}, which {cfg_path} does not have")
    return failures, trajectories, range_m


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.staleness", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="finished run directories")
    ap.add_argument(
        "--between", nargs=2, type=int, metavar=("A", "B"), help="only packets between stations A and B"
    )
    ap.add_argument(
        "--salvage", action="store_true", help="DSR: how often the failed packets had been salvaged"
    )
    args = ap.parse_args(argv)
    for run in args.runs:
        try:
            failures, trajectories, range_m = load_run(run)
        except (OSError, ValueError, TraceFormatError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if args.between:
            failures = between(failures, *args.between)
        gone = give_ups(failures)
        items = classify(gone, trajectories, range_m)
        row = summary(items)
        if args.salvage:
            try:
                tx = load_tx_fails(run, (f.src for f in gone))
            except (OSError, TraceFormatError) as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            counts = salvage_counts(gone, tx)
            row.update(salvage_summary(counts))
            for cls in ("undetected", "reused"):
                sub = [c for c, it in zip(counts, items, strict=True) if it.cls == cls]
                row[f"{cls}_salvaged_pct"] = salvage_summary(sub)["salvaged_pct"]
        print(run.name, " ".join(f"{k}={v:g}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
