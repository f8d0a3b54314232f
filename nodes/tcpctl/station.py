"""tcpctl inside the station router (an I/O shell): the endpoint agent, plugged into the router's
runtime, and a control socket through which extensions under development, experiment scripts and
the netns tests reach the API of one station from outside its router process.

Router config (docs/interfaces.md section 4, docs/tcpctl.md)::

    "tcpctl": {"enabled": true, "bpf": true, "control_socket": "/run/manet/<runid>/sta3.tcpctl.sock"}

``bpf`` false runs the agent without the kernel side (``NullKernel``). The control socket is a
Unix stream socket, one JSON request per line, one JSON reply per line::

    {"op": "freeze", "conn": "busiest", "restore": "default"}  ->  {"ok": true, ...}

Requests are executed in the router's event loop (``call_soon_threadsafe``), so they never race
the packet path; the accept/read thread only parses and waits. ``conn`` is a connection as
``"10.0.0.1:41234->10.0.0.4:5201"`` or ``"busiest"`` (the connection that sent most segments).

Besides the API calls (docs/tcpctl.md), two operations stand in for the network in experiments
that have no extension yet: ``drop_next`` drops the next data segment of a connection on its way
out of this station and, ``report_after_ms`` later, reports it to the agent (which retransmits
its copy: EPLN / Route-control); ``inject_unreachable`` hands the agent an ICMP Destination
Unreachable for a connection, as a router on the path would send. ``trace`` records the
connection's segments as the agent sees them (time in router time, ns).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from nodes.core.events import Action, Drop, SetTimer, ToNetwork
from nodes.core.protocol import NodeContext
from nodes.core.runtime import EndpointTimer, NodeRuntime
from nodes.router.config import TcpctlConfig
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId, EndpointAgent, TcpUnreachable
from nodes.tcpctl.api import Abra, FixedAfterTwo, Standard, TcpControl, make_endpoint

log = logging.getLogger(__name__)

TRACE_LIMIT = 200_000
"""Trace records kept per station (about 10 MB); later records are counted, not kept."""


def conn_from_str(s: str) -> ConnId:
    local, remote = s.split("->")
    lip, lport = local.rsplit(":", 1)
    rip, rport = remote.rsplit(":", 1)
    return ConnId(socket.inet_aton(lip), int(lport), socket.inet_aton(rip), int(rport))


@dataclass(frozen=True, slots=True)
class ReportTimer(EndpointTimer):
    """``drop_next``: report the dropped segment ``seq`` of ``conn`` to the agent when it fires."""

    conn: ConnId
    seq: int


class StationEndpoint:
    """The ``Endpoint`` the runtime sees: the agent, plus drop injection and a segment trace."""

    def __init__(self, agent: EndpointAgent) -> None:
        self.agent = agent
        self.trace_ports: set[int] = set()
        self.trace: list[tuple[int, str, int, int, int, int, int, int, int]] = []
        self.trace_dropped = 0
        self.drop_armed: dict[ConnId, int] = {}  # conn -> report delay (ns)
        self.events: list[dict[str, Any]] = []
        self._n = 0

    # ------------------------------------------------------------------ Endpoint seam
    def on_outbound(self, packet: bytes, now_ns: int) -> list[Action]:
        return self._filter(self.agent.on_outbound(packet, now_ns), now_ns)

    def on_inbound(self, packet: bytes, now_ns: int) -> list[Action]:
        if self.trace_ports:
            self._record(packet, "in", now_ns)
        return self._filter(self.agent.on_inbound(packet, now_ns), now_ns)

    def on_timer(self, key: Hashable, now_ns: int) -> list[Action]:
        if isinstance(key, ReportTimer):
            cid, seq = key.conn, key.seq
            acts = self.agent.retransmit(cid, seq, now_ns)
            self.events.append(
                {
                    "event": "reported",
                    "conn": str(cid),
                    "seq": seq,
                    "t_ns": now_ns,
                    "retransmitted": any(isinstance(a, ToNetwork) for a in acts),
                }
            )
            return self._filter(acts, now_ns)
        return self._filter(self.agent.on_timer(key, now_ns), now_ns)

    # ------------------------------------------------------------------ helpers
    def _filter(self, acts: list[Action], now_ns: int) -> list[Action]:
        if not self.drop_armed and not self.trace_ports:
            return acts
        out: list[Action] = []
        for a in acts:
            if isinstance(a, ToNetwork):
                t = P.parse_tcp(a.packet)
                if t is not None and self.drop_armed and t.payload_len:
                    cid = ConnId(t.src, t.sport, t.dst, t.dport)
                    delay = self.drop_armed.pop(cid, None)
                    if delay is not None:
                        self._n += 1
                        self.events.append(
                            {"event": "dropped", "conn": str(cid), "seq": t.seq, "t_ns": now_ns}
                        )
                        if self.trace_ports:
                            self._record(a.packet, "drop", now_ns)
                        out.append(Drop(a.packet, "tcpctl_injected_drop"))
                        out.append(SetTimer(ReportTimer(cid, t.seq), now_ns + delay))
                        continue
                if self.trace_ports:
                    self._record(a.packet, "out", now_ns)
            out.append(a)
        return out

    def _record(self, packet: bytes, direction: str, now_ns: int) -> None:
        t = P.parse_tcp(packet)
        if t is None or not ({t.sport, t.dport} & self.trace_ports):
            return
        if len(self.trace) >= TRACE_LIMIT:
            self.trace_dropped += 1
            return
        self.trace.append(
            (now_ns, direction, t.sport, t.dport, t.seq, t.end_seq, t.ack, t.window, t.payload_len)
        )


class StationShell(Protocol):
    """What the control socket needs from the router daemon (``nodes.router.main.Router``)."""

    def now_ns(self) -> int:
        """Router time (the medium's clock)."""

    def apply_actions(self, actions: list[Action], now_ns: int) -> None:
        """Apply ``actions`` in the runtime, feed the MAC and re-arm the router's timer."""


class ControlServer:
    """Serves the control socket from the router's own event loop (no thread, no locks).

    ``start(loop)`` registers the listening socket with ``loop.add_reader`` (asyncio and the
    router's epoll loop both have it); each client socket is registered too, requests are
    handled one line at a time in the loop, between packets.
    """

    def __init__(self, path: str, shell: StationShell, api: TcpControl, ep: StationEndpoint) -> None:
        self.path = path
        self.shell = shell
        self.api = api
        self.ep = ep
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(
            socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
        )
        self.sock.bind(path)
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.loop: Any = None
        self.clients: dict[int, tuple[socket.socket, bytearray]] = {}

    def start(self, loop: Any) -> None:
        self.loop = loop
        loop.add_reader(self.sock.fileno(), self._accept)

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        conn.setblocking(False)
        fd = conn.fileno()
        self.clients[fd] = (conn, bytearray())
        self.loop.add_reader(fd, lambda: self._readable(fd))

    def _drop(self, fd: int) -> None:
        conn, _ = self.clients.pop(fd)
        self.loop.remove_reader(fd)
        conn.close()

    def _readable(self, fd: int) -> None:
        conn, buf = self.clients[fd]
        try:
            data = conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(fd)
            return
        buf += data
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            reply = self._request(line)
            try:
                conn.setblocking(True)  # replies are small; the client reads them at once
                conn.sendall(json.dumps(reply, default=str).encode() + b"\n")
                conn.setblocking(False)
            except OSError:
                self._drop(fd)
                return

    def _request(self, line: bytes) -> dict[str, Any]:
        try:
            req = json.loads(line)
            now = self.shell.now_ns()
            result, acts = self.handle(req, now)
            self.shell.apply_actions(acts, now)  # the agent may have set timers (thaw, report)
            return {"ok": True, "now_ns": now, **result}
        except Exception as exc:  # a bad request must not kill the router
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    # ------------------------------------------------------------------ operations
    def _conn(self, req: dict[str, Any]) -> ConnId:
        name = req.get("conn", "busiest")
        if name == "busiest":
            conns = self.api.agent.conns
            if not conns:
                raise LookupError("no TCP connection seen yet")
            return max(conns.values(), key=lambda c: c.stats["seg_out"]).id
        return conn_from_str(name)

    def handle(self, req: dict[str, Any], now: int) -> tuple[dict[str, Any], list[Action]]:
        op = req["op"]
        api, ep = self.api, self.ep
        if op == "now":
            return {}, []
        if op == "conns":
            return {"conns": api.agent.snapshot()}, []
        if op == "events":
            return {"events": list(ep.events)}, []
        cid = self._conn(req)
        res: dict[str, Any] = {"conn": str(cid)}
        handlers: dict[str, Callable[[], list[Action]]] = {
            "freeze": lambda: api.freeze(cid, now, restore=req.get("restore", "old")),
            "thaw": lambda: api.thaw(cid, now, restore=req.get("restore")),
            "retransmit": lambda: api.retransmit(cid, int(req["seq"]), now),
            "retransmit_unacked": lambda: api.retransmit_unacked(cid, now, req.get("limit")),
            "set_cwnd": lambda: api.set_cwnd(cid, int(req["segments"]), int(req.get("ssthresh", 0))),
            "hold": lambda: api.hold(cid, now, req.get("mode", "persist"), req.get("release_on", "never")),
            "release": lambda: api.release(cid, now),
            "atcp_disconnect": lambda: api.atcp_disconnect(cid, now),
            "unreachable": lambda: api.unreachable(cid, int(req.get("code", 1))),
        }
        if op in handlers:
            return res, handlers[op]()
        if op == "rto_policy":
            kind = req["policy"]
            pol: Any = (
                Abra(float(req.get("min_srtt_s", 0.1)), float(req.get("max_srtt_s", 0.6)))
                if kind == "abra"
                else FixedAfterTwo()
                if kind == "fixed_after_two"
                else Standard()
            )
            api.rto_policy(cid, pol)
            return res, []
        if op == "state":
            c = api.agent.conns.get(cid)
            res["agent"] = (
                None
                if c is None
                else {
                    "snd_una": c.snd_una,
                    "snd_nxt": c.snd_nxt,
                    "copies": len(c.segments),
                    "hold": None if c.hold is None else c.hold.mode.name,
                    "probes_this_hold": None if c.hold is None else c.hold.probes,
                    **c.stats,
                }
            )
            res["kernel"] = api.kernel_state(cid)
            return res, []
        if op == "atcp_on_unreachable":
            # ATCP's reaction to Destination Unreachable (Liu & Singh s IV), as the extension will do
            def on_du(ev: TcpUnreachable) -> list[Action]:
                ep.events.append({"event": "unreachable", "conn": str(ev.conn), "t_ns": ev.now_ns})
                return api.atcp_disconnect(ev.conn, ev.now_ns)

            api.on_unreachable(on_du)
            return res, []
        if op == "inject_unreachable":
            c = api.agent.conns[cid]
            ref = next(reversed(c.segments.values())) if c.segments else c.last_out_pkt
            if ref is None:
                raise LookupError(f"{cid}: no segment to quote")
            src = socket.inet_aton(req.get("from", "10.0.0.254"))
            return res, ep.on_inbound(P.icmp_dest_unreachable(ref, src), now)
        if op == "drop_next":
            ep.drop_armed[cid] = int(float(req.get("report_after_ms", 10)) * 1e6)
            return res, []
        if op == "trace":
            ep.trace_ports.add(cid.local_port)
            return res, []
        if op == "trace_dump":
            res["trace"] = ep.trace[int(req.get("since", 0)) :]
            res["trace_dropped"] = ep.trace_dropped
            return res, []
        raise ValueError(f"unknown op {op!r}")

    def close(self) -> None:
        for fd in list(self.clients):
            self._drop(fd)
        try:
            if self.loop is not None:
                self.loop.remove_reader(self.sock.fileno())
            self.sock.close()
            os.unlink(self.path)
        except OSError:
            pass


def attach(
    ctx: NodeContext,
    rt: NodeRuntime,
    cfg: TcpctlConfig,
    run_id: str | None,
    shell: StationShell,
) -> tuple[TcpControl, ControlServer | None]:
    """Plug tcpctl into a station whose runtime exists (``Router.build_core``), in its netns.

    Creates the agent (the run's pinned BPF maps if ``cfg.bpf``, else ``NullKernel``), makes it
    the runtime's endpoint (wrapped by ``StationEndpoint``) and ``ctx.endpoint``; returns the API
    and the control server of ``cfg.control_socket`` (None without one; the router starts it).
    """
    bpf_run = str(run_id) if cfg.bpf else None
    api = make_endpoint(ctx, rt, run_id=bpf_run)
    ep = StationEndpoint(api.agent)
    rt.endpoint = ep
    control = ControlServer(cfg.control_socket, shell, api, ep) if cfg.control_socket else None
    ctx.log.info("tcpctl: endpoint agent on (bpf %s)", bpf_run is not None)
    return api, control


class Client:
    """Client of a station's control socket (tests, scripts): ``Client(path).call("freeze", ...)``."""

    def __init__(self, path: str | os.PathLike[str], timeout_s: float = 15.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout_s)
        self.sock.connect(str(path))
        self.f = self.sock.makefile("rwb")

    def call(self, op: str, **kw: Any) -> dict[str, Any]:
        self.f.write(json.dumps({"op": op, **kw}).encode() + b"\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise ConnectionError("tcpctl control socket closed")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"tcpctl {op}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        self.f.close()
        self.sock.close()
