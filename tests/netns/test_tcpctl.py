"""tcpctl on real kernel TCP (iperf3) over tcpctl's own three-namespace chain (tests/netns/minichain.py):

    A (iperf3 client) -tun0-> TunShell + EndpointAgent -veth-> R (scripted outage: nft drop) -veth-> B

with the run's BPF side loaded (sock_ops + controllable Reno ``mtctl_<id>`` + Vegas ``vegas_<id>``).
The same steps on the full station stack: tests/netns/test_tcpctl_stack.py.
Each test builds and deletes its own namespaces (``mtt<hex>-``) and BPF pins (``/sys/fs/bpf/mt<id>``).
Outage: 10 s of the R-B link, both directions. Times are wall-clock; tolerances are generous
(2-core machine), the assertions are on invariants and on the kernel's own RTO log.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from minichain import A_IP, B_IP, MiniChain, TunShell

from nodes.core.events import Action
from nodes.tcpctl import kernel as K
from nodes.tcpctl import nsutil, observe
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import AgentParams, ConnId, EndpointAgent, TcpUnreachable
from nodes.tcpctl.api import Abra, FixedAfterTwo, TcpControl
from nodes.tcpctl.kernelseam import BpfKernel

pytestmark = [pytest.mark.netns, pytest.mark.slow]
OUTAGE_S = 10.0
RESULTS = Path(os.environ.get("TCPCTL_RESULTS", "results/tcpctl-netns"))


def _prereq() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not K.TCPCTL_OBJ.exists() or not K.VEGAS_OBJ.exists():
        return "BPF objects not built (make -C nodes/tcpctl/bpf)"
    return None


@pytest.fixture(autouse=True)
def _skip_without_prereq() -> None:
    why = _prereq()
    if why:
        pytest.skip(why)


class Rig:
    """Chain + BPF + agent + samplers for one test."""

    def __init__(self, name: str, rate: str | None = None) -> None:
        self.name = name
        self.chain = MiniChain()
        self.run_id = "t" + self.chain.hexid[:5]
        self.shell: TunShell | None = None
        self.sampler: observe.Sampler | None = None
        self.chain.up(rate=rate)
        self.loaded = K.load(self.run_id)
        self.maps = K.Maps(self.run_id)
        self.cookie = nsutil.in_netns(self.chain.ns("a"), K.netns_cookie_of_current)
        self.maps.register_netns(self.cookie, 1)
        self.kernel = BpfKernel(self.maps, self.cookie)
        self.agent = EndpointAgent(socket.inet_aton(A_IP), AgentParams(), kernel=self.kernel)
        self.api = TcpControl(self.agent)

    def sysctl(self, ns: str, kv: str) -> None:
        self.chain.exec(ns, f"sysctl -qw {kv}")

    def start_flow(self, seconds: int, rate: str = "2M", cc: str | None = None, extra: str = "") -> None:
        self.shell = TunShell(self.chain, self.agent)
        self.shell.start()
        self.chain.popen("b", "iperf3 -s -1")
        time.sleep(0.4)
        self.nstat0 = observe.nstat(self.chain.ns("a"))
        self.sampler = observe.Sampler(
            self.chain.ns("a"), filter=f"dst {B_IP}", bpf_state=self._bpf_by_name
        ).start()
        self.iperf = self.chain.popen(
            "a", f"iperf3 -c {B_IP} -t {seconds} -b {rate} -C {cc or self.loaded.ctl_cc} {extra}"
        )

    def _bpf_by_name(self, conn: str) -> dict[str, Any] | None:
        local, remote = conn.split("->")
        lip, lport = local.rsplit(":", 1)
        rip, rport = remote.rsplit(":", 1)
        return self.maps.state(
            K.ConnKey(self.cookie, socket.inet_aton(lip), socket.inet_aton(rip), int(lport), int(rport))
        )

    def now_s(self) -> float:
        assert self.sampler is not None
        return time.monotonic() - self.sampler.t0

    def shell_t_s(self, t_ns: int) -> float:
        """Shell time (ns since its start) on the sampler's clock."""
        assert self.shell is not None and self.sampler is not None
        return (self.shell.t0 / 1e9 + t_ns / 1e9) - self.sampler.t0

    def data_conn(self, timeout: float = 5.0) -> ConnId:
        assert self.shell is not None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            cid = self.shell.call_sync(
                lambda now: max(self.agent.conns.values(), key=lambda c: c.stats["seg_out"], default=None)
            )
            if cid is not None and cid.stats["seg_out"] > 50:
                return cid.id  # type: ignore[no-any-return]
            time.sleep(0.2)
        raise AssertionError("no iperf3 data connection")

    def call(self, fn: Any) -> Any:
        assert self.shell is not None
        return self.shell.call_sync(fn)

    def outage(self, on: bool) -> float:
        self.chain.outage(on)
        return self.now_s()

    def finish(self) -> dict[str, Any]:
        assert self.sampler is not None
        self.sampler.stop()
        self.nstat1 = observe.nstat(self.chain.ns("a"))
        return observe.summary(self.nstat0, self.nstat1)

    def save(self, conn: ConnId, extra: dict[str, Any]) -> None:
        if self.sampler is None:
            return
        out = RESULTS / self.name
        self.sampler.write(out)
        (out / "summary.json").write_text(json.dumps({"conn": str(conn), **extra}, indent=1, default=str))

    def close(self) -> None:
        try:
            if self.sampler is not None:
                self.sampler.stop()
            if self.shell is not None:
                self.shell.stop()
            self.maps.close()
        finally:
            self.chain.close()
            K.cleanup(self.run_id)


@pytest.fixture
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    r = Rig(request.node.name)
    try:
        yield r
    finally:
        r.close()


def rto_log(st: dict[str, Any]) -> list[int]:
    return [e["rto_us"] for e in st["rto_events"]]


def first_inbound_after(rig: Rig, conn: ConnId, t_s: float) -> float | None:
    assert rig.shell is not None
    for t_ns, d, p in list(rig.shell.wire):
        v = P.parse_tcp(p)
        if d == "in" and v is not None and v.dport == conn.local_port and rig.shell_t_s(t_ns) > t_s:
            return rig.shell_t_s(t_ns)
    return None


def first_new_data_after(rig: Rig, conn: ConnId, t_s: float) -> float | None:
    """First segment carrying data beyond everything sent before ``t_s``."""
    assert rig.shell is not None
    high = None
    for t_ns, d, p in list(rig.shell.wire):
        v = P.parse_tcp(p)
        if d != "out" or v is None or v.sport != conn.local_port or not v.payload_len:
            continue
        if rig.shell_t_s(t_ns) <= t_s:
            high = v.end_seq if high is None or P.seq_lt(high, v.end_seq) else high
        elif high is not None and P.seq_lt(high, v.end_seq):
            return rig.shell_t_s(t_ns)
    return None


# ----------------------------------------------------------------------------------- tests


def test_baseline_outage_rto_exponential_backoff(rig: Rig) -> None:
    rig.start_flow(24)
    conn = rig.data_conn()
    time.sleep(3)
    t_out = rig.outage(True)
    time.sleep(OUTAGE_S)
    t_back = rig.outage(False)
    time.sleep(8)
    summ = rig.finish()
    st = rig.kernel.state(conn)
    assert st is not None
    rtos = rto_log(st)
    rig.save(conn, {"t_outage": t_out, "t_back": t_back, "nstat": summ, "rto_log_us": rtos})
    assert summ["TcpExtTCPTimeouts"] >= 4
    assert st["n_rto"] >= 4
    # exponential backoff: each RTO doubles the previous one (within one jiffy)
    for a, b in zip(rtos, rtos[1:], strict=False):
        assert abs(b - 2 * a) <= 4_000, rtos
    ser = rig.sampler.series(str(conn))  # type: ignore[union-attr]
    assert max(int(s.get("backoff", 0)) for s in ser) >= 4


@pytest.mark.parametrize("restore", ["old", "default"])
def test_elfn_freeze_thaw(rig: Rig, restore: str) -> None:
    rig.start_flow(24)
    conn = rig.data_conn()
    time.sleep(3)
    t_out = rig.outage(True)
    rig.call(lambda now: rig.api.freeze(conn, now, restore=restore))  # type: ignore[arg-type]
    # the probes go out every 2 s from the freeze: bring the link back between two of them (1 s
    # before the 5th), not on one, where a few ms decide whether this probe or the next is answered
    time.sleep(OUTAGE_S - 1.0)
    t_back = rig.outage(False)
    time.sleep(6)
    summ = rig.finish()
    st = rig.kernel.state(conn)
    assert st is not None
    t_thaw = first_inbound_after(rig, conn, t_back)
    t_resume = first_new_data_after(rig, conn, t_back)
    probes = rig.agent.conns[conn].stats["probes"]
    ser = rig.sampler.series(str(conn))  # type: ignore[union-attr]
    after = [s for s in ser if t_thaw is not None and s["t_s"] > t_thaw]
    rig.save(
        conn,
        {
            "t_outage": t_out,
            "t_back": t_back,
            "t_thaw": t_thaw,
            "t_resume": t_resume,
            "nstat": summ,
            "bpf": {k: v for k, v in st.items() if k != "rto_events"},
            "probes": probes,
            "rto_after_thaw_ms": after[0].get("rto_ms") if after else None,
        },
    )
    # no kernel RTO timeout of the data connection while frozen (its BPF count: the station's nstat
    # also counts the iperf3 control connection, whose results exchange can meet a spurious RTO)
    assert st["n_rto"] == 0, summ
    # one probe every 2 s while frozen; transmission resumes within one probe interval
    assert probes >= int((OUTAGE_S - 1.0) / 2) - 1
    assert t_thaw is not None and t_resume is not None
    assert t_thaw - t_back <= 2.0 + 0.5
    assert t_resume - t_back <= 2.0 + 0.5
    assert st["cmd_done"] == 2
    if restore == "old":
        assert st["applied_cwnd"] == st["frz_cwnd"] > 2
        assert st["post_cwnd"] >= st["frz_cwnd"]
    else:
        assert st["applied_cwnd"] == 2
        assert st["post_cwnd"] in (2, 3)  # at the next ACK (Reno may have added one)


def test_agent_retransmits_a_reported_drop_before_the_kernel_rto(rig: Rig) -> None:
    rig.start_flow(10, rate="1M")
    conn = rig.data_conn()
    time.sleep(2)
    assert rig.shell is not None
    box: dict[str, Any] = {}

    def drop_one(pkt: bytes) -> bool:
        v = P.parse_tcp(pkt)
        if v is None or v.sport != conn.local_port or v.payload_len == 0 or "seq" in box:
            return False
        box["seq"], box["t_drop"] = v.seq, rig.now_s()

        # the network reports the loss to the agent, which retransmits from its copy
        def report(now: int) -> list[Action]:
            acts = rig.api.retransmit(conn, v.seq, now)
            box["t_rexmt"] = rig.now_s()
            return acts

        rig.shell.call(report)  # type: ignore[union-attr]
        return True

    rig.shell.call(lambda now: setattr(rig.shell, "drop_filter", drop_one) or [])  # type: ignore[func-returns-value]
    time.sleep(3)
    summ = rig.finish()
    seq = box["seq"]
    t_acked = None
    outs = []
    for t_ns, d, p in list(rig.shell.wire):
        v = P.parse_tcp(p)
        if v is None:
            continue
        if d == "out" and v.sport == conn.local_port and v.seq == seq:
            outs.append(rig.shell_t_s(t_ns))
        if (
            d == "in"
            and v.dport == conn.local_port
            and P.seq_lt(seq, v.ack)
            and rig.shell_t_s(t_ns) > box["t_drop"]
        ):
            t_acked = t_acked or rig.shell_t_s(t_ns)
    st = rig.kernel.state(conn)
    rto_s = (st or {}).get("rto_us", 0) / 1e6 or 0.2
    rig.save(conn, {"box": box, "t_acked": t_acked, "retransmissions_on_wire": outs, "nstat": summ})
    assert rig.agent.conns[conn].stats["agent_rexmt"] == 1
    assert outs and abs(outs[0] - box["t_rexmt"]) < 0.05  # the first copy on the wire is the agent's
    assert t_acked is not None and t_acked - box["t_drop"] < max(rto_s, 0.2)
    assert st is not None and st["n_rto"] == 0, summ  # the data connection's kernel never timed out


def test_abra_backoff_and_restore(rig: Rig) -> None:
    rig.sysctl("a", "net.ipv4.tcp_rto_min_us=1000000")  # RFC 6298 2.4 (TCP_RTO_MAX_MS >= 1 s)
    rig.start_flow(30)
    conn = rig.data_conn()
    rig.api.rto_policy(conn, Abra(0.1, 0.6))
    time.sleep(3)
    rig.outage(True)
    time.sleep(OUTAGE_S)
    rig.outage(False)
    time.sleep(6)
    summ = rig.finish()
    st = rig.kernel.state(conn)
    assert st is not None
    rtos = rto_log(st)
    ratios = [b / a for a, b in zip(rtos, rtos[1:], strict=False)]
    mn = min(100_000, st["min_srtt_us"])
    f = 1 + (st["last_srtt_us"] - mn) / (600_000 - mn) if st["max_srtt_us"] <= 600_000 else None
    rig.save(
        conn,
        {
            "nstat": summ,
            "rto_log_us": rtos,
            "ratios": ratios,
            "expected_factor": f,
            "bpf": {k: v for k, v in st.items() if k != "rto_events"},
        },
    )
    assert len(rtos) >= 4 and summ["TcpExtTCPTimeouts"] >= 4
    for e, nxt in zip(st["rto_events"], rtos[1:], strict=False):
        assert abs(nxt - e["next_cap_us"]) <= 5_000  # the kernel used the ABRA cap
    for r in ratios:
        assert 1.0 <= r < 1.9, ratios  # not 2
    if f is not None:
        for r in ratios:
            assert abs(r - f) < 0.02, (ratios, f)
    # after recovery: cwnd = saved/2, ssthresh = saved/4
    assert st["recoveries"] >= 1
    assert st["applied_cwnd"] == max(1, st["last_cwnd"] // 2)
    assert st["applied_ssthresh"] == max(2, st["last_ssthresh"] // 4)


def test_fixed_rto_stops_doubling_after_two(rig: Rig) -> None:
    rig.sysctl("a", "net.ipv4.tcp_rto_min_us=1000000")
    rig.start_flow(26)
    conn = rig.data_conn()
    rig.api.rto_policy(conn, FixedAfterTwo())
    time.sleep(3)
    rig.outage(True)
    time.sleep(OUTAGE_S)
    rig.outage(False)
    time.sleep(5)
    summ = rig.finish()
    st = rig.kernel.state(conn)
    assert st is not None
    rtos = rto_log(st)
    rig.save(conn, {"nstat": summ, "rto_log_us": rtos})
    assert len(rtos) >= 4
    assert abs(rtos[1] - 2 * rtos[0]) <= 4_000  # first timeout: doubled
    assert all(r == rtos[1] for r in rtos[2:]), rtos  # then fixed
    assert st["recoveries"] >= 1


def test_atcp_destination_unreachable(rig: Rig) -> None:
    rig.start_flow(40)
    conn = rig.data_conn()
    handled: list[float] = []

    def on_du(ev: TcpUnreachable) -> list[Action]:
        handled.append(rig.now_s())
        return rig.api.atcp_disconnect(ev.conn, ev.now_ns)

    rig.api.on_unreachable(on_du)
    time.sleep(3)
    t_out = rig.outage(True)

    # the network (here: the test, standing in for the routing core) reports "host unreachable"
    def du(now: int) -> list[Action]:
        c = rig.agent.conns[conn]
        ref = next(reversed(c.segments.values())) if c.segments else c.last_out_pkt
        assert ref is not None
        return rig.agent.on_inbound(P.icmp_dest_unreachable(ref, bytes([10, 0, 2, 254])), now)

    rig.call(du)
    time.sleep(OUTAGE_S)
    t_back = rig.outage(False)
    deadline = time.monotonic() + 28
    t_resume = None
    while time.monotonic() < deadline and t_resume is None:
        time.sleep(0.5)
        t_resume = first_new_data_after(rig, conn, t_back)
    summ = rig.finish()
    st = rig.kernel.state(conn)
    assert st is not None
    ser = rig.sampler.series(str(conn))  # type: ignore[union-attr]
    during = [s for s in ser if t_out + 0.5 < s["t_s"] < t_back]
    # kernel probes after the link returned, and the first answer
    probes_after = []
    assert rig.shell is not None
    for t_ns, d, p in list(rig.shell.wire):
        v = P.parse_tcp(p)
        if d == "out" and v is not None and v.sport == conn.local_port and rig.shell_t_s(t_ns) > t_back:
            probes_after.append(rig.shell_t_s(t_ns))
    t_answer = first_inbound_after(rig, conn, t_back)
    rig.save(
        conn,
        {
            "t_outage": t_out,
            "t_back": t_back,
            "t_resume": t_resume,
            "t_answer": t_answer,
            "first_probe_after_return": probes_after[:1],
            "nstat": summ,
            "bpf": {k: v for k, v in st.items() if k != "rto_events"},
        },
    )
    assert handled
    assert st["applied_cwnd"] == 1
    assert during and all(s.get("cwnd") == 1 for s in during)  # one segment while disconnected
    assert st["n_rto"] == 0, summ  # persist, not RTO (zero-window expirations are not RTOs)
    assert t_resume is not None and t_answer is not None
    assert (
        probes_after and probes_after[0] <= t_answer <= t_resume + 0.05
    )  # resumed when a probe was answered


def test_vegas_bpf_flat_where_reno_saws() -> None:
    chain = MiniChain()
    run = "v" + chain.hexid[:5]
    out: dict[str, Any] = {}
    try:
        chain.up(rate="8mbit", queue_bytes=100_000)
        vegas = K.load(run).vegas_cc
        assert vegas is not None
        for cc in ("reno", vegas):
            chain.popen("b", "iperf3 -s -1")
            time.sleep(0.4)
            smp = observe.Sampler(chain.ns("r"), filter=f"dst {B_IP}").start()
            p = chain.popen("r", f"iperf3 -c {B_IP} -t 8 -C {cc}")
            p.wait(30)
            smp.stop()
            conn = smp.busiest()
            assert conn is not None
            ser = [s for s in smp.series(conn) if s["t_s"] > 2.5 and "cwnd" in s]
            cw = [int(s["cwnd"]) for s in ser]
            out[cc] = {
                "cc": ser[0].get("cc"),
                "min": min(cw),
                "max": max(cw),
                "n": len(cw),
                "retrans": max(int(s.get("retrans_total", 0)) for s in ser),
            }
            smp.write(RESULTS / "vegas", cc)
        (RESULTS / "vegas" / "summary.json").write_text(json.dumps(out, indent=1))
    finally:
        chain.close()
        K.cleanup(run)
    v, r = out[vegas], out["reno"]
    assert v["cc"] == vegas and r["cc"] == "reno"
    assert v["max"] - v["min"] <= 3  # flat
    assert r["max"] - r["min"] >= 10  # saw-tooth
    assert r["retrans"] > 0 and v["retrans"] == 0
