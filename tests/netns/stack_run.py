"""A real-stack run driven from a test: the testbed runs the scenario's traffic in a thread while
the test scripts link outages through the medium and talks to sta1's endpoint agent (tcpctl).
Shared by tests/netns/test_tcpctl_stack.py and tests/netns/test_extensions.py, with the scenario
both use (:func:`chain_scenario`)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nodes.tcpctl import kernel as K
from nodes.tcpctl import observe
from nodes.tcpctl.station import Client
from nodes.tcpctl.tcpprof import TCPPROF_OBJ
from testbed import run as tbrun
from testbed.medium import MEDIUM_BIN

RESULTS = Path(os.environ.get("TCPCTL_RESULTS", "results"))
"""Where the stack tests' runs go (each keeps its time series, counters and the test's record)."""


def skip_without_stack() -> None:
    """Skip unless root, the BPF objects and the medium are built."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not all(p.exists() for p in (K.TCPCTL_OBJ, K.VEGAS_OBJ, TCPPROF_OBJ)):
        pytest.skip("BPF objects not built (make -C nodes/tcpctl/bpf)")
    if not MEDIUM_BIN.exists():
        pytest.skip("medium not built (make medium)")


def chain_scenario(
    path: Path,
    name: str,
    duration_s: float,
    flows: list[dict[str, Any]],
    routing: dict[str, Any],
    *,
    tcp: dict[str, Any] | None = None,
    tcpctl: bool | None = None,
    udp: list[dict[str, Any]] | None = None,
) -> Path:
    """Write ``<path>/<name>.json``: 4 static stations 200 m apart on a line (a 3-hop chain with
    ns2-wavelan's 250 m range), Reno, the given flows, ``routing`` section and ``tcp`` knobs
    (topologies/tcp_profiles.py, on the legacy profile).
    ``tcpctl`` None writes no ``tcpctl`` section (the extension tests: an extension in
    ``routing.extensions`` turns the endpoint agent on). ``udp``: cross traffic flows."""
    data: dict[str, Any] = {
        "name": name,
        "duration_s": duration_s,
        "field": {"x_m": 800, "y_m": 100},
        "stations": {"count": 4, "placement": {"kind": "line", "spacing_m": 200, "origin": [0, 50]}},
        "radio": {"preset": "ns2-wavelan"},
        "mobility": {"model": "static"},
        "traffic": {"tcp": flows, "udp": udp or []},
        "routing": routing,
        "tcp": {"cc": "reno", **(tcp or {})},
    }
    if tcpctl is not None:
        data["tcpctl"] = {"enabled": tcpctl}
    p = path / f"{name}.json"
    p.write_text(json.dumps(data))
    return p


def chain_testbed(
    tmp: Path,
    name: str,
    duration_s: float,
    flows: list[dict[str, Any]],
    routing: dict[str, Any],
    *,
    experiment: str,
    tcp: dict[str, Any] | None = None,
    tcpctl: bool | None = None,
) -> tbrun.Testbed:
    """A ``Testbed`` of :func:`chain_scenario` with the routers run in-process
    (``nodes.router.main:run``), its results under ``RESULTS/<experiment>/``."""
    return tbrun.Testbed(
        chain_scenario(tmp, name, duration_s, flows, routing, tcp=tcp, tcpctl=tcpctl),
        experiment=experiment,
        out_root=RESULTS,
        router_target="nodes.router.main:run",
        quiet=True,
    )


class StackRun:
    """``with StackRun(testbed, record) as r:`` brings the stations up and starts the traffic in a
    thread; ``r.finish()`` joins it. What a test stores in ``r.extra`` is written to
    ``<run dir>/<record>`` at the end, beside the run's own results."""

    def __init__(self, tb: tbrun.Testbed, record: str) -> None:
        self.tb = tb
        self.record = record
        self.summary: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.extra: dict[str, Any] = {}
        self.client: Client | None = None

    def __enter__(self) -> StackRun:
        self.tb.__enter__()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self.summary = self.tb.run()
        except BaseException as exc:  # surfaced by finish()
            self.error = exc

    def __exit__(self, *exc: object) -> None:
        try:
            if self.client is not None:
                self.client.close()
            self.tb.stop()
        finally:
            if self.tb.results is not None:
                (self.tb.dir / self.record).write_text(json.dumps(self.extra, indent=1, default=str))

    def finish(self) -> dict[str, Any]:
        self.thread.join(120)
        if self.error is not None:
            raise self.error
        return self.summary

    def agent(self) -> Client:
        """The control socket of sta1's endpoint agent."""
        if self.client is None:
            assert self.tb.state is not None
            self.client = Client(self.tb.state / "sta1.tcpctl.sock")
        return self.client

    def at(self, t_s: float) -> None:
        """Sleep until run time ``t_s``."""
        time.sleep(max(0.0, t_s - self.tb.now_s()))

    def now(self) -> float:
        """sta1's router time (s)."""
        return float(self.agent().call("now")["now_ns"] / 1e9)

    def data_conn(self, timeout_s: float = 10.0) -> str:
        """The iperf3 data connection through sta1's agent (the one with the most segments)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            conns = self.agent().call("conns")["conns"]
            best = max(conns.items(), key=lambda kv: kv[1]["seg_out"], default=None)
            if best is not None and best[1]["seg_out"] > 20:
                return str(best[0])
            time.sleep(0.2)
        raise AssertionError("no iperf3 data connection through sta1's agent")

    def link(self, up: bool) -> float:
        """The sta2-sta3 link down (loss 1.0) or back; returns the router time (s) of the change."""
        self.tb.medium("set_link", a=2, b=3, loss=None if up else 1.0)
        return self.now()

    def unreachable_until(
        self, conn: str, t_end_s: float, every_s: float = 0.2, *, now: bool = True
    ) -> list[float]:
        """Hand sta1's agent an ICMP Destination Unreachable for ``conn`` now (unless ``now`` is
        false), as a router on the path would send it, and again whenever the sender is no longer
        in persist before run time ``t_end_s``: a late ACK, queued in the chain when the link
        broke, can arrive after the kernel's first probe and count as its answer, and the network
        answers the next segment with another one (Liu & Singh s III, "Effect of Lost Messages").
        Returns when it re-sent."""
        if now:
            self.agent().call("inject_unreachable", conn=conn)
        again: list[float] = []
        while self.tb.now_s() < t_end_s - every_s:
            self.at(self.tb.now_s() + every_s)
            if self.agent().call("state", conn=conn)["agent"]["hold"] != "PERSIST":
                self.agent().call("inject_unreachable", conn=conn)
                again.append(round(self.tb.now_s(), 2))
        return again

    def timeouts_now(self) -> int:
        """TcpExtTCPTimeouts of sta1 now (kernel RTO expirations)."""
        return int(observe.nstat(self.tb.station(1).netns).get("TcpExtTCPTimeouts", 0))
