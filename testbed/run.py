"""The experiment runner: one scenario, one seed, one run (``python -m testbed.run``).

Lifecycle of a ``Testbed`` (docs/orchestrator.md):

1. run id, ``/run/manet/<runid>/`` (0700) with ``registry.json``, ``results/<exp>/<runid>/`` with
   ``scenario.json`` and ``run.json`` (seed, git revision, tool versions);
2. namespaces ``mt<runid>-sta<N>`` plus ``mt<runid>-ctl`` for the medium and the zygote (so that
   even a process the registry missed is found by its namespace), loopback up;
3. the medium (config per docs/interfaces.md section 3), then the zygote, then one router per
   station forked by the zygote (config per section 4); wait until every router's ``tun0`` and
   ``staN-wlan0`` are up;
4. ``run()``: pcaps, iperf3 servers, clients at their start times, nstat before and after,
   ``summary.json`` rewritten as flows finish;
5. ``stop()`` (also on Ctrl-C, SIGTERM and exceptions): iperf3/tcpdump, routers (they write their
   counters), zygote, medium (writes its counters), any process left in our namespaces, the
   namespaces, the run state directory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from nodes.core.icmp import IcmpParams
from nodes.core.ipip import WiredRoute
from nodes.protocols import PROFILED
from nodes.protocols.profiles import routing_profile_summary
from nodes.router.config import ExtensionConfig, ProtocolConfig, RouterConfig
from testbed import ccallow, cleanup, idleguard, netns, procs, tcpprofile, traffic
from testbed import tcpctl as tcpctl_glue
from testbed.medium import MEDIUM_BIN, MediumControl, MediumError, medium_config, medium_rt_args
from testbed.metrics import RunMetrics, tun_drops
from testbed.naming import new_run_id, prefix, run_dir
from testbed.registry import Registry
from testbed.results import Results, git_revision, tool_versions, write_json
from testbed.schedule import FlowSchedule
from testbed.station import Host, Station
from testbed.traffic import node_label
from testbed.validity import DEFAULT_THRESHOLDS, HostSampler, Thresholds, Validity
from testbed.wired import WiredError, WiredSegment
from topologies.scenario import Scenario, ScenarioError, load_scenario
from topologies.tcp_profiles import PROJECT_CCS

ROOT = Path(__file__).resolve().parents[1]
ROUTER_TARGET = "nodes.router.main:run"


class BringUpError(RuntimeError):
    pass


def station_sysctls(sc: Scenario, cc_kernel_name: str | None = None) -> dict[str, str]:
    """Per-station sysctls of the scenario's TCP profile (testbed.tcpprofile.station_sysctls),
    written inside each namespace. The kernel's default congestion control here is bbr, so
    every profile names ``tcp_congestion_control``. ``rmem_max``/``wmem_max`` become the maxima
    of ``tcp_rmem``/``tcp_wmem`` (``net.core.*mem_max`` are read-only inside a namespace on this
    kernel). IP forwarding is off: the router forwards in user space. IPv6 is off so that tun0
    carries only the IPv4 traffic of the experiment.
    """
    return tcpprofile.station_sysctls(sc.tcp.effective, cc_kernel_name)


def router_config(
    sc: Scenario,
    run_id: str,
    seed: int,
    sid: int,
    state: Path,
    out_dir: Path,
    routes: dict[int, dict[int, int]] | None,
    tcpctl: tcpctl_glue.RunTcpCtl | None = None,
    wired: WiredRoute | None = None,
) -> RouterConfig:
    """Station ``sid``'s router config (docs/interfaces.md section 4); ``.to_json()`` travels."""
    return RouterConfig(
        station_id=sid,
        medium_socket=str(state / "medium.sock"),
        protocol=ProtocolConfig(
            sc.routing.protocol,
            dict(sc.routing.params),
            dict(sorted((routes or {}).get(sid, {}).items())) if sc.routing.protocol == "static" else None,
            sc.routing.profile if sc.routing.protocol in PROFILED else None,
        ),
        out_dir=str(out_dir),
        run_id=run_id,
        n_stations=sc.stations.count,
        seed=seed,
        extensions=tuple(
            ExtensionConfig(ext, dict(sc.routing.extension_params.get(ext, {})))
            for ext in sc.routing.extensions
        ),
        ifq_len=sc.routing.ifq_len,
        hop_loss=sc.routing.hop_loss,
        promiscuous=sc.routing.promiscuous,
        trace=sc.routing.trace,
        tcpctl=tcpctl_glue.router_config(tcpctl, state, sid),
        wired=wired,
        icmp=IcmpParams(
            unreachable=sc.routing.icmp.unreachable,
            ratelimit_ms=sc.routing.icmp.ratelimit_ms,
            ratelimit_burst=sc.routing.icmp.ratelimit_burst,
        ),
    )


def gateway_sysctls(sysctls: dict[str, str]) -> dict[str, str]:
    """The gateway station forwards in its kernel between ``tun0`` and its wired interface, and
    accepts packets whose source is on the other side (testbed/wired.py)."""
    return {
        **sysctls,
        "net.ipv4.ip_forward": "1",
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.default.rp_filter": "0",
    }


class Testbed:
    """One run of a scenario. Use as a context manager; ``stop()`` is idempotent.

    ``scenario`` is a path (loaded with ``load_scenario(path, overrides)``) or a ``Scenario``.
    ``seed`` defaults to the scenario's. ``router_target`` is the ``module:function`` the zygote
    calls in each station (the real router unless a test injects another).
    """

    def __init__(
        self,
        scenario: str | Path | Scenario,
        seed: int | None = None,
        experiment: str = "default",
        out_root: str | Path = "results",
        overrides: dict[str, Any] | None = None,
        *,
        router_target: str = ROUTER_TARGET,
        medium_bin: str | Path | None = None,
        ready_timeout_s: float | None = None,
        quiet: bool = False,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        if isinstance(scenario, Scenario):
            self.scenario, self.scenario_file = scenario, None
        else:
            self.scenario_file = str(scenario)
            self.scenario = load_scenario(scenario, overrides)
        self.seed = self.scenario.seed if seed is None else seed
        self.experiment = experiment
        self.out_root = Path(out_root)
        self.router_target = router_target
        self.medium_bin = Path(medium_bin) if medium_bin else MEDIUM_BIN
        n = self.scenario.stations.count
        self.ready_timeout_s = ready_timeout_s if ready_timeout_s is not None else 15.0 + 0.2 * n
        self.quiet = quiet
        self.run_id = ""
        self.stations: dict[int, Station] = {}
        self.hosts: dict[str, Host] = {}  # wired hosts (scenario ``wired``)
        self.wired: WiredSegment | None = None
        self.registry: Registry | None = None
        self.results: Results | None = None
        self.state: Path | None = None
        self.medium_proc: subprocess.Popen[bytes] | None = None
        self.zygote: subprocess.Popen[bytes] | None = None
        self.control: MediumControl | None = None
        self.schedule: FlowSchedule | None = None  # the flows, once run() starts
        self.captures: list[subprocess.Popen[bytes]] = []
        self.idle_guards: list[subprocess.Popen[bytes]] = []
        self.t0: float | None = None  # CLOCK_MONOTONIC of run time 0 (medium start)
        self.tcpctl: tcpctl_glue.RunTcpCtl | None = None  # the run's BPF side, when loaded
        self._tcpprof_cookies: dict[str, int] = {}  # node label (sta3, h1) -> netns cookie, with tcpprof
        self.timings: dict[str, float] = {}
        self.thresholds = thresholds
        self.metrics = RunMetrics(self.scenario, thresholds, self.timings)
        self._stopped = False
        self._started = False

    # ------------------------------------------------------------------ public API
    def __enter__(self) -> Testbed:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if ev is not None and self.results is not None:
            self.results.summary.setdefault("interrupted", f"{type(ev).__name__}: {ev}")
        self.stop()

    @property
    def dir(self) -> Path:
        assert self.results is not None
        return self.results.dir

    def station(self, sid: int | str) -> Station:
        """``tb.station(3)`` or ``tb.station("sta3")``."""
        if isinstance(sid, str):
            sid = int(sid.removeprefix("sta"))
        return self.stations[sid]

    def node(self, end: int | str) -> Station:
        """A flow's end: station id or wired host name."""
        return self.stations[end] if isinstance(end, int) else self.hosts[end]

    def nodes(self) -> dict[int | str, Station]:
        """Every station (by id) and wired host (by name)."""
        out: dict[int | str, Station] = {sid: st for sid, st in self.stations.items()}
        out.update(self.hosts)
        return out

    def medium(self, op: str, **fields: Any) -> dict[str, Any]:
        """A request on the medium's control socket: ``tb.medium("move", station=3, x=0, y=900)``."""
        if self.control is None:
            raise MediumError("the medium is not running")
        return self.control(op, **fields)

    def now_s(self) -> float:
        """Run time: seconds since the medium started (its virtual time 0)."""
        return time.monotonic() - (self.t0 or time.monotonic())

    @property
    def flows(self) -> list[traffic.Flow]:
        return self.schedule.flows if self.schedule is not None else []

    @property
    def sampler(self) -> Any:
        """The tcp_info observer (nodes.tcpctl.observe.DiagSampler) during ``run()``, or None."""
        return self.metrics.sampler

    @property
    def host_load(self) -> HostSampler | None:
        return self.metrics.host_load

    @property
    def validity(self) -> Validity | None:
        """Whether the run kept real time (testbed/validity.py), once it is torn down."""
        return self.metrics.validity

    def tun_drops(self) -> int | None:
        """Kernel drops (rx + tx) on every station's ``tun0`` now (testbed.metrics.tun_drops)."""
        return tun_drops(self.stations)

    # ------------------------------------------------------------------ bring-up
    def _log(self, msg: str) -> None:
        if not self.quiet:
            print(f"[{self.run_id}] {msg}", file=sys.stderr, flush=True)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        t_start = time.monotonic()
        sc = self.scenario
        self.run_id = new_run_id()
        self.registry = Registry.create(self.run_id)
        self.state = run_dir(self.run_id)
        self.results = Results(self.out_root, self.experiment, self.run_id)
        self.registry.results_dir = str(self.results.dir)
        self.registry.save()
        res = self.results
        res.write("scenario.json", json.loads(sc.model_dump_json()))
        res.write(
            "run.json",
            {
                "run_id": self.run_id,
                "experiment": self.experiment,
                "scenario": sc.name,
                "scenario_file": self.scenario_file,
                "seed": self.seed,
                "git": git_revision(),
                "argv": sys.argv,
                "started_at": time.time(),
                "versions": tool_versions(),
            },
        )
        (res.dir / "seed").write_text(f"{self.seed}\n")
        res.summary = {
            "run_id": self.run_id,
            "experiment": self.experiment,
            "scenario": sc.name,
            "seed": self.seed,
            "complete": False,
            "flows": [],
            "routing_packets": None,
            "duration_s": None,
        }
        res.save_summary()

        ids = sc.station_ids
        self.stations = {i: Station(self.run_id, i, self._register) for i in ids}
        for st in self.stations.values():
            setattr(self, st.name, st)  # tb.sta3
        ctl_ns = f"{prefix(self.run_id)}-ctl"
        names = [ctl_ns] + [self.stations[i].netns for i in ids]
        if sc.wired is not None:
            self.wired = WiredSegment(
                sc.wired, self.run_id, ctl_ns, self.state, res.dir / "logs", self._register
            )
            for h in sc.wired.host_names():
                host = Host(self.run_id, h, str(sc.wired.host_ip(h)), self._register)
                self.hosts[h] = host
                setattr(self, h, host)  # tb.h1
            names += self.wired.namespaces()
        self.registry.add_namespaces(names)
        netns.create(names)
        self.timings["netns_s"] = time.monotonic() - t_start
        if self.wired is not None:
            self.registry.ovs_dir = str(self.wired.ovs_dir)
            self.registry.save()
            self.wired.start()
            res.summary["wired"] = {
                "backend": self.wired.backend,
                "hosts": {h.name: h.ip for h in self.hosts.values()},
                "gateway": self.wired.gateway,
            }
            self._log(f"wired segment up ({self.wired.backend})")

        # tcpctl's BPF side (before any station sets tcp_congestion_control or starts a router)
        eff = sc.tcp.effective
        if tcpctl_glue.bpf_wanted(sc):
            from nodes.tcpctl.kernel import run_dir as bpf_run_dir

            self.registry.bpf_pin_dir = str(bpf_run_dir(self.run_id))  # before: a crash mid-load is cleaned
            self.registry.save()
            self.tcpctl = tcpctl_glue.load(sc, self.run_id)
            res.summary["tcpctl"] = {
                "agent": self.tcpctl.agent,
                "pin_dir": self.tcpctl.pin_dir,
                "cc_names": self.tcpctl.cc_names,
            }
            res.save_summary()

        # the TCP profile: congestion controls on the host's allowed list, the BPF knobs
        cc_kernel = self.tcpctl.cc(eff.cc) if self.tcpctl is not None else eff.cc
        res.summary["tcp_profile"] = eff.summary()
        res.summary["routing_profile"] = routing_profile_summary(
            sc.routing.protocol, sc.routing.profile, sc.routing.params
        )
        added = ccallow.ensure_allowed(
            cc for cc in {eff.cc, *(f.cc or eff.cc for f in sc.traffic.tcp)} if cc not in PROJECT_CCS
        )
        if added:
            res.summary["tcp_profile"]["allowed_cc_added"] = added
        self._load_tcpprof()
        res.save_summary()

        if self.hosts:  # the scenario's TCP settings on the wired hosts too
            host_sysctls = {
                k: v for k, v in station_sysctls(sc, cc_kernel).items() if k != "net.ipv4.ip_forward"
            }
            for host in self.hosts.values():
                res_sys = host.cmd(["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in host_sysctls.items())])
                if not res_sys.ok:
                    raise BringUpError(f"sysctls in {host.name}: {res_sys.stderr.strip()}")

        # idle guards (opt-in, testbed/idleguard.py): before any TCP timer of the run is armed
        if idleguard.enabled():
            cpus = idleguard.guard_cpus(os.sched_getaffinity(0))
            for cpu in cpus:
                g = idleguard.spawn(cpu, f"{prefix(self.run_id)}-idle{cpu}", ctl_ns)
                self.idle_guards.append(g)
                self._register(g.pid, "idle-guard")
            res.summary["idle_guard_cpus"] = cpus

        # the medium
        self.metrics.start_host_load()
        if not self.medium_bin.exists():
            raise BringUpError(f"medium binary {self.medium_bin} not found: run `make medium`")
        mcfg = medium_config(sc, self.run_id, self.seed, self.state, res.dir / "medium")
        write_json(self.state / "medium.json", mcfg)
        res.write("medium/config.json", mcfg)
        mlog = open(res.dir / "logs" / "medium.log", "wb")
        self.t0 = time.monotonic()
        self.medium_proc = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ctl_ns,
                str(self.medium_bin),
                "--config",
                str(self.state / "medium.json"),
                *medium_rt_args(),
            ],
            stdin=subprocess.DEVNULL,
            stdout=mlog,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        mlog.close()
        self._register(self.medium_proc.pid, "medium")
        self.control = MediumControl(self.state / "control.sock")
        self.control.wait_ready(
            10.0, alive=lambda: self.medium_proc is not None and self.medium_proc.poll() is None
        )
        # run time 0 is the medium's epoch (its start, which the routers' clocks share), not the
        # Popen above: align the runner's clock (tcp_info series, flow starts) with it
        t_ask = time.monotonic()
        with contextlib.suppress(OSError, MediumError, ValueError, KeyError, TypeError):
            reply = self.medium("positions")
            self.t0 = (t_ask + time.monotonic()) / 2 - int(reply["t_ns"]) / 1e9
        self.timings["medium_s"] = time.monotonic() - t_start

        # the zygote and the routers
        zlog = open(res.dir / "logs" / "zygote.log", "wb")
        # setns by the zygote itself, not `ip netns exec` (which remounts /sys and so hides bpffs)
        self.zygote = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "testbed.zygote",
                "--target",
                self.router_target,
                "--name",
                f"{prefix(self.run_id)}-zyg",
                "--netns",
                ctl_ns,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=zlog,
            start_new_session=True,
            cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        zlog.close()
        self._register(self.zygote.pid, "zygote")
        hello = self._zygote_reply(timeout_s=30.0)
        if not hello.get("ok"):
            raise BringUpError(f"zygote: {hello.get('error')}")
        routes = sc.static_routes(self.seed) if sc.routing.protocol == "static" else None
        sysctls = station_sysctls(sc, cc_kernel)
        wired_cfg = self.wired.router_config() if self.wired is not None else None
        items = []
        for sid in ids:
            cfg = router_config(
                sc,
                self.run_id,
                self.seed,
                sid,
                self.state,
                res.dir / "routers",
                routes,
                self.tcpctl,
                wired_cfg,
            )
            write_json(res.dir / "routers" / f"sta{sid}.config.json", cfg.to_json())
            items.append(
                {
                    "station": sid,
                    "netns": self.stations[sid].netns,
                    "sysctls": gateway_sysctls(sysctls)
                    if self.wired and self.wired.gateway == sid
                    else sysctls,
                    "config": cfg.to_json(),
                    "log": str(res.dir / "logs" / f"sta{sid}.log"),
                }
            )
        reply = self._zygote_call({"op": "spawn", "stations": items}, timeout_s=30.0)
        if not reply.get("ok"):
            raise BringUpError(f"zygote spawn: {reply.get('error')}")
        assert self.registry is not None
        self.registry.add_processes(
            [(pid, f"router:sta{sid}", self.stations[sid].netns) for sid, pid, _ in reply["pids"]]
        )
        for sid, pid, _ in reply["pids"]:
            self.stations[sid].router_pid = pid
        nice = procs.router_nice()
        if nice != 0:
            failed = procs.renice([pid for _, pid, _ in reply["pids"]], nice)
            if failed:
                self._log(f"could not set nice {nice} on routers {failed} (not root?)")
                res.summary["router_nice_failed"] = failed
            else:
                res.summary["router_nice"] = nice
        self._wait_routers()
        if self.wired is not None:
            self.wired.start_gateway()
            self.wired.route_stations(ids)
        self._tcp_profile_readback(sysctls)
        self.timings["bringup_s"] = time.monotonic() - t_start
        res.summary["bringup_s"] = round(self.timings["bringup_s"], 3)
        res.save_summary()
        self._log(f"{len(ids)} stations up in {self.timings['bringup_s']:.2f} s; results in {res.dir}")

    def _load_tcpprof(self) -> None:
        """The profile's BPF knobs (nodes/tcpctl/tcpprof.py), attached after tcpctl's program and
        registered for every station's and wired host's namespace before any of its sockets exists."""
        params = tcpprofile.bpf_params(self.scenario.tcp.effective.knobs)
        if not params.active:
            return
        from nodes.tcpctl import kernel as K
        from nodes.tcpctl import nsutil, tcpprof

        assert self.registry is not None and self.results is not None
        self.registry.bpf_pin_dir = str(K.run_dir(self.run_id))  # before: a crash mid-load is cleaned
        self.registry.save()
        tcpprof.load(self.run_id)
        maps = tcpprof.ProfileMaps(self.run_id)
        try:
            for k, node in self.nodes().items():
                cookie = nsutil.in_netns(node.netns, K.netns_cookie_of_current)
                maps.register(cookie, params)
                self._tcpprof_cookies[node_label(k)] = cookie
        finally:
            maps.close()
        self.results.summary["tcp_profile"]["bpf"] = {"params": asdict(params), "stats": None}

    def _tcp_profile_readback(self, sysctls: dict[str, str]) -> None:
        """Route metrics onto every station's route over tun0, then read the sysctls and the
        routes back (testbed/tcpprofile.py); what differs makes the run invalid."""
        assert self.results is not None
        knobs = self.scenario.tcp.effective.knobs
        metrics = tcpprofile.route_metrics(knobs)
        found: list[tcpprofile.Mismatch] = []
        for sid, st in self.stations.items():
            want = gateway_sysctls(sysctls) if self.wired and self.wired.gateway == sid else sysctls
            got = tcpprofile.read_sysctls(st.netns, want)
            found += tcpprofile.sysctl_mismatches(st.name, want, got)
            if metrics:
                try:
                    routes = tcpprofile.apply_routes(st.netns, st.ip, metrics)
                except OSError as exc:
                    raise BringUpError(str(exc)) from None
                found += tcpprofile.route_mismatches(st.name, metrics, routes)
        self.metrics.tcp_mismatches += found
        self.results.summary["tcp_profile"]["readback"] = {
            "stations": len(self.stations),
            "sysctls": len(sysctls),
            "route_metrics": metrics,
            "mismatches": [str(m) for m in found],
        }
        self.results.save_summary()

    def _tcpprof_stats(self) -> None:
        """The BPF knobs' counters per station, read before the pins go (summary ``tcp_profile.bpf``)."""
        if not self._tcpprof_cookies or self.results is None:
            return
        from nodes.tcpctl import tcpprof

        try:
            maps = tcpprof.ProfileMaps(self.run_id)
        except OSError:
            return
        try:
            per = {label: maps.stats(c) for label, c in self._tcpprof_cookies.items()}
        finally:
            maps.close()
        total = {k: sum(v[k] for v in per.values()) for k in tcpprof.STATS_FIELDS}
        bpf = self.results.summary.setdefault("tcp_profile", {}).setdefault("bpf", {})
        bpf["stats"] = {"total": total, "stations": per}

    def _register(self, pid: int, role: str) -> None:
        if self.registry is not None:
            self.registry.add_process(pid, role)

    def _zygote_reply(self, timeout_s: float) -> dict[str, Any]:
        assert self.zygote is not None and self.zygote.stdout is not None
        import select

        fd = self.zygote.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BringUpError(f"zygote: no reply in {timeout_s} s")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise BringUpError("zygote exited (see logs/zygote.log)")
                buf += chunk
        reply: dict[str, Any] = json.loads(buf.split(b"\n", 1)[0])
        return reply

    def _zygote_call(self, req: dict[str, Any], timeout_s: float = 10.0) -> dict[str, Any]:
        assert self.zygote is not None and self.zygote.stdin is not None
        self.zygote.stdin.write((json.dumps(req) + "\n").encode())
        self.zygote.stdin.flush()
        return self._zygote_reply(timeout_s)

    def _wait_routers(self) -> None:
        """Wait until every router is connected to the medium, or fail naming who is not.

        A router writes ``sta<N>.counters.json`` as soon as the medium has welcomed it and its loop
        runs (docs/interfaces.md section 4), so the file's appearance in this run's fresh results
        directory is the readiness signal.
        """
        pending = set(self.stations)
        deadline = time.monotonic() + self.ready_timeout_s
        routers = self.dir / "routers"
        while pending:
            pending = {sid for sid in pending if not (routers / f"sta{sid}.counters.json").exists()}
            if not pending:
                break
            status = self._zygote_call({"op": "status"})
            dead = {int(p): c for p, c in status.get("exited", {}).items()}
            died = [sid for sid in sorted(pending) if self.stations[sid].router_pid in dead]
            if died:
                sid = died[0]
                raise BringUpError(
                    f"router of sta{sid} exited with {dead[self.stations[sid].router_pid or 0]} "
                    f"during bring-up (see {self.dir}/logs/sta{sid}.log)"
                )
            if self.medium_proc is not None and self.medium_proc.poll() is not None:
                raise BringUpError(
                    f"the medium exited with {self.medium_proc.returncode} during bring-up "
                    f"(see {self.dir}/logs/medium.log)"
                )
            if time.monotonic() > deadline:
                raise BringUpError(
                    f"routers not connected after {self.ready_timeout_s:.0f} s: "
                    f"{', '.join(f'sta{s}' for s in sorted(pending))}"
                )
            time.sleep(0.05)

    # ------------------------------------------------------------------ the experiment
    def start_captures(self, stations: list[int] | None = None) -> None:
        """tcpdump on each station's air interface; with no list, also on every wired host's
        ``<name>-eth0`` and the gateway's ``sta<N>-eth1`` (pcaps ``<name>.pcap``, ``staN-eth1.pcap``)."""
        todo: list[tuple[Station, str]] = [
            (self.stations[sid], self.stations[sid].wlan) for sid in stations or list(self.stations)
        ]
        if stations is None and self.wired is not None:
            todo += [(h, h.wlan) for h in self.hosts.values()]
            if self.wired.gateway is not None:
                gw = self.stations[self.wired.gateway]
                todo.append((gw, f"{gw.name}-eth1"))
        for st, dev in todo:
            fname = f"{st.name}.pcap" if dev == st.wlan else f"{dev}.pcap"
            path = self.results.pcaps / fname if self.results else Path(fname)
            self.captures.append(
                st.popen(
                    ["tcpdump", "-ni", dev, "-U", "-Z", "root", "-w", str(path)],
                    role="tcpdump",
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )

    def run(self, duration_s: float | None = None) -> dict[str, Any]:
        """Run the scenario's traffic until ``duration_s`` (default: the scenario's) of run time.

        Returns the summary (also in ``summary.json``).
        """
        assert self.results is not None
        sc, res, metrics = self.scenario, self.results, self.metrics
        end_s = sc.duration_s if duration_s is None else duration_s
        if sc.capture.pcap:
            self.start_captures(sc.capture.stations)
        hist = self.state / "nstat.hist" if self.state else Path("/nonexistent")
        metrics.traffic_starts(self.stations)
        metrics.nstat_before(self.nodes(), hist, res)
        cc_kernel = self.tcpctl.cc if self.tcpctl is not None else None
        flows = traffic.make_flows(sc, res.dir / "flows")
        self.schedule = FlowSchedule(flows, res, self.nodes, self.now_s, self._log, cc_kernel)
        self.schedule.start_servers()
        metrics.start_observer(flows, self.nodes(), self.now_s)
        self.schedule.write_summary()
        run_started = time.monotonic()
        self.schedule.run(end_s, on_start=metrics.kick_observer)
        metrics.stop_observer(res)
        metrics.nstat_after(self.nodes(), hist, res, flows)
        metrics.summarise_series(flows, res)
        metrics.tcp_flow_readback(flows, res)
        if self.tcpctl is not None:
            metrics.summarise_estimator(flows, res, self.run_id)
        res.summary["duration_s"] = round(time.monotonic() - run_started, 3)
        res.summary["complete"] = True
        res.save_summary()
        return res.summary

    # ------------------------------------------------------------------ teardown
    def stop(self) -> None:
        """Stop everything of this run and remove its namespaces and state directory."""
        if self._stopped or not self._started:
            return
        self._stopped = True
        t = time.monotonic()
        with _signals_deferred():
            self.metrics.stop_host_load()
            self.metrics.routers_stopping(self.stations)  # routers still up: their namespaces exist
            if self.schedule is not None:
                self.schedule.stop()
            for p in self.captures:
                traffic.stop_proc(p, grace_s=1.0)
            if self.wired is not None:
                self.wired.stop()
            if self.metrics.sampler is not None:
                self.metrics.stop_observer(self.results)
            if self.zygote is not None and self.zygote.poll() is None:
                try:
                    self._zygote_call({"op": "stop", "timeout_s": 2.0}, timeout_s=6.0)
                except (BringUpError, OSError, ValueError):
                    pass
                try:
                    self.zygote.wait(2.0)
                except subprocess.TimeoutExpired:
                    pass
            if self.medium_proc is not None and self.medium_proc.poll() is None:
                try:
                    self.medium("stop")
                except (OSError, MediumError, ValueError):
                    pass
                try:
                    self.medium_proc.wait(3.0)
                except subprocess.TimeoutExpired:
                    pass
            own = [p for p in (self.zygote, self.medium_proc, *self.idle_guards) if p is not None]
            procs.terminate({p.pid: None for p in own if p.poll() is None}, timeout_s=1.0)
            for p in own:
                try:
                    p.wait(1.0)
                except subprocess.TimeoutExpired:
                    pass
            self._tcpprof_stats()
            if self.registry is not None:
                cleanup.clean_run(self.registry, own_run=True)
            ccallow.restore(others_live=cleanup.other_live_runs(self.run_id))
            if self.results is not None:
                self.metrics.finalize(self.results, list(self.stations), self.flows)
            self.timings["teardown_s"] = time.monotonic() - t
        self._log(f"torn down in {self.timings['teardown_s']:.2f} s")


class _signals_deferred:
    """Hold SIGINT/SIGTERM during teardown so a second Ctrl-C cannot leave half a cleanup."""

    def __enter__(self) -> None:
        self.pending: list[int] = []
        self.old: dict[int, Any] = {}
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._hold)
        except ValueError:  # not the main thread: nothing to defer
            self.old = {}

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.pending.append(signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        for sig in self.pending[:1]:  # delivered again now that the cleanup is done
            os.kill(os.getpid(), sig)


def run_scenario(
    scenario_path: str,
    seed: int | None,
    experiment: str,
    out_root: str = "results",
    overrides: dict[str, Any] | None = None,
    *,
    quiet: bool = True,
) -> Path:
    """Run one scenario with one seed; return the run directory (``summary.json`` inside).

    Raises ``ScenarioError`` for a bad scenario (before anything is created). An interrupted run
    leaves its directory with ``"complete": false``.
    """
    with Testbed(
        scenario_path, seed=seed, experiment=experiment, out_root=out_root, overrides=overrides, quiet=quiet
    ) as tb:
        tb.run()
        return tb.dir


def print_table(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"{summary.get('scenario')} seed {summary.get('seed')} run {summary.get('run_id')}"
        + ("" if summary.get("complete") else " (INCOMPLETE)")
    )
    for col in ("flow", "src->dst", "cc", "throughput (kbit/s)", "TCP timeouts", "retransmits", "note"):
        t.add_column(col)
    for f in summary.get("flows", []):
        thr = f.get("throughput_bps")
        t.add_row(
            f["id"],
            f"{node_label(f['src'])}->{node_label(f['dst'])}",
            str(f.get("cc") or "-"),
            "-" if thr is None else f"{thr / 1e3:.1f}",
            str(f.get("tcp_timeouts", "-")),
            str(f.get("retransmits", "-")),
            str(f.get("error") or ("end exchange interrupted" if f.get("interrupted") else "")),
        )
    c = Console()
    c.print(t)
    c.print(f"routing packets: {summary.get('routing_packets')}   duration: {summary.get('duration_s')} s")
    by_cause = summary.get("timeouts_by_cause")
    if by_cause:
        causes = ", ".join(f"{k} {v}" for k, v in by_cause.items())
        c.print(f"TCP timeouts by cause: {causes}   (python3 -m testbed.explain <run dir> for each one)")
    elif summary.get("explain_error"):
        c.print(f"TCP timeouts not explained: {summary['explain_error']}")
    c.print(validity_line(summary), markup=False)


def validity_line(summary: dict[str, Any]) -> str:
    """``valid: yes``, or ``valid: NO (reason; reason)`` (docs/orchestrator.md, "Run validity")."""
    if "valid" not in summary:
        return "valid: unknown (not judged)"
    if summary["valid"]:
        return "valid: yes"
    reasons = (summary.get("validity") or {}).get("reasons") or []
    return f"valid: NO ({'; '.join(reasons)})"


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.run", description="Run one scenario with one seed.")
    ap.add_argument("scenario")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--experiment", default="default")
    ap.add_argument("--out", default="results")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a scenario field, e.g. --set traffic.tcp[0].cc=cubic (value parsed as YAML)",
    )
    args = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    overrides = None
    if args.set:
        import yaml

        overrides = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep:
                print(f"--set {item!r}: expected FIELD=VALUE", file=sys.stderr)
                return 2
            overrides[key] = yaml.safe_load(value)
    try:
        tb = Testbed(
            args.scenario, seed=args.seed, experiment=args.experiment, out_root=args.out, overrides=overrides
        )
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with tb:
            summary = tb.run()
    except KeyboardInterrupt:
        print(f"interrupted; partial results in {tb.results.dir if tb.results else '-'}", file=sys.stderr)
        return 130
    except (BringUpError, MediumError, WiredError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_table(summary)
    print(f"results: {tb.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
