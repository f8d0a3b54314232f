"""tcpctl on the real station stack (issue 5 "Done means"): ``testbed.run.Testbed`` with a static
4-station chain (ns2-wavelan radio, the real medium, the real routers with the endpoint agent),
kernel TCP via iperf3 sta1 -> sta4, and a scripted outage of the sta2-sta3 link (medium
``set_link loss 1.0``, then cleared).

CI's kernel-TCP tests of the endpoint agent's own retransmission and of Vegas; ABRA, Fixed RTO,
ELFN and ATCP are tested once each, turned on by a scenario, in tests/netns/test_extensions.py.
The two ``slow`` ones here (``make test-full``) are the reference (the kernel's own backoff over a
14 s outage) and ELFN's ``restore: default`` variant (tests/README.md).

    sta1 (sender: iperf3 + agent) -- sta2 -- X -- sta3 -- sta4 (iperf3 server)

The test talks to sta1's agent through its router's tcpctl control socket
(``nodes.tcpctl.station``), reads the per-connection time series the runner records
(``tcp/sta1.csv``: tcp_info every 100 ms) and the BPF state of the connection (exact RTO log).
Each run's directory under ``results/tcpctl-stack/`` keeps its time series, nstat counters,
summary.json and ``tcpctl_test.json`` (the numbers asserted here). Bounds are coarse: the medium
runs at 2 Mbit/s with RTTs of tens of ms, on a loaded 2-core machine.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from stack_run import StackRun, chain_testbed, skip_without_stack

pytestmark = [pytest.mark.netns]
T_FLOW = 1.0  # the flow starts (run time, s)
T_OUT = 5.0  # the sta2-sta3 link goes down
OUTAGE_S = 10.0
T_BACK = T_OUT + OUTAGE_S
PROBE_S = 2.0  # ELFN thaw timer
ACK_QUIET_S = 0.25
"""After the break, freeze once no segment has reached the sender for this long: the ACKs that
were between the break and the sender have arrived (they wait behind sta2's failing data frames,
seen > 0.3 s after the break), and the kernel's RTO (>= 0.6 s here) has not expired."""


@pytest.fixture(autouse=True)
def _skip_without_prereq() -> None:
    skip_without_stack()


class Run(StackRun):
    """One Testbed run in a thread; the test scripts the outage and the agent meanwhile."""

    def __init__(
        self,
        tmp: Path,
        name: str,
        duration_s: float,
        flows: list[dict[str, Any]],
        *,
        tcpctl: bool = True,
        tcp: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        super().__init__(
            chain_testbed(
                tmp,
                name.replace("_", "-").lower(),
                duration_s,
                flows,
                {"protocol": "static", "routes": "auto"},
                experiment="tcpctl-stack",
                tcp=tcp,
                tcpctl=tcpctl,
            ),
            "tcpctl_test.json",
        )
        self.extra["test"] = name

    def series(self, conn: str) -> list[dict[str, Any]]:
        smp = self.tb.sampler
        assert smp is not None
        return [r for r in smp.samples.get("sta1", []) if r["conn"] == conn]

    def kernel(self, conn: str) -> dict[str, Any]:
        st = self.agent().call("state", conn=conn)
        self.extra["agent"] = st["agent"]
        k = st["kernel"]
        assert k is not None, "no BPF state for the connection"
        self.extra["bpf"] = {kk: v for kk, v in k.items() if kk != "rto_events"}
        self.extra["rto_log_us"] = [e["rto_us"] for e in k["rto_events"]]
        # BPF time (CLOCK_MONOTONIC) -> router time: run time 0 is the medium's epoch
        epoch = time.monotonic_ns() - self.agent().call("now")["now_ns"]
        for e in k["rto_events"]:
            e["t_s"] = (e["t_ns"] - epoch) / 1e9
        self.extra["rto_events_t_s"] = [round(e["t_s"], 3) for e in k["rto_events"]]
        return dict(k)

    def wait_acks_quiet(self, conn: str, quiet_s: float, timeout_s: float) -> float:
        """Router time once ``conn``'s sender has received nothing for ``quiet_s``."""
        end = time.monotonic() + timeout_s
        seen, since = -1, time.monotonic()
        while time.monotonic() < end:
            n = self.agent().call("state", conn=conn)["agent"]["seg_in"]
            if n != seen:
                seen, since = n, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                break
            time.sleep(0.02)
        return self.now()

    def trace(self, conn: str) -> list[list[Any]]:
        tr: list[list[Any]] = self.agent().call("trace_dump", conn=conn)["trace"]
        return tr


def sta1_timeouts(summary: dict[str, Any]) -> int:
    return int(summary["stations"]["sta1"]["tcp_timeouts"])


def rtos_in(series: list[dict[str, Any]], t0: float, t1: float) -> list[dict[str, Any]]:
    return [s for s in series if t0 <= s["t_s"] <= t1]


def first_new_data_after(trace: list[list[Any]], port: int, t_s: float) -> float | None:
    """First segment out of ``port`` carrying data beyond everything sent before ``t_s``."""
    high = None
    for t_ns, d, sport, _dport, _seq, end, _ack, _win, plen in trace:
        if d != "out" or sport != port or not plen:
            continue
        if t_ns / 1e9 <= t_s:
            high = end if high is None or (end - high) & 0x80000000 == 0 else high
        elif high is not None and end != high and (end - high) & 0x80000000 == 0:
            return float(t_ns / 1e9)
    return None


def first_out_after(trace: list[list[Any]], port: int, t_s: float) -> float | None:
    for t_ns, d, sport, _dport, _seq, _end, _ack, _win, plen in trace:
        if d == "out" and sport == port and plen and t_ns / 1e9 > t_s:
            return float(t_ns / 1e9)
    return None


def first_in_after(trace: list[list[Any]], port: int, t_s: float) -> float | None:
    for t_ns, d, _sport, dport, *_ in trace:
        if d == "in" and dport == port and t_ns / 1e9 > t_s:
            return float(t_ns / 1e9)
    return None


def port_of(conn: str) -> int:
    return int(conn.split("->")[0].rsplit(":", 1)[1])


FLOW = {"src": 1, "dst": 4, "start_s": T_FLOW, "cc": "reno", "max_window_pkts": 12}


# ------------------------------------------------------------------------------------------ tests


@pytest.mark.slow  # the reference, not a mechanism of ours (tests/README.md)
def test_baseline_outage_rto_exponential_backoff(tmp_path: Path) -> None:
    # the outage's 3rd expiration comes ~7 x RTO0 after the break; with a queue-inflated first
    # RTO (0.7-1.3 s measured) that was once 10 ms before a 10 s outage ended, and after the link
    # is back the answer can come within one 100 ms sample of it: this test's outage is 14 s
    t_back = T_OUT + 14.0
    with Run(tmp_path, "baseline", t_back + 6, [FLOW]) as r:
        r.at(T_FLOW + 2)
        conn = r.data_conn()
        r.at(T_OUT)
        r.link(False)
        r.at(t_back)
        r.link(True)
        summ = r.finish()
        k = r.kernel(conn)
        ser = r.series(conn)
        # the outage's expirations (not an RTO before it, seen at ~1.4 s in some runs, nor a
        # fresh one of the flow after it)
        ev = [e for e in k["rto_events"] if T_OUT < e["t_s"] <= t_back]
        rtos = [e["rto_us"] for e in ev]
        t_end = ev[2]["t_s"] + 0.3 if len(ev) >= 3 else t_back
        during = rtos_in(ser, T_OUT, t_end)
        r.extra.update(
            timeouts=sta1_timeouts(summ),
            outage_rto_us=rtos,
            series_rto_timeouts=[during[0].get("rto_timeouts"), during[-1].get("rto_timeouts")]
            if during
            else None,
            max_backoff=max((s.get("backoff", 0) for s in during), default=None),
        )
    assert sta1_timeouts(summ) >= 3, r.extra
    # exponential backoff: each RTO of the outage is twice the previous (BPF log, within a jiffy);
    # the first may follow an estimate refreshed by ACKs still in flight when the link broke
    assert len(ev) >= 3, r.extra
    for a, b in zip(rtos[1:], rtos[2:], strict=False):
        assert abs(b - 2 * a) <= 8_000, rtos
    # ... and visible in the 100 ms time series
    assert r.extra["max_backoff"] >= 3, r.extra
    assert during[-1]["rto_timeouts"] - during[0]["rto_timeouts"] >= 3, r.extra
    assert summ["flows"][0]["tcp"]["rto_timeouts"] >= 3


@pytest.mark.slow  # restore=old: test_extensions.py's ELFN run, in CI (tests/README.md)
@pytest.mark.parametrize("restore", ["default", "default_srtt"])
def test_elfn_freeze_thaw_restore_default(tmp_path: Path, restore: str) -> None:
    """Frozen through the control socket with ``restore: default``: the thaw sets cwnd 2 and an
    RTO of 6 s, held until new data is ACKed. ``default_srtt``: cwnd 2 with the estimator left as
    it was (the thawing ACK's sample is the srtt at the freeze): the RTO after the thaw stays
    near the one at the freeze, nowhere near 6 s (issue 47, item 2)."""
    # Linux restarts cwnd at the initial window when the application writes after more than an
    # RTO without sending and nothing is outstanding (tcp_slow_start_after_idle): after a thaw
    # whose ACK covers everything (seen under a CPU hog: 28 restored, 10 at the next ACK) that
    # undoes restore=old. ns-2's TCP, the papers', has no such restart.
    no_idle_restart = {"slow_start_after_idle": False}
    with Run(tmp_path, f"elfn_{restore}", T_BACK + 6, [FLOW], tcp=no_idle_restart) as r:
        r.at(T_FLOW + 2)
        conn = r.data_conn()
        r.agent().call("trace", conn=conn)
        r.at(T_OUT)
        t_out = r.link(False)
        # any ACK that arrives while frozen thaws (Yu 2004 Algorithm 2), also one already on its
        # way back when the link broke: freeze once those have arrived, well before the kernel's
        # RTO (>= 0.6 s here)
        t_freeze = r.wait_acks_quiet(conn, ACK_QUIET_S, 2.0)
        r.agent().call("freeze", conn=conn, restore=restore)
        n0 = r.timeouts_now()
        # the probes go out every 2 s from the freeze: bring the link back between two of them
        # (half an interval before the 5th), not on one (a few ms either way would decide whether
        # that probe or the next one, 2 s later, is answered)
        r.at(T_BACK - PROBE_S / 2)
        t_back = r.link(True)
        r.at(T_BACK + PROBE_S + 0.3)
        n1 = r.timeouts_now()
        summ = r.finish()
        k = r.kernel(conn)
        tr = r.trace(conn)
        port = port_of(conn)
        t_thaw = first_in_after(tr, port, t_back)
        t_resume = first_out_after(tr, port, t_thaw) if t_thaw is not None else None  # the kernel sends
        t_new_data = first_new_data_after(tr, port, t_back)
        ser = r.series(conn)
        after = [s for s in ser if t_thaw is not None and s["t_s"] > t_thaw - 0.05]
        r.extra.update(
            t_out=t_out,
            t_freeze=t_freeze,
            t_back=t_back,
            t_thaw=t_thaw,
            t_resume=t_resume,
            t_new_data=t_new_data,
            timeouts_run=sta1_timeouts(summ),
            timeouts_frozen=n1 - n0,
            rto_after_thaw_us=k["post_rto_us"],
            rto_before_freeze_us=k["frz_rto_us"],
            probes=(r.extra.get("agent") or {}).get("probes"),
            cwnd_after=[s.get("cwnd") for s in after[:5]],
            rto_after_ms=[s.get("rto_ms") for s in after[:5]],
        )
    # no kernel RTO timeout while frozen (nor until the thaw)
    assert n1 - n0 == 0, r.extra
    assert not [e for e in k["rto_events"] if t_out <= e["t_s"] <= t_back + PROBE_S], r.extra
    # one probe every 2 s; transmission resumes within one probe interval of the link's return
    assert r.extra["probes"] >= (OUTAGE_S - PROBE_S / 2) / PROBE_S - 1
    assert t_thaw is not None and t_resume is not None
    # the answered probe (a data segment) resumes transmission within one probe interval ...
    assert t_thaw - t_back <= PROBE_S + 0.1, r.extra
    # ... and the kernel's own segments follow: with the defaults (cwnd 2) its loss recovery
    # first resends the outstanding window (measured 0-3.2 s; the run records 5 s after the thaw)
    assert t_resume - t_thaw <= 4.0, r.extra
    assert k["cmd_done"] == 2
    assert k["applied_cwnd"] == 2
    # under default_srtt the thawing ACK's sample is the freeze's srtt, so RACK (its reordering
    # window follows the RTT) marks the window sent before the outage lost at once and PRR may
    # send with cwnd 1 at the next ACK (measured 2026-12-02: cwnd 2, 2, 1, 2, 2 in the 100 ms
    # series); the 6 s sample of `default` also holds RACK off
    assert k["post_cwnd"] in ((2, 3) if restore == "default" else (1, 2, 3)), r.extra
    assert k["thaw_rto_us"] <= 6_000_000, r.extra  # the thawing ACK's own sample already capped
    if restore == "default":
        assert k["post_rto_us"] == 6_000_000, r.extra  # RTO 6 s until new data is ACKed
    else:  # nothing injected: the kernel's RTO right after the thaw is about the one at the freeze
        assert k["thaw_rto_us"] <= 2 * k["frz_rto_us"], r.extra
        assert k["post_rto_us"] < 6_000_000, r.extra
    assert k["rto_hold"] == 0  # ... released at the first ACK of data sent after the thaw


def test_agent_retransmits_a_reported_drop_before_the_kernel_rto(tmp_path: Path) -> None:
    with Run(tmp_path, "agent_rexmt", 8, [{**FLOW, "max_window_pkts": 6}]) as r:
        r.at(T_FLOW + 2.5)
        conn = r.data_conn()
        r.agent().call("trace", conn=conn)
        r.agent().call("drop_next", conn=conn, report_after_ms=5)
        time.sleep(2)
        ev = r.agent().call("events")["events"]
        tr = r.trace(conn)
        k = r.kernel(conn)  # BPF state (also kept in r.extra), RTO expirations in run time
        summ = r.finish()
        dropped = next(e for e in ev if e["event"] == "dropped")
        reported = next(e for e in ev if e["event"] == "reported")
        seq, t_drop = dropped["seq"], dropped["t_ns"]
        port = port_of(conn)
        outs = [t for t, d, sp, _dp, s, *_ in tr if d == "out" and sp == port and s == seq and t > t_drop]
        acked = [
            t
            for t, d, _sp, dp, _s, _e, ack, *_ in tr
            if d == "in" and dp == port and t > t_drop and (ack - seq - 1) & 0x80000000 == 0
        ]
        t_drop_s = t_drop / 1e9  # the kernel's RTO then (tcp_info, last sample before the drop)
        before = [x for x in r.series(conn) if x["t_s"] <= t_drop_s + 0.01 and x.get("rto_ms")]
        # without a sample: Linux's RTO is at least srtt + rto_min (tcp_set_rto: srtt + rttvar,
        # rttvar >= rto_min = 200 ms), srtt from the BPF state
        srtt_ms = float(k.get("srtt_us") or 0) / 1000
        rto_ms = float(before[-1]["rto_ms"]) if before else 200.0 + srtt_ms
        r.extra.update(
            events=ev,
            retransmissions_on_wire_ns=outs,
            t_acked_ns=acked[:1],
            rto_ms=rto_ms,
            timeouts=sta1_timeouts(summ),
        )
    assert reported["retransmitted"]
    assert outs and outs[0] == reported["t_ns"]  # the first copy on the wire is the agent's
    assert acked and (acked[0] - t_drop) / 1e6 < rto_ms, r.extra  # before the kernel RTO
    # ... and the kernel's retransmission timer did not expire on this drop: no RTO of the data
    # connection from the drop until well past the RTO it would have taken (the station's nstat
    # count is not the measure: it also counts the iperf3 control connection, whose results
    # exchange, queued behind the data with an RTO from the idle start, can meet a spurious RTO)
    assert not [e for e in k["rto_events"] if t_drop_s <= e["t_s"] <= t_drop_s + 2 * rto_ms / 1000], r.extra
    assert k["n_rto"] <= len(k["rto_events"])  # the log holds every expiration


def test_vegas_flat_where_reno_saws(tmp_path: Path) -> None:
    flows = [
        {"src": 1, "dst": 3, "start_s": 0.5, "duration_s": 11, "cc": "reno"},
        {"src": 1, "dst": 3, "start_s": 12, "duration_s": 11, "cc": "vegas"},
    ]
    with Run(tmp_path, "vegas_reno", 23.5, flows, tcpctl=False) as r:
        summ = r.finish()
        out = {}
        for fs in summ["flows"]:
            conn = fs["tcp"]["conn"]
            ser = [s for s in r.series(conn) if s["t_s"] > fs["started_at_s"] + 3 and "cwnd" in s]
            cw = sorted(int(s["cwnd"]) for s in ser)
            p10, p90 = cw[len(cw) // 10], cw[9 * len(cw) // 10]
            out[fs["cc"]] = {
                "cc_kernel": fs["tcp"]["cc"],
                "min": cw[0],
                "max": cw[-1],
                "n": len(cw),
                "p10": p10,
                "p90": p90,
                "spread": p90 - p10,
                "retrans": fs["tcp"]["retrans_total"],
                "throughput_bps": fs["throughput_bps"],
            }
        r.extra["cwnd"] = out
    v, reno = out["vegas"], out["reno"]
    assert v["cc_kernel"].startswith("vegas_") and reno["cc_kernel"] == "reno"
    assert v["n"] > 50 and reno["n"] > 50
    # flat vs saw-tooth, judged against each other rather than by an absolute width: RTT noise of
    # the 802.11 chain moves Vegas now and then (stored runs: 10th-90th percentile spread 1-2
    # segments, once 7 with a window between 4 and 14 when the machine was busy), while Reno's saw
    # spans tens and never drains its queue: Vegas' 90th percentile stays below Reno's 10th.
    assert v["spread"] <= 10, out
    assert v["p90"] < reno["p10"], out
    assert reno["max"] - reno["min"] >= 20 and reno["spread"] >= 2 * max(v["spread"], 1), out
    assert reno["retrans"] > 0
    # ... and Vegas keeps the queue short: it loses less than Reno, whose saw overflows the
    # interface queue (stored run: 0 against 38; the link layer's own losses keep it above 0 now
    # and then, so not == 0 as on a wired bottleneck)
    assert v["retrans"] < reno["retrans"], out


def test_out_of_range_ssthresh_is_repaired_and_counted(tmp_path: Path) -> None:
    """bpf/common.bpf.h cc_repair: the value this kernel's struct_ops .ssthresh now and then hands
    TCP (0x81104110; docs/tcpctl.md), written into the live connection through the agent's
    CMD_SET, is put back at the next ACK: the sampled state never stays out of range, cwnd never
    bursts, and the run's summary counts the repair."""
    fault = 0x81104110
    with Run(tmp_path, "cc_repair", 8, [{**FLOW, "max_window_pkts": 12}]) as r:
        r.at(T_FLOW + 3.0)
        conn = r.data_conn()
        r.agent().call("set_cwnd", conn=conn, segments=0, ssthresh=fault)
        time.sleep(2)
        summ = r.finish()
        ser = [s for s in r.series(conn) if "ssthresh" in s]
        r.extra.update(repairs=summ.get("tcp_cc_repairs_by_cc"), faults=summ.get("tcp_cc_faults"))
    assert summ["tcp_cc_repairs_by_cc"]["mtctl"]["ssthresh"] >= 1, r.extra
    # a 100 ms sample may fall between the write and the next ACK: at most that one episode
    assert summ["tcp_cc_repairs"] >= 1 and summ["tcp_cc_faults"] <= 1, r.extra
    after = [s for s in ser if s["t_s"] > T_FLOW + 3.5]
    assert after and all(int(s["ssthresh"]) <= 0x7FFFFFFF and int(s["cwnd"]) <= 64 for s in after), after
