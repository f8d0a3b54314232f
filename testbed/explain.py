"""Why did this TCP timeout happen: a cause for every retransmission timeout of a run.

``python3 -m testbed.explain results/<exp>/<run>`` writes ``explain.json`` into the run directory
and prints one row per RTO (docs/explain.md). It joins:

- the sending stations' per-connection tcp_info series ``tcp/staN.jsonl`` (``rto_timeouts`` =
  tcpi_total_rto, the kernel's count of RTO expirations of the connection): which connection
  timed out, within one sampling interval;
- the routers' per-packet traces ``routers/staN.trace.bin`` (``nodes.core.trace``): the
  retransmission the RTO sent (the first re-sent sequence number at the sender in that interval),
  the earlier copies of that segment, and where each copy went and died, followed across stations
  by its IPv4 source, destination and identification;
- the medium's failed-frame trace ``medium/trace.bin``: the ground-truth cause of a retry-limit
  failure and the distance between the two stations at that moment.

The cause logic (``explain_rtos``) is sans-I/O: it takes decoded records and returns typed
results, and is unit-tested on synthetic traces (tests/unit/test_explain.py). Only ``main`` and
``load_run`` touch files; they never change what the run wrote.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nodes.core.trace import (
    EV_DELIVER,
    EV_DROP,
    EV_IFQ_DROP,
    EV_NAMES,
    EV_ORIG,
    EV_TX,
    EV_TX_FAIL,
    IPPROTO_TCP,
    MEDIUM_CAUSES,
    MediumFailure,
    TraceFormatError,
    TraceRecord,
    read_medium,
    read_records,
)

CAUSES = (
    "collision",
    "link_break",
    "channel_error",
    "event",
    "ifq_overflow",
    "no_route",
    "send_buffer_full",
    "route_discovery_timeout",
    "routing_drop",
    "hop_loss",
    "delayed",
    "paws",
    "unknown",
)
"""Cause categories of a timeout (docs/explain.md):

- ``collision``: the MAC's retry limit was reached because of collisions/interference at the
  receiver, which was in range (a false link failure);
- ``link_break``: retry limit, the receiver out of range (a real link break, with the distance);
- ``channel_error``: retry limit because of the error model (channel noise, link loss, BER);
- ``event``: retry limit because of a scripted event (partition, ``set_link`` loss 1);
- ``ifq_overflow``: the interface queue was full;
- ``no_route``, ``send_buffer_full``, ``route_discovery_timeout``: the routing protocol had no
  route, its send buffer overflowed, or route discovery did not finish in time;
- ``routing_drop``: any other drop by the routing protocol (TTL, salvage limit, ...);
- ``hop_loss``: the scenario's per-hop loss above the MAC discarded it (``routing.hop_loss``,
  nodes/core/hoploss.py: Cohen & Levin's per-hop loss rate);
- ``delayed``: the segment or its ACK was not lost but arrived after the RTO (a spurious RTO);
- ``paws``: the segment arrived but the receiver discarded it as an old duplicate (RFC 7323
  section 5.3, PAWS): a copy of data below it, sent later, arrived first and moved the receiver's
  TS.Recent past the segment's TSval (R3: a segment covering Last.ACK.sent updates it);
- ``unknown``: the trace does not say.
"""

MAC_CAUSE = {
    "collision": "collision",
    "out_of_range": "link_break",
    "channel_error": "channel_error",
    "scripted": "event",
    "none": "unknown",
}
"""The medium's ground truth of a failed frame -> timeout cause."""
DROP_CAUSE = {
    "ifq_full": "ifq_overflow",
    "no_route": "no_route",
    "send_buffer_full": "send_buffer_full",
    "send_buffer_timeout": "route_discovery_timeout",
    "hop_loss": "hop_loss",
}
"""Router drop reasons with their own timeout cause (the rest: ``routing_drop``, or the MAC's cause
when the drop followed a link failure)."""
LINK_FAILURE_DROPS = frozenset({"link_failure", "salvage_limit", "aodv_control_link_failure"})
RERR_TYPE = 3
"""RFC 4728 section 6.5 (DSR Route Error option type 3) and RFC 3561 section 5.3 (AODV RERR type
3): a routing packet whose ``ctl`` is 3 reports a broken link."""
RERR_WINDOW_NS = 2_000_000_000
"""A route error sent by the failing station this long after a link failure is counted as its."""
RETX_SLACK_NS = 50_000_000
"""The retransmission of an RTO is looked for this long before and after the sampling interval in
which tcpi_total_rto grew (the sampler's time stamp is taken after the dump)."""
CLOCK_SLACK_NS = 500_000_000
"""Runs before the runner's clock was aligned with the medium's epoch sampled tcp_info up to
~0.3 s late: with no retransmission in the interval, the last one this long before it is taken."""
RACE_NS = 20_000_000
"""An ACK that reached the sender's kernel this little before the RTO's retransmission left came
as the timer expired (the kernel's timer runs on jiffies, and writes the retransmission to the TUN
a few ms after expiry): a spurious RTO of an ACK delayed to the last moment."""
WITHHELD = "tcpctl_withheld"
"""The endpoint agent's drop reason for a segment the kernel sent while TCP was held (nodes.tcpctl:
an ELFN freeze, ATCP): the copy never left the station."""
PAWS_TICK_NS = 2_000_000
"""Linux's TSval clock ticks in ms, and PAWS discards a segment whose TSval is more than
TCP_PAWS_WINDOW (1 tick) below TS.Recent: a copy sent this much later carries a TSval at least
2 ticks newer."""
MEDIUM_JOIN_NS = 50_000_000
"""A medium failure record matches a router's TX_FAIL of the same packet within this time."""
FOLLOW_NS = 120_000_000_000
"""A copy is followed for at most this long after it was sent (IP id reuse)."""


@dataclass(frozen=True, slots=True)
class Conn:
    """A TCP connection, as the sender sees it."""

    src: str
    sport: int
    dst: str
    dport: int

    def reverse(self) -> Conn:
        return Conn(self.dst, self.dport, self.src, self.sport)

    def __str__(self) -> str:
        return f"{self.src}:{self.sport}->{self.dst}:{self.dport}"


@dataclass(frozen=True, slots=True)
class Rto:
    """One RTO expiration of ``conn``: it happened in (``t_lo_ns``, ``t_hi_ns``]."""

    conn: Conn
    index: int
    t_lo_ns: int
    t_hi_ns: int


@dataclass(frozen=True, slots=True)
class Hop:
    """One event of a copy's path (for the timeline's "show its path")."""

    station: int
    t_ns: int
    ev: str
    peer: int


@dataclass(frozen=True, slots=True)
class Fate:
    """What happened to one copy (one IP packet) of a segment or an ACK."""

    kind: str  # "data" | "ack"
    ip_id: int
    seq: int
    ack: int
    sent_ns: int
    delivered_ns: int | None
    cause: str | None  # a CAUSES value if it died, None if delivered
    station: int | None  # where it died
    layer: str | None  # "mac" | "ifq" | "routing"
    reason: str | None  # the router's drop reason or the medium's cause
    distance_m: float | None
    next_hop: int | None
    after: str | None  # what the routing protocol did next: "RERR sent", "salvaged via N"
    path: tuple[Hop, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    """The cause of one RTO."""

    conn: str
    index: int
    t_s: float
    seq: int | None
    cause: str
    direction: str | None  # "data" (the segment was lost) | "ack" (its ACKs were) | None
    station: int | None
    detail: str
    copies: tuple[Fate, ...] = field(default=())


def station_of(ip: str) -> int:
    """10.0.0.N -> N (docs/interfaces.md section 1)."""
    return int(ip.rsplit(".", 1)[1])


PacketKey = tuple[str, str, object, int, int]


def _key(r: TraceRecord) -> PacketKey:
    return (r.src, r.dst, r.ip_id, r.sport, r.dport)


def _tcp_key(r: TraceRecord) -> PacketKey:
    """A TCP packet by (addresses, ports, seq, ack, length, flags): what no router rewrites. The
    copies of a retransmitted segment share it; ``follow`` cuts a copy's records at the next ORIG."""
    if r.proto != IPPROTO_TCP:
        return _key(r)
    return (r.src, r.dst, (r.seq, r.ack, r.length, r.tcp_flags), r.sport, r.dport)


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """A scripted ``set_link`` (medium config ``events``): from ``t_ns`` on, link a-b has this
    loss probability and bit error rate (None: cleared)."""

    t_ns: int
    a: int
    b: int
    loss: float | None
    ber: float | None


class TraceIndex:
    """The routers' records indexed by packet key, and each station's records in time order."""

    def __init__(
        self,
        records: Iterable[TraceRecord],
        medium: Sequence[MediumFailure],
        link_events: Sequence[LinkEvent] = (),
        tcp_keys: bool = False,
    ) -> None:
        self.key = _tcp_key if tcp_keys else _key
        self.link_events = sorted(link_events, key=lambda e: e.t_ns)
        self.by_key: dict[PacketKey, list[TraceRecord]] = defaultdict(list)
        self.by_station: dict[int, list[TraceRecord]] = defaultdict(list)
        self.orig: dict[Conn, list[TraceRecord]] = defaultdict(list)
        for r in records:
            self.by_key[self.key(r)].append(r)
            self.by_station[r.station].append(r)
            if r.ev == EV_ORIG and r.proto == IPPROTO_TCP:
                self.orig[Conn(r.src, r.sport, r.dst, r.dport)].append(r)
        for v in (*self.by_key.values(), *self.by_station.values(), *self.orig.values()):
            v.sort(key=lambda r: r.t_ns)
        self._times = {s: [r.t_ns for r in v] for s, v in self.by_station.items()}
        self.medium = sorted(medium, key=lambda m: m.t_ns)
        self._medium_t = [m.t_ns for m in self.medium]

    def station_window(self, station: int, t0: int, t1: int) -> list[TraceRecord]:
        ts = self._times.get(station, [])
        v = self.by_station.get(station, [])
        return v[bisect.bisect_left(ts, t0) : bisect.bisect_right(ts, t1)]

    def medium_failure(self, r: TraceRecord) -> MediumFailure | None:
        """The medium's record of the TX_FAIL ``r`` (same sender and IP key, nearest in time)."""
        i = bisect.bisect_left(self._medium_t, r.t_ns - MEDIUM_JOIN_NS)
        best: MediumFailure | None = None
        for m in self.medium[i:]:
            if m.t_ns > r.t_ns + MEDIUM_JOIN_NS:
                break
            if m.src == r.station and m.ip_id == r.ip_id and m.ip_src == r.src and m.ip_dst == r.dst:
                if best is None or abs(m.t_ns - r.t_ns) < abs(best.t_ns - r.t_ns):
                    best = m
        return best


def _seq_before(a: int, b: int) -> int:
    """``a - b`` as a signed 32-bit difference (sequence numbers wrap, RFC 9293 section 3.4)."""
    return ((a - b + (1 << 31)) % (1 << 32)) - (1 << 31)


def _seq_end(r: TraceRecord) -> int:
    return r.seq + r.length + (1 if r.tcp_flags & 0x03 else 0)  # SYN or FIN take one


def _rerr_after(idx: TraceIndex, station: int, t_ns: int) -> str | None:
    for r in idx.station_window(station, t_ns, t_ns + RERR_WINDOW_NS):
        if r.ev == EV_TX and r.ctl == RERR_TYPE and r.proto != IPPROTO_TCP:
            return f"route error sent by sta{station} {(r.t_ns - t_ns) / 1e6:.0f} ms later"
    return None


def _mac_detail(idx: TraceIndex, fail: TraceRecord) -> tuple[str, str, float | None]:
    """``(cause, medium cause name, distance)`` of a TX_FAIL record."""
    m = idx.medium_failure(fail)
    name = (
        m.cause if m is not None else (MEDIUM_CAUSES[fail.code] if fail.code < len(MEDIUM_CAUSES) else "none")
    )
    dist = m.distance_m if m is not None else None
    if name == "channel_error":
        # a scripted set_link (loss or BER) on this link at that time is the event that caused it
        ev = None
        for e in idx.link_events:
            if e.t_ns > fail.t_ns:
                break
            if {e.a, e.b} == {fail.station, fail.peer}:
                ev = e
        if ev is not None and (ev.loss or ev.ber):
            return "event", f"channel_error (set_link loss={ev.loss} ber={ev.ber})", dist
    return MAC_CAUSE.get(name, "unknown"), name, dist


def follow(idx: TraceIndex, first: TraceRecord, kind: str, reasons: dict[int, list[str]]) -> Fate:
    """Follow one copy (from its ORIG record at the sender) to its delivery or its death."""
    recs = [r for r in idx.by_key.get(idx.key(first), []) if first.t_ns <= r.t_ns <= first.t_ns + FOLLOW_NS]
    # stop at a later ORIG of the same key (IP id reuse)
    for i, r in enumerate(recs[1:], 1):
        if r.ev == EV_ORIG:
            recs = recs[:i]
            break
    path = tuple(Hop(r.station, r.t_ns, EV_NAMES[r.ev], r.peer) for r in recs)
    dst = station_of(first.dst)
    base: dict[str, Any] = {
        "kind": kind,
        "ip_id": first.ip_id,
        "seq": first.seq,
        "ack": first.ack,
        "sent_ns": first.t_ns,
        "path": path,
    }
    for r in recs:
        if r.ev == EV_DELIVER and r.station == dst:
            return Fate(
                delivered_ns=r.t_ns,
                cause=None,
                station=None,
                layer=None,
                reason=None,
                distance_m=None,
                next_hop=None,
                after=None,
                **base,
            )
    drops = [r for r in recs if r.ev in (EV_DROP, EV_IFQ_DROP)]
    fails = [r for r in recs if r.ev == EV_TX_FAIL]
    if drops:
        d = drops[-1]
        names = reasons.get(d.station, [])
        reason = (
            "ifq_full"
            if d.ev == EV_IFQ_DROP
            else (names[d.code] if d.code < len(names) else f"reason{d.code}")
        )
        if reason in LINK_FAILURE_DROPS:
            # the MAC gave up on this packet, or on the frame ahead of it to the same next hop
            own = [f for f in fails if f.station == d.station and f.t_ns <= d.t_ns]
            fail = own[-1] if own else _last_fail_before(idx, d.station, d.t_ns)
            if fail is not None:
                cause, mname, dist = _mac_detail(idx, fail)
                return Fate(
                    delivered_ns=None,
                    cause=cause,
                    station=d.station,
                    layer="mac",
                    reason=f"{mname} (retry limit), then {reason}",
                    distance_m=dist,
                    next_hop=fail.peer,
                    after=_rerr_after(idx, d.station, fail.t_ns),
                    **base,
                )
            return Fate(
                delivered_ns=None,
                cause="routing_drop",
                station=d.station,
                layer="routing",
                reason=reason,
                distance_m=None,
                next_hop=None,
                after=_rerr_after(idx, d.station, d.t_ns),
                **base,
            )
        cause = DROP_CAUSE.get(reason, "routing_drop")
        return Fate(
            delivered_ns=None,
            cause=cause,
            station=d.station,
            layer="ifq" if d.ev == EV_IFQ_DROP else "routing",
            reason=reason,
            distance_m=None,
            next_hop=None,
            after=None,
            **base,
        )
    if fails:
        f = fails[-1]
        later_tx = [r for r in recs if r.ev == EV_TX and r.t_ns > f.t_ns]
        cause, mname, dist = _mac_detail(idx, f)
        after = _rerr_after(idx, f.station, f.t_ns)
        if later_tx:
            after = f"salvaged via sta{later_tx[0].peer}" + (f"; {after}" if after else "")
        return Fate(
            delivered_ns=None,
            cause=cause,
            station=f.station,
            layer="mac",
            reason=f"{mname} (retry limit)",
            distance_m=dist,
            next_hop=f.peer,
            after=after,
            **base,
        )
    last = recs[-1]
    if last.ev == EV_ORIG:
        return Fate(
            delivered_ns=None,
            cause="no_route",
            station=last.station,
            layer="routing",
            reason="held in the send buffer waiting for a route (route discovery not finished)",
            distance_m=None,
            next_hop=None,
            after=None,
            **base,
        )
    return Fate(
        delivered_ns=None,
        cause="unknown",
        station=last.station,
        layer=None,
        reason=f"last seen: {EV_NAMES[last.ev]} at sta{last.station}",
        distance_m=None,
        next_hop=None,
        after=None,
        **base,
    )


def _last_fail_before(idx: TraceIndex, station: int, t_ns: int) -> TraceRecord | None:
    for r in reversed(idx.station_window(station, t_ns - 1_000_000_000, t_ns)):
        if r.ev == EV_TX_FAIL:
            return r
    return None


def _longest_wait(f: Fate) -> str:
    """Where a delivered copy spent most of its time: the longest gap between two of its events."""
    if len(f.path) < 2:
        return "no path recorded"
    gap, a, b = max(
        ((y.t_ns - x.t_ns, x, y) for x, y in zip(f.path, f.path[1:], strict=False)), key=lambda g: g[0]
    )
    # the packet waits where its next event happens, unless that event is the reception (then it
    # was in the sender's MAC)
    if b.ev == "rx":
        return f"longest wait {gap / 1e6:.0f} ms in sta{a.station}'s MAC, until sta{b.station} received it"
    return f"longest wait {gap / 1e6:.0f} ms at sta{b.station} (before its {b.ev})"


def _describe(f: Fate) -> str:
    where = f"sta{f.station}" if f.station is not None else "?"
    s = f"{f.kind} {f.reason} at {where}"
    if f.next_hop:
        s += f" -> sta{f.next_hop}"
    if f.distance_m is not None:
        s += f", {f.distance_m:.0f} m apart"
    if f.after:
        s += f"; {f.after}"
    return s


def _last_ack_sent(idx: TraceIndex, conn: Conn, t_ns: int) -> int | None:
    """The receiver's Last.ACK.sent at ``t_ns`` (RFC 7323 s4.3): the acknowledgment number of the
    last segment of the reverse direction it sent by then (Linux's rcv_wup)."""
    last: int | None = None
    for r in idx.orig.get(conn.reverse(), []):
        if r.t_ns > t_ns:
            break
        last = r.ack
    return last


def paws_discard(idx: TraceIndex, conn: Conn, seg: Fate, reasons: dict[int, list[str]]) -> Fate | None:
    """The copy that made the receiver discard the delivered segment ``seg`` by PAWS (RFC 7323
    s5.3), or None. Such a copy was sent at least ``PAWS_TICK_NS`` after ``seg`` (a newer TSval),
    delivered before it, and covered the receiver's Last.ACK.sent when it arrived (its start at or
    below it, its end at or above it): rule R3 then copies its TSval to TS.Recent, while a copy
    entirely below the window is dropped first (R2; Linux's tcp_sequence) and changes nothing.
    Send times are the router's ORIG times, not the TSvals (the trace has none): a segment that
    waited more than a tick on the sender's TUN may look newer than it is."""
    assert seg.delivered_ns is not None
    for r in idx.orig.get(conn, []):
        if r.t_ns > seg.delivered_ns:
            break
        end = _seq_end(r)
        if r.t_ns < seg.sent_ns + PAWS_TICK_NS or end == r.seq or _seq_before(end, seg.seq) > 0:
            continue
        f = follow(idx, r, "data", reasons)
        if f.delivered_ns is None or f.delivered_ns >= seg.delivered_ns:
            continue
        wup = _last_ack_sent(idx, conn, f.delivered_ns)
        if wup is not None and _seq_before(r.seq, wup) <= 0 <= _seq_before(end, wup):
            return f
    return None


def explain_rto(
    idx: TraceIndex, rto: Rto, reasons: dict[int, list[str]], timestamps: bool = True
) -> Explanation:
    """The cause of one RTO (sans-I/O). ``timestamps``: the connection uses TCP timestamps (RFC
    7323), so its receiver applies PAWS."""
    t_s = rto.t_hi_ns / 1e9
    conn = rto.conn
    orig = idx.orig.get(conn, [])

    def result(
        cause: str,
        direction: str | None,
        station: int | None,
        detail: str,
        seq: int | None = None,
        copies: Sequence[Fate] = (),
    ) -> Explanation:
        return Explanation(
            str(conn), rto.index, round(t_s, 4), seq, cause, direction, station, detail, tuple(copies)
        )

    if not orig:
        return result("unknown", None, None, "the sender's trace has no packet of this connection")
    # the retransmission: an RTO re-sends snd_una, the lowest unacknowledged sequence number, so
    # of the segments re-sent in the interval it is the lowest (a tail loss probe re-sends the
    # highest); the earliest copy of it there
    highest = -1
    cands: list[TraceRecord] = []
    earlier: TraceRecord | None = None  # the last retransmission before the interval
    for r in orig:
        end = _seq_end(r)
        if r.t_ns > rto.t_hi_ns + RETX_SLACK_NS:
            break
        if end > r.seq and r.seq < highest:
            if r.t_ns > rto.t_lo_ns - RETX_SLACK_NS:
                cands.append(r)
            elif r.t_ns > rto.t_lo_ns - CLOCK_SLACK_NS:
                earlier = r
        highest = max(highest, end)
    retx = min(cands, key=lambda r: (_seq_before(r.seq, cands[0].seq), r.t_ns)) if cands else earlier
    if retx is None:
        return result("unknown", None, None, "no retransmission at the sender in the RTO's interval")
    t_rto = retx.t_ns
    t_s = t_rto / 1e9
    seq = retx.seq
    prior = [r for r in orig if r.seq == seq and r.t_ns < t_rto and _seq_end(r) > r.seq]
    if not prior:
        return result("unknown", "data", None, f"no earlier copy of seq {seq} in the sender's trace", seq)
    fates = [follow(idx, r, "data", reasons) for r in prior]
    # copies the sender's endpoint agent withheld while TCP was frozen (ELFN) never left: the
    # segment's fate is that of the last copy that did, if one did
    sent = [f for f in fates if f.reason != WITHHELD]
    last = sent[-1] if sent else fates[-1]
    frozen = " (its retransmissions withheld while TCP was frozen)" if len(sent) < len(fates) and sent else ""
    if last.delivered_ns is None:
        # the copy the timer ran out on died
        assert last.cause is not None
        return result(last.cause, "data", last.station, _describe(last) + frozen, seq, fates)
    if last.delivered_ns > t_rto:
        return result(
            "delayed",
            "data",
            None,
            f"segment delivered {(last.delivered_ns - last.sent_ns) / 1e6:.0f} ms "
            f"after it was sent, {(last.delivered_ns - t_rto) / 1e6:.0f} ms after the RTO; {_longest_wait(last)}",
            seq,
            fates,
        )
    # the segment arrived: its ACKs were lost or late
    acks = [
        r
        for r in idx.orig.get(conn.reverse(), [])
        if last.delivered_ns <= r.t_ns <= t_rto and _seq_before(r.ack, seq) > 0
    ]
    newer = paws_discard(idx, conn, last, reasons) if timestamps and not acks else None
    if newer is not None:
        assert newer.delivered_ns is not None and last.delivered_ns is not None
        return result(
            "paws",
            "data",
            station_of(conn.dst),
            f"segment delivered at {last.delivered_ns / 1e9:.3f} s and discarded by PAWS: a copy of seq "
            f"{newer.seq} sent {(newer.sent_ns - last.sent_ns) / 1e6:.0f} ms after it arrived first "
            f"({newer.delivered_ns / 1e9:.3f} s) and set the receiver's TS.Recent",
            seq,
            [*fates, newer],
        )
    if not acks:
        return result(
            "unknown",
            "ack",
            station_of(conn.dst),
            f"segment delivered at {last.delivered_ns / 1e9:.3f} s, the receiver sent no ACK before the RTO",
            seq,
            fates,
        )
    ack_fates = [follow(idx, r, "ack", reasons) for r in acks]
    arrived = [f.delivered_ns for f in ack_fates if f.delivered_ns is not None]
    if arrived:
        first = min(arrived)
        if first > t_rto:
            return result(
                "delayed",
                "ack",
                None,
                f"ACK delivered {(first - t_rto) / 1e6:.0f} ms after the RTO; "
                + _longest_wait(
                    min((f for f in ack_fates if f.delivered_ns), key=lambda f: f.delivered_ns or 0)
                ),
                seq,
                fates + ack_fates,
            )
        if t_rto - first <= RACE_NS:
            return result(
                "delayed",
                "ack",
                None,
                f"ACK delivered {(t_rto - first) / 1e6:.1f} ms before the retransmission left: the timer "
                "expired as the ACK arrived",
                seq,
                fates + ack_fates,
            )
        return result("unknown", "ack", None, "an ACK arrived before the RTO", seq, fates + ack_fates)
    dead = ack_fates[-1]
    assert dead.cause is not None
    return result(
        dead.cause,
        "ack",
        dead.station,
        _describe(dead) + f" ({len(ack_fates)} ACK(s) lost)",
        seq,
        fates + ack_fates,
    )


def explain_rtos(
    records: Iterable[TraceRecord],
    medium: Sequence[MediumFailure],
    rtos: Sequence[Rto],
    reasons: dict[int, list[str]],
    link_events: Sequence[LinkEvent] = (),
    tcp_keys: bool = False,
    timestamps: bool = True,
) -> list[Explanation]:
    """Explain every RTO (sans-I/O): ``records`` of all routers, the medium's failures,
    ``reasons``: each station's drop reason names by code, ``link_events``: scripted set_link,
    ``tcp_keys``: packets keyed by TCP identity (an extension rewrote IP IDs: ``Needs.rewrites_ip_id``),
    ``timestamps``: the run's TCP used timestamps (scenario ``tcp.timestamps``, PAWS)."""
    idx = TraceIndex(records, medium, link_events, tcp_keys)
    return [explain_rto(idx, r, reasons, timestamps) for r in rtos]


def losses_by_cause(
    records: Iterable[TraceRecord],
    medium: Sequence[MediumFailure],
    reasons: dict[int, list[str]],
    link_events: Sequence[LinkEvent] = (),
    tcp_keys: bool = False,
) -> dict[str, int]:
    """Every TCP packet (segment or ACK) the kernels sent that never reached its destination's
    kernel, by cause (whether or not it caused a timeout): the run's losses as the trace saw them."""
    idx = TraceIndex(records, medium, link_events, tcp_keys)
    c: Counter[str] = Counter()
    for rs in idx.orig.values():
        for r in rs:
            f = follow(idx, r, "data", reasons)
            if f.delivered_ns is None and f.cause is not None:
                c[f.cause] += 1
    return {k: c[k] for k in CAUSES if c[k]}


def rtos_from_series(rows: Iterable[dict[str, Any]]) -> list[Rto]:
    """RTOs from a tcp_info series (``tcp/staN.jsonl`` rows): each growth of ``rto_timeouts``."""
    prev: dict[str, tuple[int, int]] = {}
    out: list[Rto] = []
    for row in rows:
        c = str(row["conn"])
        t_ns = round(float(row["t_s"]) * 1e9)
        n = int(row.get("rto_timeouts") or 0)
        n0, t0 = prev.get(c, (0, t_ns - 100_000_000))
        a, b = c.split("->")
        conn = Conn(
            a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]), b.rsplit(":", 1)[0], int(b.rsplit(":", 1)[1])
        )
        for i in range(n0 + 1, n + 1):
            out.append(Rto(conn, i, t0, t_ns))
        prev[c] = (max(n, n0), t_ns)
    return out


# --------------------------------------------------------------------------- I/O
class RunDirError(Exception):
    """The directory is not a (complete, traced) run: the message names what is missing."""


@dataclass(slots=True)
class RunData:
    run_dir: Path
    summary: dict[str, Any]
    stations: list[int]
    records: list[TraceRecord]
    reasons: dict[int, list[str]]
    medium: list[MediumFailure]
    rtos: list[Rto]
    series: dict[int, list[dict[str, Any]]]
    range_m: float | None
    link_events: list[LinkEvent] = field(default_factory=list)
    tcp_keys: bool = False  # an extension rewrote IP IDs (``Needs.rewrites_ip_id``)
    timestamps: bool = True  # scenario tcp.timestamps (Linux's default): receivers apply PAWS


def _read_json(p: Path, what: str) -> Any:
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{p}: missing ({what})") from None
    except ValueError as exc:
        raise RunDirError(f"{p}: not valid JSON ({exc})") from None


def load_run(run_dir: str | Path) -> RunData:
    """Read what the analysis needs; ``RunDirError`` names the first missing or bad file."""
    d = Path(run_dir)
    if not d.is_dir():
        raise RunDirError(f"{d}: not a directory")
    if not (d / "summary.json").exists() and not (d / "run.json").exists():
        raise RunDirError(f"{d}: not a run directory (no summary.json, no run.json)")
    summary = _read_json(d / "summary.json", "written by every run")
    if not summary.get("complete"):
        raise RunDirError(
            f"{d / 'summary.json'}: complete is false: the run did not finish (killed?), "
            "so its traces and counters may be cut short"
        )
    scenario = _read_json(d / "scenario.json", "the scenario as run")
    try:
        n = int(scenario["stations"]["count"])
    except (KeyError, TypeError, ValueError):
        raise RunDirError(f"{d / 'scenario.json'}: field stations.count missing or not a number") from None
    records: list[TraceRecord] = []
    reasons: dict[int, list[str]] = {}
    for sid in range(1, n + 1):
        cpath = d / "routers" / f"sta{sid}.counters.json"
        counters = _read_json(cpath, "written by the station's router")
        tr = counters.get("trace")
        if not isinstance(tr, dict):
            raise RunDirError(
                f"{cpath}: no 'trace' field: the run is from a version without the per-packet "
                "trace (rerun it with this version)"
            )
        if not tr.get("on"):
            raise RunDirError(f"{cpath}: trace off ({tr.get('reason')})")
        reasons[sid] = [str(x) for x in tr.get("reasons") or []]
        tpath = d / "routers" / f"sta{sid}.trace.bin"
        try:
            records.extend(read_records(tpath.read_bytes(), sid, str(tpath)))
        except FileNotFoundError:
            raise RunDirError(f"{tpath}: missing (the router's per-packet trace)") from None
        except TraceFormatError as exc:
            raise RunDirError(str(exc)) from None
    mpath = d / "medium" / "trace.bin"
    try:
        medium = read_medium(mpath.read_bytes(), str(mpath))
    except FileNotFoundError:
        raise RunDirError(
            f"{mpath}: missing (the medium's failed-frame trace, written when the medium "
            "stops: a killed run or a version without the trace)"
        ) from None
    except TraceFormatError as exc:
        raise RunDirError(str(exc)) from None
    series: dict[int, list[dict[str, Any]]] = {}
    rtos: list[Rto] = []
    for p in sorted((d / "tcp").glob("sta*.jsonl")):
        rows = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        series[int(p.stem[3:])] = rows
        rtos.extend(rtos_from_series(rows))
    rtos.sort(key=lambda r: r.t_hi_ns)
    return RunData(
        d,
        summary,
        list(range(1, n + 1)),
        records,
        reasons,
        medium,
        rtos,
        series,
        _range_m(scenario),
        _link_events(scenario),
        _rewrites_ip_id(scenario),
        bool((scenario.get("tcp") or {}).get("timestamps", True)),
    )


def _rewrites_ip_id(scenario: dict[str, Any]) -> bool:
    """An extension of the run rewrites the IPv4 Identification (its ``NEEDS`` says so), so the
    kernel's ID does not name a packet along its path (route control's route-number and NEW)."""
    from nodes.extensions import needs_of

    exts = (scenario.get("routing") or {}).get("extensions") or []
    names = {e if isinstance(e, str) else str((e or {}).get("name")) for e in exts}
    return any(needs_of(n).rewrites_ip_id for n in names)


def _link_events(scenario: dict[str, Any]) -> list[LinkEvent]:
    """The scenario's scripted ``set_link`` events (docs/scenarios.md)."""
    out = []
    for e in scenario.get("events") or []:
        if isinstance(e, dict) and e.get("op") == "set_link":
            try:
                out.append(
                    LinkEvent(
                        round(float(e["t_s"]) * 1e9), int(e["a"]), int(e["b"]), e.get("loss"), e.get("ber")
                    )
                )
            except (KeyError, TypeError, ValueError):
                continue
    return out


def _range_m(scenario: dict[str, Any]) -> float | None:
    radio = scenario.get("radio") or {}
    if radio.get("nominal_range_m") is not None:
        return float(radio["nominal_range_m"])
    try:
        from topologies.radio import radio_model

        return radio_model(radio["preset"], radio.get("overrides") or {}).range_m
    except (ImportError, KeyError, AttributeError, ValueError):
        return None


def timeouts_by_cause(expl: Sequence[Explanation]) -> dict[str, int]:
    c = Counter(e.cause for e in expl)
    return {k: c[k] for k in CAUSES if c[k]}


def report(data: RunData, expl: Sequence[Explanation]) -> dict[str, Any]:
    """``explain.json``'s content."""
    station_total = sum(
        int((v or {}).get("tcp_timeouts") or 0)
        for k, v in (data.summary.get("stations") or {}).items()
        if int(k[3:]) in data.series
    )
    return {
        "run_id": data.summary.get("run_id"),
        "timeouts": len(expl),
        "timeouts_of_sampled_stations": station_total,
        "by_cause": timeouts_by_cause(expl),
        "unknown_pct": round(100 * sum(e.cause == "unknown" for e in expl) / len(expl), 1) if expl else 0.0,
        "losses_by_cause": losses_by_cause(
            data.records, data.medium, data.reasons, data.link_events, data.tcp_keys
        ),
        "nominal_range_m": data.range_m,
        "rtos": [asdict(e) for e in expl],
    }


def analyze(run_dir: str | Path) -> tuple[RunData, list[Explanation], dict[str, Any]]:
    data = load_run(run_dir)
    expl = explain_rtos(
        data.records, data.medium, data.rtos, data.reasons, data.link_events, data.tcp_keys, data.timestamps
    )
    return data, expl, report(data, expl)


def write_report(run_dir: Path, rep: dict[str, Any]) -> Path:
    out = run_dir / "explain.json"
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rep, indent=1))
    tmp.replace(out)
    return out


def print_table(expl: Sequence[Explanation], out: Any = sys.stdout) -> None:
    print(f"{'t (s)':>8}  {'connection':<30} {'#':>2}  {'seq':>10}  {'cause':<24} detail", file=out)
    for e in expl:
        seq = "-" if e.seq is None else str(e.seq)
        cause = e.cause + (f" ({e.direction})" if e.direction else "")
        print(f"{e.t_s:8.3f}  {e.conn:<30} {e.index:>2}  {seq:>10}  {cause:<24} {e.detail}", file=out)
    c = timeouts_by_cause(expl)
    print(f"{len(expl)} timeouts: " + ", ".join(f"{k} {v}" for k, v in c.items()), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.explain", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="results/<experiment>/<run-id>")
    args = ap.parse_args(argv)
    try:
        data, expl, rep = analyze(args.run_dir)
    except RunDirError as exc:
        print(f"testbed.explain: {exc}", file=sys.stderr)
        return 2
    print_table(expl)
    print(f"wrote {write_report(data.run_dir, rep)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
