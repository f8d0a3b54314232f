"""The medium's ground truth of AODV's false link failures on the 4-hop chain (issue 11, item 2).

``sudo python3 bench/multihop/trace_collapse.py [--duration 30] [--seed 1] [--set FIELD=JSON]``
runs topologies/chain5.yaml with AODV, no window cap, pcaps on and the medium's event log
(``--event-log``), then reads the event log:

- every unicast that failed after the MAC's retries (``status`` != ok): when, which link, RTS
  and DATA attempts, the medium's cause (collision / out of range / ...);
- every broadcast the size of a RREQ (52-byte IP packet) and, for each neighbour in range of
  the sender, whether it received it, and if not what that neighbour was doing: transmitting
  itself (half duplex) or receiving/overlapped by another frame (a collision);
- the time from each failure to the next RREQ flood and to the end of that discovery.

The run folder keeps the pcaps (tshark decodes AODV and TCP) for the frame-by-frame view of
docs/fidelity.md "AODV after a false link failure". Root; real time.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BROADCAST = 0xFFFF_FFFF
"""The medium's station id for broadcast in its event log (medium/src/lib.rs BROADCAST)."""
MAC_OVERHEAD_B = 28
"""24-byte 802.11 header + 4-byte FCS (docs/benchmarks-e2e.md)."""
PLCP_NS = 192_000
DATA_RATE_BPS = 2_000_000
RREQ_IP_BYTES = 20 + 8 + 24
RERR_IP_BYTES = 20 + 8 + 12


def airtime_ns(ip_bytes: int) -> int:
    return PLCP_NS + -(-(8 * (ip_bytes + MAC_OVERHEAD_B) * 1_000_000_000) // DATA_RATE_BPS)


@dataclass(frozen=True, slots=True)
class Tx:
    t: int
    sta: int
    kind: str
    dst: int
    dur: int


Receptions = dict[tuple[int, int], list[int]]
"""(receiver, sender) -> sorted times of the receptions that went well."""


def load_events(
    path: Path,
) -> tuple[list[Tx], list[dict[str, Any]], Receptions, dict[tuple[int, int, int], str]]:
    """Transmissions, failed TX statuses, good receptions and failed locked receptions
    ({(receiver, sender, t): cause}) from the medium's event log."""
    txs: list[Tx] = []
    fails: list[dict[str, Any]] = []
    ok: Receptions = {}
    bad: dict[tuple[int, int, int], str] = {}
    with path.open() as f:
        for line in f:
            if not line.startswith('{"t"'):
                continue
            e = json.loads(line)
            ev = e["ev"]
            if ev == "tx":
                txs.append(Tx(e["t"], e["sta"], e["kind"], e["dst"], e["dur"]))
            elif ev == "status" and e["status"] == "failed":
                fails.append(e)
            elif ev == "rx" and e["outcome"] == "ok":
                ok.setdefault((e["sta"], e["from"]), []).append(e["t"])
            elif ev == "rx":
                bad[(e["sta"], e["from"], e["t"])] = e["outcome"]
    for v in ok.values():
        v.sort()
    return txs, fails, ok, bad


def received(ok: Receptions, tx: Tx, r: int, slack_ns: int = 20_000_000) -> bool:
    """Whether ``r``'s capture shows a RREQ from ``tx``'s sender within ``slack_ns`` of its end
    (the medium logs good receptions of broadcasts only in its counters)."""
    times = ok.get((r, tx.sta), [])
    end = tx.t + tx.dur
    i = bisect.bisect_left(times, end - slack_ns)
    return i < len(times) and times[i] <= end + slack_ns


def pcap_rreqs(run_dir: Path, n: int, first_offer_ns: int) -> Receptions:
    """RREQs each station's capture shows from each neighbour, on the medium's clock (aligned by
    the first RREQ of the run, sta1's, whose offer time both record)."""
    import subprocess

    def frames(sta: int) -> list[tuple[float, int]]:
        pcap = run_dir / "pcaps" / f"sta{sta}.pcap"
        out = subprocess.run(
            [
                "tshark",
                "-r",
                str(pcap),
                "-Y",
                "aodv.type == 1",
                "-T",
                "fields",
                "-e",
                "frame.time_epoch",
                "-e",
                "wlan.ta",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        rows = []
        for line in out:
            if line.strip():
                t, ta = line.split("\t")
                rows.append((float(t), int(ta.split(":")[-1], 16)))
        return rows

    own = [t for t, ta in frames(1) if ta == 1]
    offset = own[0] - first_offer_ns / 1e9 if own else 0.0
    rx: Receptions = {}
    for r in range(1, n + 1):
        for t, ta in frames(r):
            if ta != r:
                rx.setdefault((r, ta), []).append(int((t - offset) * 1e9))
    for v in rx.values():
        v.sort()
    return rx


def why_missed(txs: list[Tx], bad: dict[tuple[int, int, int], str], tx: Tx, r: int) -> str:
    end = tx.t + tx.dur
    for (rr, ss, t), cause in bad.items():
        if rr == r and ss == tx.sta and abs(t - end) <= 50_000:
            return f"locked on it, lost: {cause}"
    for o in txs:
        if o is tx or o.t > end:
            continue
        if o.t + o.dur < tx.t:
            continue
        if o.sta == r:
            return "receiver transmitting"
        return f"overlapped by sta{o.sta} {o.kind}"
    return "no overlapping frame (capture/propagation)"


def analyse(log: Path, n: int, run_dir: Path) -> dict[str, Any]:
    txs, fails, _, bad = load_events(log)
    txs.sort(key=lambda x: x.t)
    rreq_dur = airtime_ns(RREQ_IP_BYTES)
    rreqs = [x for x in txs if x.dst == BROADCAST and x.kind == "data" and abs(x.dur - rreq_dur) < 2000]
    ok = pcap_rreqs(run_dir, n, rreqs[0].t) if rreqs else {}
    missed: Counter[str] = Counter()
    per_rreq = []
    for x in rreqs:
        nbs = [s for s in (x.sta - 1, x.sta + 1) if 1 <= s <= n]
        got = {r: received(ok, x, r) for r in nbs}
        for r, g in got.items():
            if not g:
                missed[why_missed(txs, bad, x, r)] += 1
        per_rreq.append({"t_s": x.t / 1e9, "sta": x.sta, "received_by": [r for r, g in got.items() if g]})
    fail_rows = [
        {
            "t_s": e["t"] / 1e9,
            "sta": e["sta"],
            "status": e["status"],
            "rts": e["rts"],
            "data": e["data"],
            "cause": e["cause"],
        }
        for e in fails
    ]
    n_nb = sum(len([s for s in (x.sta - 1, x.sta + 1) if 1 <= s <= n]) for x in rreqs)
    return {
        "failed_unicasts": fail_rows,
        "failed_by_cause": dict(Counter(r["cause"] for r in fail_rows)),
        "rreq_broadcasts": len(rreqs),
        "rreq_neighbour_receptions_missed": sum(missed.values()),
        "rreq_neighbour_receptions": n_nb,
        "rreq_missed_because": dict(missed),
        "rreqs": per_rreq,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=JSON")
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--analyse", nargs=2, default=None, metavar=("EVENTS.LOG", "RUN_DIR"), help="only analyse"
    )
    args = ap.parse_args()
    if args.analyse:
        print(json.dumps(analyse(Path(args.analyse[0]), 5, Path(args.analyse[1])), indent=1))
        return 0
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    from testbed.medium import MEDIUM_BIN
    from testbed.run import Testbed

    tmp = Path(args.out or tempfile.mkdtemp(prefix="trace-collapse-"))
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "events.log"
    wrapper = tmp / "medium-with-event-log.sh"
    wrapper.write_text(f'#!/bin/sh\nexec "{MEDIUM_BIN}" "$@" --event-log "{log}"\n')
    wrapper.chmod(0o755)
    overrides: dict[str, Any] = {
        "duration_s": args.duration + 2,
        "routing.protocol": "aodv",
        "traffic.tcp[0].duration_s": args.duration,
        "traffic.tcp[0].max_window_pkts": None,
        "capture.pcap": True,
    }
    overrides.update({k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)})
    with Testbed(
        "topologies/chain5.yaml",
        seed=args.seed,
        experiment="trace-collapse",
        out_root=tmp,
        overrides=overrides,
        quiet=True,
        medium_bin=wrapper,
    ) as tb:
        summary = tb.run()
        run_dir = tb.dir
    res = analyse(log, 5, run_dir)
    res["run_dir"] = str(run_dir)
    res["throughput_bps"] = summary["flows"][0]["throughput_bps"]
    res["network"] = summary.get("network", {})
    (run_dir / "collapse.json").write_text(json.dumps(res, indent=1) + "\n")
    short = {k: v for k, v in res.items() if k not in ("rreqs", "failed_unicasts")}
    print(json.dumps(short, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
