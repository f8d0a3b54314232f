"""Single-hop iperf3 TCP throughput on the real testbed against the 802.11 DCF cycle (issue 6).

"Single-hop iperf3 TCP throughput within 10 % of the analytic figure." The benchmark runs the
real testbed (root): two network namespaces, the real Rust medium (real-time mode, SCHED_FIFO),
the real station routers (static routing), kernel TCP Reno with iperf3, two stations 150 m
apart (topologies/bench-single-hop.yaml: ns2-wavelan, 2 Mbit/s data, 1 Mbit/s basic rate,
RTS/CTS before every unicast frame as ns-2), one flow sta1 -> sta2 of 30 s, three runs. It
compares the receiver's throughput (iperf3 server intervals in the flow's 30 s, as
`testbed.run` reports it) with the analytic figure below, and writes
results/bench/e2e_single_hop_tcp.json.

Analytic model (docs/benchmarks-e2e.md has the derivation and the numbers)
---------------------------------------------------------------------------
Timing exactly as the medium models it (medium/src/params.rs, core/dcf.rs; ns2-wavelan): slot
sigma = 20 us, SIFS = 10 us, DIFS = SIFS + 2 sigma = 50 us, EIFS = SIFS + DIFS + T_ACK = 364 us;
every frame has the 192 us long PLCP preamble + header, then its MAC bytes at its rate, rounded up
to the ns: T(bytes, rate) = 192 us + ceil(8 bytes / rate). RTS 20 B, CTS 14 B, ACK 14 B at the
1 Mbit/s basic rate (352, 304, 304 us); a DATA frame is the IP packet + 28 B (24 B MAC header +
4 B FCS; LLC/SNAP is not modelled) at 2 Mbit/s. Propagation delay delta = d / c (c = 3e8 m/s,
0.5 us at 150 m), once per frame of an exchange.

TCP over it: MSS 1460 with timestamps on (the scenario's default) leaves 1448 B of payload in a
1500 B IP packet (20 IP + 20 TCP + 12 timestamp option); a pure ACK is 52 B. Linux acknowledges
every second full-sized segment (`__tcp_ack_snd_check`: more than one rcv_mss of unacknowledged
data; quick-ACK mode only at the connection's start and after out-of-order data), so b = 2
segments per ACK. Each TCP ACK is a unicast frame with its own RTS/CTS/DATA/ACK exchange.

    T_seg = DIFS + RTS + SIFS + CTS + SIFS + DATA(1500) + SIFS + ACK + 4 delta   = 7346 us
    T_ack = DIFS + RTS + SIFS + CTS + SIFS + DATA(52)   + SIFS + ACK + 4 delta   = 1554 us

Contention ("saturated sender, two-station DCF", no router or kernel delay): sta1 always has a
segment queued, so after each of its exchanges it draws a backoff uniform in [0, CWmin] and every
one of its slots is eventually counted (frozen while sta2 sends, resumed after). sta2's backoff
for a TCP ACK counts down *at the same time* as sta1's (both start after the same DIFS), so the
channel's idle slots are exactly sta1's: CWmin/2 = 15.5 slots per data segment and none extra
per ACK. The two collide when both counters reach 0 in the same slot: a race of sta2's counter
against sta1's successive fresh draws, solved exactly (`ack_rounds`: on average R = 1.71 rounds per
ACK, each with collision probability 1/(CWmin+1)), so p_c = R/32 collisions per ACK. A collision
costs RTS + delta + EIFS (the medium waits EIFS after the CTS timeout) plus sta1's new backoff
drawn from [0, 2 CWmin + 1] (31.5 slots on average); repeated collisions (1/64) are neglected.

    cycle of b segments = b (T_seg + CWmin/2 sigma) + T_ack + p_c (RTS + delta + EIFS + (2 CWmin + 1)/2 sigma)
    S = b * 8 * 1448 / cycle                                          = 1.3678 Mbit/s at 150 m

The simpler sequential no-collision model, in which the ACK also waits for a full backoff of its
own (as if the two stations never counted down together), gives 1.3489 Mbit/s; it is reported as
`analytic_sequential_bps` for comparison. Neither model contains the testbed's own delays (router
and kernel turnaround between a TX_STATUS or RX and the next TX offer), TCP's loss recovery
(the router's 50-packet interface queue overflows under uncapped Reno) or slow start: the
benchmark measures those instead (ACK ratio from nstat, collisions and airtime from the medium's
counters, drops from the routers', CPU of the routers and the medium, load average) and prints
how much of the flow's time the DCF model accounts for with the measured frame counts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SCENARIO = ROOT / "topologies" / "bench-single-hop.yaml"
RESULTS = ROOT / "results" / "bench"
NAME = "e2e_single_hop_tcp"

# The medium's ns2-wavelan timing (medium/src/params.rs), in ns.
SLOT = 20_000
SIFS = 10_000
DIFS = SIFS + 2 * SLOT
PLCP = 192_000
DATA_RATE = 2_000_000
BASIC_RATE = 1_000_000
MAC_OVERHEAD = 28  # 24 B header + 4 B FCS; no LLC/SNAP
RTS_B, CTS_B, ACK_B = 20, 14, 14
CW_MIN = 31
C_MPS = 3.0e8  # ns-2 preset's speed of light
IP_TCP_HDR = 40
TS_OPT = 12


def frame_ns(nbytes: int, rate: int) -> int:
    """params.rs frame_ns: PLCP + bits at the rate, rounded up to the ns."""
    return PLCP + -(-nbytes * 8 * 1_000_000_000 // rate)


T_RTS, T_CTS, T_ACK = (frame_ns(b, BASIC_RATE) for b in (RTS_B, CTS_B, ACK_B))
EIFS = SIFS + DIFS + T_ACK


@cache
def ack_rounds(cw: int = CW_MIN) -> float:
    """Expected contention rounds a TCP ACK of sta2 goes through before it is sent or collides.

    Round 1: sta1 and sta2 both draw uniformly in [0, cw] at the end of sta1's exchange; sta2
    goes first if its draw is smaller, they collide if equal, otherwise sta1 sends and sta2
    keeps the residual r = B2 - B1 >= 1. Round k > 1: sta1 draws afresh in [0, cw] against r.
    """
    n = cw + 1
    # g[r] = expected rounds from a round where sta2's residual is r (this round counted):
    # g[r] = 1 + sum_{b < r} g[r - b] / n   (sta1 drew b < r: sta1 sends, sta2 keeps r - b);
    # b = 0 leaves r unchanged, so g[r] (1 - 1/n) = 1 + sum_{0 < b < r} g[r - b] / n
    g = [0.0] * n
    for r in range(1, n):
        g[r] = (1.0 + sum(g[r - b] for b in range(1, r)) / n) / (1.0 - 1.0 / n)
    # round 1: P(B1 = b1, B2 = b2) = 1/n^2; sta2 continues with r = b2 - b1 when b2 > b1
    cont = sum(g[b2 - b1] for b1 in range(n) for b2 in range(b1 + 1, n)) / (n * n)
    return 1.0 + cont


def analytic(
    distance_m: float = 150.0, mss: int = 1460, timestamps: bool = True, seg_per_ack: int = 2
) -> dict[str, Any]:
    """The DCF cycle of `seg_per_ack` TCP segments and one TCP ACK; throughput in bit/s."""
    delta = distance_m / C_MPS * 1e9
    tcp_opt = TS_OPT if timestamps else 0
    ip_len = mss + IP_TCP_HDR  # full-sized packet: MTU 1500 for MSS 1460
    payload = mss - tcp_opt  # application bytes per segment
    ack_len = IP_TCP_HDR + tcp_opt
    t_data = frame_ns(ip_len + MAC_OVERHEAD, DATA_RATE)
    t_ackdata = frame_ns(ack_len + MAC_OVERHEAD, DATA_RATE)
    exch = T_RTS + SIFS + T_CTS + SIFS
    t_seg = DIFS + exch + t_data + SIFS + T_ACK + 4 * delta
    t_tcpack = DIFS + exch + t_ackdata + SIFS + T_ACK + 4 * delta
    backoff = CW_MIN / 2 * SLOT
    rounds = ack_rounds(CW_MIN)
    p_c = rounds / (CW_MIN + 1)
    t_coll = T_RTS + delta + EIFS + (2 * CW_MIN + 1) / 2 * SLOT
    cycle = seg_per_ack * (t_seg + backoff) + t_tcpack + p_c * t_coll
    cycle_seq = seg_per_ack * (t_seg + backoff) + t_tcpack + backoff
    bits = seg_per_ack * 8 * payload
    return {
        "analytic_bps": bits / cycle * 1e9,
        "analytic_sequential_bps": bits / cycle_seq * 1e9,
        "cycle_ns": cycle,
        "t_seg_ns": t_seg,
        "t_tcpack_ns": t_tcpack,
        "t_data_frame_ns": t_data,
        "t_ack_data_frame_ns": t_ackdata,
        "t_rts_ns": T_RTS,
        "t_cts_ns": T_CTS,
        "t_ack_ns": T_ACK,
        "mean_backoff_ns": backoff,
        "collision_cost_ns": t_coll,
        "ack_contention_rounds": rounds,
        "p_collision_per_ack": p_c,
        "propagation_delay_ns": delta,
        "ip_packet_bytes": ip_len,
        "payload_bytes_per_segment": payload,
        "tcp_ack_ip_bytes": ack_len,
        "segments_per_ack": seg_per_ack,
    }


def accounted_time_s(a: dict[str, Any], data_frames: int, ack_frames: int, collisions: int) -> float:
    """Channel time the DCF model predicts for the measured frame counts (diagnostic)."""
    t = data_frames * (a["t_seg_ns"] + a["mean_backoff_ns"]) + ack_frames * a["t_tcpack_ns"]
    return float(t + collisions * a["collision_cost_ns"]) / 1e9


# ---------------------------------------------------------------------------- measurement


def _cpu_s(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _machine_busy() -> tuple[float, float]:
    """(busy jiffies, total jiffies) of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + vals[4]
    return float(sum(vals) - idle), float(sum(vals))


def _loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def _nstat_delta(run_dir: Path, sta: str, key: str) -> int:
    before = json.loads((run_dir / "nstat" / "before.json").read_text()).get(sta, {})
    after = json.loads((run_dir / "nstat" / "after.json").read_text()).get(sta, {})
    return int(after.get(key, 0)) - int(before.get(key, 0))


def _offloads(tb: Any) -> dict[str, Any]:
    res = tb.station(1).cmd(["ethtool", "-k", "tun0"], timeout=10)
    out: dict[str, Any] = {}
    for key in (
        "tcp-segmentation-offload",
        "generic-segmentation-offload",
        "generic-receive-offload",
        "tx-checksumming",
        "scatter-gather",
    ):
        m = re.search(rf"^{key}: (\S+)", res.stdout, re.M)
        out[key] = m.group(1) if m else None
    link = tb.station(1).cmd(["ip", "-o", "link", "show", "tun0"], timeout=10).stdout
    m = re.search(r"qlen (\d+)", link)
    out["tun0_txqueuelen"] = int(m.group(1)) if m else None
    m = re.search(r"mtu (\d+)", link)
    out["tun0_mtu"] = int(m.group(1)) if m else None
    return out


def _medium_wrapper(tmp: Path, log: Path) -> Path:
    """A medium "binary" that runs the real one with --event-log (Testbed's medium_bin)."""
    from testbed.medium import MEDIUM_BIN

    w = tmp / "medium-with-event-log.sh"
    w.write_text(f'#!/bin/sh\nexec "{MEDIUM_BIN}" "$@" --event-log "{log}"\n')
    w.chmod(0o755)
    return w


def run_once(
    duration_s: float, seed: int, window_pkts: int | None, out_root: Path, sniff: bool, event_log: bool
) -> dict[str, Any]:
    from idle_breakdown import analyze

    from testbed.run import Testbed

    tmp = Path(tempfile.mkdtemp(prefix="e2e-"))
    log = tmp / "events.log"
    medium_bin = _medium_wrapper(tmp, log) if event_log else None

    overrides: dict[str, Any] = {
        "duration_s": duration_s + 2,
        "traffic.tcp[0].duration_s": duration_s,
    }
    if window_pkts:
        overrides["traffic.tcp[0].max_window_pkts"] = window_pkts
    load0 = _loadavg()
    with Testbed(
        SCENARIO,
        seed=seed,
        experiment="bench-e2e",
        out_root=out_root,
        overrides=overrides,
        quiet=True,
        medium_bin=medium_bin,
    ) as tb:
        offl = _offloads(tb)
        dump = None
        if sniff:  # sizes of the first 400 packets the kernel hands to tun0 (GSO must be split)
            dump = tb.station(1).popen(
                ["timeout", str(duration_s), "tcpdump", "-ni", "tun0", "-c", "400", "-q", "-l", "-Q", "out"],
                role="tcpdump",
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        pids = {"medium": tb.medium_proc.pid if tb.medium_proc else None}
        pids.update({f"router_sta{sid}": st.router_pid for sid, st in tb.stations.items()})
        cpu0 = {k: _cpu_s(p) for k, p in pids.items()}
        busy0 = _machine_busy()
        t0 = time.monotonic()
        summary = tb.run()
        wall = time.monotonic() - t0
        cpu1 = {k: _cpu_s(p) for k, p in pids.items()}
        busy1 = _machine_busy()
        run_dir = tb.dir
        max_len = None
        if dump is not None:
            try:
                out, _ = dump.communicate(timeout=10)
                # tcpdump -q: "IP a.p > b.q: tcp N" with N the TCP payload; + 52 B of headers
                lens = [int(x) for x in re.findall(rb": tcp (\d+)", out)]
                max_len = max(lens) + IP_TCP_HDR + TS_OPT if lens else None
            except subprocess.TimeoutExpired:
                dump.kill()
    load1 = _loadavg()
    flow = summary["flows"][0]
    server = json.loads((run_dir / "flows" / "tcp0.server.json").read_text())
    ivs = [iv["sum"] for iv in server.get("intervals", []) if not iv["sum"].get("omitted")]
    steady = [s for s in ivs if 2.0 - 1e-6 <= s["start"] < duration_s - 1e-6]
    steady_bps = 8 * sum(s["bytes"] for s in steady) / sum(s["seconds"] for s in steady) if steady else None
    med = json.loads((run_dir / "medium" / "counters.json").read_text())
    routers = {s: json.loads((run_dir / "routers" / f"sta{s}.counters.json").read_text()) for s in (1, 2)}
    ps = med["per_station"]
    collisions = sum(n * (int(k) - 1) for k, n in med["rts_attempts_histogram"].items())
    data_segs = _nstat_delta(run_dir, "sta1", "TcpOutSegs")
    acks = _nstat_delta(run_dir, "sta2", "TcpOutSegs")
    breakdown = None
    if event_log and log.exists():
        breakdown = analyze(log)
        dest = run_dir / "medium" / "events.log"
        log.replace(dest)
        breakdown["event_log"] = str(dest)
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    cpu: dict[str, float | None] = {}
    for k in pids:
        c0, c1 = cpu0[k], cpu1[k]
        cpu[k] = (c1 - c0) / wall if c0 is not None and c1 is not None else None
    return {
        "run_dir": str(run_dir),
        "throughput_bps": flow["throughput_bps"],
        "steady_bps": steady_bps,
        "bytes_received": flow.get("bytes_received"),
        "retransmits": flow.get("retransmits"),
        "tcp_timeouts": flow.get("tcp_timeouts"),
        "tcp_data_segments_sent": data_segs,
        "tcp_acks_sent": acks,
        "acks_per_segment": acks / data_segs if data_segs else None,
        "tcp_ofo_queued": _nstat_delta(run_dir, "sta2", "TcpExtTCPOFOQueue"),
        "ip_out_requests_sta1": _nstat_delta(run_dir, "sta1", "IpOutRequests"),
        "medium_frames_sta1": ps["1"]["acked"] + ps["1"]["failed"],
        "medium_frames_sta2": ps["2"]["acked"] + ps["2"]["failed"],
        "medium_failed": med["frames"]["failed"],
        "medium_rejected": med["frames"]["rejected"],
        "rts_collisions": collisions,
        "airtime_s": {s: ps[s]["airtime_ns"] / 1e9 for s in ps},
        "virtual_time_s": med["virtual_time_ns"] / 1e9,
        "lag_p99_us": med.get("lag", {}).get("p99_ns", 0) / 1e3,
        "lag_max_us": med.get("lag", {}).get("max_ns", 0) / 1e3,
        "ifq_drops_sta1": routers[1]["counters"]["drops"].get("ifq_full", 0),
        "router_drops": {s: routers[s]["counters"]["drops"] for s in routers},
        "cpu_fraction": cpu,
        "machine_busy_fraction": (busy1[0] - busy0[0]) / max(1.0, busy1[1] - busy0[1]),
        "loadavg_before": load0,
        "loadavg_after": load1,
        "tun0": offl,
        "max_ip_len_on_tun0": max_len,
        "breakdown": breakdown,
    }


def git_state() -> dict[str, Any] | None:
    """Revision of the code measured and whether the router/testbed/medium sources differ from it."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "nodes", "testbed", "medium/src"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"rev": rev.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def write_result(rec: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{NAME}.json"
    out.write_text(json.dumps(rec, indent=2) + "\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of the TCP flow")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first run (+1 per run)")
    ap.add_argument("--window-pkts", type=int, default=None, help="iperf3 -w in segments (default: none)")
    ap.add_argument("--out", default="/tmp/manet-bench-e2e", help="where the runs' result folders go")
    ap.add_argument(
        "--no-event-log", action="store_true", help="do not log the medium's events (no breakdown)"
    )
    ap.add_argument("--model-only", action="store_true", help="print the analytic model and exit")
    args = ap.parse_args()

    a = analytic()
    print(
        f"analytic (two-station DCF, RTS/CTS, 150 m, MSS 1460 + timestamps, 1 ACK / 2 segments): "
        f"{a['analytic_bps'] / 1e6:.4f} Mbit/s  [T_seg {a['t_seg_ns'] / 1e3:.1f} us, "
        f"T_ack {a['t_tcpack_ns'] / 1e3:.1f} us, backoff {a['mean_backoff_ns'] / 1e3:.0f} us/segment, "
        f"p_c {a['p_collision_per_ack']:.4f}/ACK x {a['collision_cost_ns'] / 1e3:.1f} us]"
    )
    print(
        f"sequential no-collision model (ACK pays its own backoff): {a['analytic_sequential_bps'] / 1e6:.4f} Mbit/s"
    )
    if args.model_only:
        return 0
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    from testbed.medium import MEDIUM_BIN

    if not MEDIUM_BIN.exists():  # `make bench` builds it first; MANET_MEDIUM overrides the path
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "cargo.sh"), "build", "--release", "--quiet"],
            cwd=ROOT / "medium",
            check=True,
        )

    runs = []
    for i in range(args.runs):
        r = run_once(
            args.duration,
            args.seed + i,
            args.window_pkts,
            Path(args.out),
            sniff=(i == 0),
            event_log=not args.no_event_log,
        )
        bd = r["breakdown"] or {}
        if "window_s" in bd:  # frames and time of the flow's window only
            acc = accounted_time_s(a, bd["frames_sta1"], bd["frames_sta2"], r["rts_collisions"])
            r["dcf_accounted_fraction"] = acc / bd["window_s"]
        else:
            acc = accounted_time_s(a, r["medium_frames_sta1"], r["medium_frames_sta2"], r["rts_collisions"])
            r["dcf_accounted_fraction"] = acc / args.duration
        runs.append(r)
        cpu = r["cpu_fraction"]
        print(
            f"run {i + 1}: {r['throughput_bps'] / 1e6:.4f} Mbit/s (steady {r['steady_bps'] / 1e6:.4f}), "
            f"{(r['throughput_bps'] - a['analytic_bps']) / a['analytic_bps']:+.2%}; "
            f"ACKs/segment {r['acks_per_segment']:.3f}, retransmits {r['retransmits']}, "
            f"timeouts {r['tcp_timeouts']}, ifq drops {r['ifq_drops_sta1']}, RTS collisions {r['rts_collisions']}; "
            f"CPU medium {cpu['medium']:.0%} routers {cpu['router_sta1']:.0%}/{cpu['router_sta2']:.0%}, "
            f"machine busy {r['machine_busy_fraction']:.0%}, load {r['loadavg_before']:.2f}->{r['loadavg_after']:.2f}, "
            f"lag p99 {r['lag_p99_us']:.0f} us; DCF model with the measured frame counts accounts for "
            f"{r['dcf_accounted_fraction']:.1%} of the flow's time"
        )
        if "window_s" in bd:
            t1 = bd["sta1_turnaround_us"]
            print(
                f"       sta1 router+kernel turnaround p50 {t1['p50']:.0f} us p90 {t1['p90']:.0f} us; idle because "
                f"sta1's next frame came after its backoff: {bd['late_offer_idle_fraction']:.2%}; no frame at "
                f"either MAC: {bd['no_pending_fraction']:.2%}; sta2 data->ACK offer p50 "
                f"{bd['sta2_turnaround_us']['p50']:.0f} us; airtime {bd['airtime_fraction']:.1%}"
            )
    mean = sum(r["throughput_bps"] for r in runs) / len(runs)
    steady = sum(r["steady_bps"] for r in runs) / len(runs)
    err = (mean - a["analytic_bps"]) / a["analytic_bps"]
    meets = abs(err) <= 0.10
    print(
        f"measured mean {mean / 1e6:.4f} Mbit/s (steady state, t >= 2 s: {steady / 1e6:.4f}) vs analytic "
        f"{a['analytic_bps'] / 1e6:.4f} Mbit/s: {err:+.2%} (target within 10 %): {'OK' if meets else 'MISSED'}"
    )
    cmd = " ".join([os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]])
    path = write_result(
        {
            "name": NAME,
            "value": round(mean, 1),
            "unit": "bit/s",
            "target": f"within 10% of analytic {a['analytic_bps']:.0f} bit/s",
            "meets_target": bool(meets),
            "command": cmd,
            "analytic_bps": round(a["analytic_bps"], 1),
            "rel_error": round(err, 5),
            "steady_state_bps": round(steady, 1),
            "runs": runs,
            "model": {k: v for k, v in a.items() if k != "analytic_bps"},
            "duration_s": args.duration,
            "window_pkts": args.window_pkts,
            "scenario": str(SCENARIO.relative_to(ROOT)),
            "git": git_state(),
        }
    )
    print(f"wrote {path}")
    return 0 if meets else 1


if __name__ == "__main__":
    sys.exit(main())
