"""A run's flow schedule: the scenario's iperf3 flows started at their times and collected.

``Testbed.run`` (testbed/run.py) hands the flows to a ``FlowSchedule``: one iperf3 server per
flow first (``testbed.traffic``), then each client at its ``start_s`` of run time, until the end
of the run plus a short grace for a client finishing its last exchange. Each flow's row in
``summary.json`` (``flows[]``) is written when the run starts and completed as the flow
finishes (docs/orchestrator.md).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any

from testbed import traffic
from testbed.results import Results
from testbed.station import Station
from testbed.traffic import node_label

#: Seconds the schedule waits after the end of the run for clients still finishing.
GRACE_S = 5.0
#: Seconds between two looks at the clock and the clients.
POLL_S = 0.05


class FlowSchedule:
    """The flows of one run (``flows``), in the run's ``results``.

    ``nodes()`` gives the stations and wired hosts by flow end, ``now_s()`` the run time,
    ``cc_kernel`` the kernel's name of a congestion control (the run's tcpctl BPF side, if any).
    """

    def __init__(
        self,
        flows: list[traffic.Flow],
        results: Results,
        nodes: Callable[[], Mapping[int | str, Station]],
        now_s: Callable[[], float],
        log: Callable[[str], None],
        cc_kernel: Callable[[str], str] | None = None,
    ) -> None:
        self.flows = flows
        self.results = results
        self.nodes = nodes
        self.now_s = now_s
        self.log = log
        if cc_kernel is not None:
            for fl in self.flows:
                cc = getattr(fl.spec, "cc", None)
                if cc:
                    fl.cc_name = cc_kernel(cc)

    def start_servers(self) -> None:
        """One iperf3 server per flow, listening before this returns."""
        if self.flows:
            traffic.start_servers(self.flows, self.nodes())

    def write_summary(self) -> None:
        """Each flow's row of ``summary.json``, before its results."""
        res = self.results
        res.summary["flows"] = [flow_summary(fl) for fl in self.flows]
        res.save_summary()

    def run(self, end_s: float, on_start: Callable[[], None] | None = None) -> None:
        """Start each client at its time, collect each flow as it ends, until run time ``end_s``;
        then wait ``GRACE_S`` for the clients still finishing and stop the rest (and every server).
        ``on_start`` is called after each client starts."""
        pending = sorted(self.flows, key=lambda f: f.spec.start_s)
        running: list[traffic.Flow] = []
        while True:
            now = self.now_s()
            while pending and pending[0].spec.start_s <= now:
                fl = pending.pop(0)
                traffic.start_client(fl, self.nodes(), end_s - fl.spec.start_s, now)
                if on_start is not None:
                    on_start()
                running.append(fl)
                self.log(f"t={now:6.2f}s start {fl.id} {node_label(fl.src)} -> {node_label(fl.dst)}")
            self._collect(running)
            if now >= end_s and not pending:
                break
            time.sleep(POLL_S)
        # grace for clients still finishing their last exchange
        deadline = time.monotonic() + GRACE_S
        while running and time.monotonic() < deadline:
            self._collect(running)
            time.sleep(POLL_S)
        for fl in running:
            traffic.stop_proc(fl.client)
            self.finish(fl)
        for fl in self.flows:
            traffic.stop_proc(fl.server)
            if not fl.done:
                self.finish(fl)

    def _collect(self, running: list[traffic.Flow]) -> None:
        for fl in list(running):
            if fl.client is not None and fl.client.poll() is not None:
                self.finish(fl)
                running.remove(fl)

    def stop(self) -> None:
        """Stop every client and server (teardown), keeping what interrupted flows wrote."""
        for fl in self.flows:
            traffic.stop_proc(fl.client, grace_s=1.0)
            traffic.stop_proc(fl.server, grace_s=0.5)
        for fl in self.flows:  # what interrupted flows got to write
            if fl.client is not None and not fl.done:
                self.finish(fl)

    def finish(self, fl: traffic.Flow) -> None:
        """Parse a flow's iperf3 output into its row of ``summary.json``."""
        if fl.done:
            return
        if fl.server is not None and fl.server.poll() is None:
            try:  # the one-off server exits by itself right after the client's last exchange
                fl.server.wait(3.0)
            except subprocess.TimeoutExpired:
                traffic.stop_proc(fl.server)
        fl.done = True
        fl.result = traffic.parse_flow(fl)
        for fs in self.results.summary["flows"]:
            if fs["id"] == fl.id:
                fs.update(fl.result)
                fs["started_at_s"] = None if fl.started_at_s is None else round(fl.started_at_s, 3)
        self.results.save_summary()
        self.log(f"t={self.now_s():6.2f}s done  {fl.id}: {fl.result.get('throughput_bps')} bit/s")


def flow_summary(fl: traffic.Flow) -> dict[str, Any]:
    """A flow's row of ``summary.json`` before it has results."""
    s = fl.spec
    out: dict[str, Any] = {
        "id": fl.id,
        "proto": fl.proto,
        "src": s.src,
        "dst": s.dst,
        "start_s": s.start_s,
        "duration_s": s.duration_s,
    }
    if fl.proto == "tcp":
        out["cc"] = getattr(s, "cc", None)
        if fl.cc_name:
            out["cc_kernel"] = fl.cc_name
    out.update({"throughput_bps": None, "tcp_timeouts": None, "retransmits": None})
    return out
