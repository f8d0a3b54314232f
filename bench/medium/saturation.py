"""Saturation throughput of the medium's 802.11 DCF against Bianchi's model.

Bianchi, "Performance Analysis of the IEEE 802.11 Distributed Coordination Function", IEEE
JSAC 18(3), 2000: n saturated stations, each transmits in a slot with probability tau, a
transmission collides with probability p = 1 - (1 - tau)^(n-1), and

    tau = 2 (1 - 2p) / ((1 - 2p)(W + 1) + p W (1 - (2p)^m)),  W = CWmin + 1, CWmax + 1 = 2^m W
    S = Ps Ptr E[P] / ((1 - Ptr) sigma + Ptr Ps Ts + Ptr (1 - Ps) Tc)

with Ts and Tc taken from the medium's own timing (the same RadioParams): 802.11b DSSS, long
PLCP (192 us), 1 Mbit/s control frames, 2 Mbit/s data, 28 bytes of MAC header + FCS, the
propagation delay delta of the geometry, and, as the medium does, EIFS (SIFS + ACK + DIFS)
after a collision instead of Bianchi's DIFS:

    basic:   Ts = DATA + SIFS + ACK + DIFS + 2 delta     Tc = DATA + EIFS + delta
    RTS/CTS: Ts = RTS + CTS + DATA + ACK + 3 SIFS + DIFS + 4 delta   Tc = RTS + EIFS + delta

The benchmark runs `manet-medium --virtual` with n saturated senders on a circle of 20 m around
one receiver (all in range of each other), for n = 1, 5, 10, with and without RTS/CTS, and
prints the measurement beside the model. Target: within 5 %.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BINARY, command_line, ensure_binary, write_result  # noqa: E402

# The medium's ns2-wavelan timing (medium/src/params.rs), in seconds.
SLOT = 20e-6
SIFS = 10e-6
DIFS = SIFS + 2 * SLOT
PLCP = 192e-6
DATA_RATE = 2e6
BASIC_RATE = 1e6
MAC_OVERHEAD = 28
RTS_BYTES, CTS_BYTES, ACK_BYTES = 20, 14, 14
CW_MIN, CW_MAX = 31, 1023
RADIUS_M = 20.0
C = 3.0e8  # ns-2 preset's speed of light


def frame_s(nbytes: int, rate: float) -> float:
    return PLCP + math.ceil(nbytes * 8 * 1e9 / rate) / 1e9


def bianchi(n: int, payload: int, rts: bool, delta: float) -> tuple[float, float, float]:
    """(throughput bit/s, tau, p) of Bianchi's model for n stations."""
    w = CW_MIN + 1
    m = round(math.log2((CW_MAX + 1) / w))

    def tau_of(p: float) -> float:
        if abs(1 - 2 * p) < 1e-12:
            p += 1e-9
        return 2 * (1 - 2 * p) / ((1 - 2 * p) * (w + 1) + p * w * (1 - (2 * p) ** m))

    # Solve p = 1 - (1 - tau(p))^(n-1) by bisection on f(p) = p - (1 - (1 - tau(p))^(n-1)).
    if n == 1:
        p = 0.0
    else:
        lo, hi = 0.0, 0.999
        for _ in range(200):
            mid = (lo + hi) / 2
            f = mid - (1 - (1 - tau_of(mid)) ** (n - 1))
            if f > 0:
                hi = mid
            else:
                lo = mid
        p = (lo + hi) / 2
    tau = tau_of(p)
    p_tr = 1 - (1 - tau) ** n
    p_s = n * tau * (1 - tau) ** (n - 1) / p_tr
    data = frame_s(payload + MAC_OVERHEAD, DATA_RATE)
    ack = frame_s(ACK_BYTES, BASIC_RATE)
    eifs = SIFS + ack + DIFS
    if rts:
        r, c = frame_s(RTS_BYTES, BASIC_RATE), frame_s(CTS_BYTES, BASIC_RATE)
        ts = r + c + data + ack + 3 * SIFS + DIFS + 4 * delta
        tc = r + eifs + delta
    else:
        ts = data + SIFS + ack + DIFS + 2 * delta
        tc = data + eifs + delta
    s = p_s * p_tr * payload * 8 / ((1 - p_tr) * SLOT + p_tr * p_s * ts + p_tr * (1 - p_s) * tc)
    return s, tau, p


def measure(n: int, payload: int, rts: bool, duration: float, seed: int) -> float:
    stations = [{"id": 1, "trajectory": [[0.0, 0.0, 0.0]]}]
    for i in range(n):
        a = 2 * math.pi * i / n
        stations.append({"id": i + 2, "trajectory": [[0.0, RADIUS_M * math.cos(a), RADIUS_M * math.sin(a)]]})
    cfg = {
        "run_id": "bench0",
        "seed": seed,
        "radio": {"preset": "ns2-wavelan", "overrides": {"rts_threshold": 0 if rts else 3000}},
        "stations": stations,
        "saturated": [{"src": i + 2, "dst": 1, "len": payload} for i in range(n)],
    }
    with tempfile.TemporaryDirectory() as d:
        cp = Path(d) / "c.json"
        cp.write_text(json.dumps(cfg))
        out = Path(d) / "counters.json"
        subprocess.run(
            [
                str(BINARY),
                "--config",
                str(cp),
                "--virtual",
                "--duration",
                str(duration),
                "--counters",
                str(out),
            ],
            check=True,
        )
        c = json.loads(out.read_text())
    return c["frames"]["payload_bytes_acked"] * 8 / (c["virtual_time_ns"] / 1e9)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=200.0, help="virtual seconds per point")
    ap.add_argument("--payload", type=int, default=1000, help="IP packet bytes per frame")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ns", default="1,5,10")
    args = ap.parse_args()
    ensure_binary()
    rows = []
    worst = 0.0
    print(
        f"{'n':>3} {'access':>8} {'medium Mbit/s':>14} {'Bianchi Mbit/s':>15} {'tau':>7} {'p':>7} {'error':>7}"
    )
    for rts in (False, True):
        for n in (int(x) for x in args.ns.split(",")):
            meas = measure(n, args.payload, rts, args.duration, args.seed)
            model, tau, p = bianchi(n, args.payload, rts, RADIUS_M / C)
            err = (meas - model) / model
            worst = max(worst, abs(err))
            access = "rts/cts" if rts else "basic"
            print(
                f"{n:>3} {access:>8} {meas / 1e6:>14.4f} {model / 1e6:>15.4f} {tau:>7.4f} {p:>7.4f} {err:>+7.2%}"
            )
            rows.append(
                {
                    "n": n,
                    "access": access,
                    "measured_bps": meas,
                    "bianchi_bps": model,
                    "tau": tau,
                    "p": p,
                    "rel_error": err,
                }
            )
    meets = worst <= 0.05
    print(f"worst relative error {worst:.2%} (target <= 5%): {'OK' if meets else 'MISSED'}")
    path = write_result(
        "medium_saturation_bianchi",
        round(worst * 100, 3),
        "% max relative error vs Bianchi",
        "<= 5 %",
        meets,
        command_line(),
        points=rows,
        duration_s=args.duration,
        payload_bytes=args.payload,
    )
    print(f"wrote {path}")
    return 0 if meets else 1


if __name__ == "__main__":
    sys.exit(main())
