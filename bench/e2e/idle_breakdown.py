"""Where the channel time of a single-hop TCP run went, from the medium's event log.

`python3 bench/e2e/idle_breakdown.py EVENTS.LOG` (the medium's `--event-log`; single_hop_tcp.py
writes one per run). The DCF model of single_hop_tcp.py assumes the sender's next segment is at
its MAC the instant the previous exchange ends and that the receiver ACKs every second segment.
This measures both assumptions on the real run:

- `sta1_turnaround_us`: router + kernel time from a TX_STATUS of sta1 to its next TX offer
  (the router offers the next queued frame only after the previous one's status);
- `late_offer_idle_fraction`: channel time lost because sta1's next frame arrived after its
  post-backoff (DIFS + drawn slots) had already expired, while nothing else was on the air;
- `no_pending_fraction`: time in which neither MAC had a frame at all (turnarounds, TCP stalls);
- `sta2_turnaround_us`: from a data frame's reception at sta2 to sta2's next TX offer (the ACK);
- `airtime_fraction`: transmissions of both stations over the flow's window.
The flow's window runs from sta1's first full-sized (>= 1400 B) offer to sta1's last TX_STATUS.
"""

from __future__ import annotations

import bisect
import json
import sys
from pathlib import Path
from typing import Any

SLOT_NS = 20_000
DIFS_NS = 50_000


def _merge(iv: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _pct(xs: list[int], p: float) -> float:
    return xs[int(p * (len(xs) - 1))] / 1e3 if xs else float("nan")


def analyze(path: str | Path, src: int = 1, dst: int = 2) -> dict[str, Any]:
    offers: dict[int, list[tuple[int, int]]] = {src: [], dst: []}
    status: dict[int, list[int]] = {src: [], dst: []}
    backoff: dict[int, int] = {}
    txs: list[tuple[int, int, int, str]] = []
    rx_data_dst: list[int] = []
    with open(path) as f:
        for line in f:
            if not line.startswith('{"t"'):
                continue
            e = json.loads(line)
            k, s = e["ev"], e.get("sta")
            if k == "offer" and s in offers:
                offers[s].append((e["t"], e["len"]))
            elif k == "status" and s in status:
                status[s].append(e["t"])
            elif k == "backoff" and s == src:
                backoff[e["t"]] = e["slots"]
            elif k == "tx":
                txs.append((e["t"], e["t"] + e["dur"], s, e["kind"]))
            elif k == "rx" and s == dst and e["kind"] == "data" and e["outcome"] == "ok":
                rx_data_dst.append(e["t"])
    big = [t for t, n in offers[src] if n >= 1400]
    if not big or not status[src]:
        return {"error": "no full-sized frames from the sender in the log"}
    t_a, t_b = big[0], status[src][-1]
    span = t_b - t_a

    # exchanges occupy the channel from their first RTS/DATA to their status, plus the DIFS after
    occ: list[tuple[int, int]] = []
    for s in (src, dst):
        mine = [t[0] for t in txs if t[2] == s and t[3] in ("rts", "data")]
        j = 0
        for (t_off, _), t_st in zip(offers[s], status[s], strict=False):
            j = bisect.bisect_left(mine, t_off, lo=j)
            start = mine[j] if j < len(mine) else t_st
            occ.append((start, t_st + DIFS_NS))
    merged = _merge(occ)
    starts = [m[0] for m in merged]

    def free(a: int, b: int) -> int:
        if b <= a:
            return 0
        tot = b - a
        i = max(0, bisect.bisect_right(starts, a) - 1)
        while i < len(merged) and merged[i][0] < b:
            lo, hi = max(a, merged[i][0]), min(b, merged[i][1])
            if hi > lo:
                tot -= hi - lo
            i += 1
        return tot

    late = 0
    turn1: list[int] = []
    for i in range(len(status[src]) - 1):
        t_st, t_off = status[src][i], offers[src][i + 1][0]
        if t_st < t_a or t_off > t_b:
            continue
        turn1.append(t_off - t_st)
        late += free(t_st + DIFS_NS + backoff.get(t_st, 0) * SLOT_NS, t_off)
    turn1.sort()
    turn2: list[int] = []
    for t_off, _ in offers[dst]:
        i = bisect.bisect_left(rx_data_dst, t_off) - 1
        if i >= 0 and t_a <= t_off <= t_b:
            turn2.append(t_off - rx_data_dst[i])
    turn2.sort()
    pend = _merge([(o[0], st) for s in (src, dst) for o, st in zip(offers[s], status[s], strict=False)])
    covered = sum(min(b, t_b) - max(a, t_a) for a, b in pend if b > t_a and a < t_b)
    air = sum(min(b, t_b) - a for a, b, _, _ in txs if t_a <= a < t_b)
    n_src = sum(1 for t, _ in offers[src] if t_a <= t <= t_b)
    n_dst = sum(1 for t, _ in offers[dst] if t_a <= t <= t_b)
    return {
        "window_s": span / 1e9,
        "frames_sta1": n_src,
        "frames_sta2": n_dst,
        "sta1_turnaround_us": {
            p: _pct(turn1, q) for p, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
        },
        "sta1_turnaround_mean_us": sum(turn1) / len(turn1) / 1e3 if turn1 else None,
        "late_offer_idle_fraction": late / span,
        "no_pending_fraction": 1 - covered / span,
        "sta2_turnaround_us": {p: _pct(turn2, q) for p, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))},
        "airtime_fraction": air / span,
    }


def main() -> int:
    r = analyze(sys.argv[1])
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
