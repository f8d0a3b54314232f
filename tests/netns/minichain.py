"""A three-namespace chain for tcpctl's own netns tests (before/independently of the full stack).

    A (sender, kernel TCP) --tun0--> [TunShell + EndpointAgent] --veth a0/r0--> R --veth r1/b0--> B

``A`` has the station address on ``tun0`` (the router's device in the real stack); a thread of
the test process (``TunShell``) reads it, runs the endpoint agent and writes Ethernet frames to
``a0`` (whose own IP input is dropped by an nftables netdev ingress chain, so the kernel of A sees packets only
through tun0). ``R`` forwards (static routes and neighbours, no ARP) and holds the scripted
outage: an nftables rule dropping everything it forwards. Every name starts with
``mtt<hex>-``; ``close()`` deletes exactly those namespaces.
"""

from __future__ import annotations

import os
import secrets
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nodes.core.clock import Scheduler
from nodes.core.events import Action, CancelTimer, Drop, SetTimer, ToKernel, ToNetwork
from nodes.tcpctl import nsutil

A_IP, B_IP = "10.0.0.1", "10.0.0.3"
MAC = {
    "a0": "02:00:00:77:00:01",
    "r0": "02:00:00:77:00:02",
    "r1": "02:00:00:77:00:03",
    "b0": "02:00:00:77:00:04",
}


def sh(cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shlex.split(cmd), check=check, capture_output=True, text=True)


@dataclass
class MiniChain:
    hexid: str = field(default_factory=lambda: secrets.token_hex(3))
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"mtt{self.hexid}-"

    def ns(self, which: str) -> str:
        return f"{self.prefix}{which}"

    def ip(self, which: str, args: str) -> None:
        sh(f"ip -n {self.ns(which)} {args}")

    def up(self, rate: str | None = None, queue_bytes: int = 60_000) -> MiniChain:
        for n in "arb":
            sh(f"ip netns add {self.ns(n)}")
            self.ip(n, "link set lo up")
        sh(f"ip link add a0 netns {self.ns('a')} type veth peer name r0 netns {self.ns('r')}")
        sh(f"ip link add r1 netns {self.ns('r')} type veth peer name b0 netns {self.ns('b')}")
        for n, dev in (("a", "a0"), ("r", "r0"), ("r", "r1"), ("b", "b0")):
            self.ip(n, f"link set {dev} address {MAC[dev]}")
            self.ip(n, f"link set {dev} up")
            for off in ("tx", "tso", "gso", "gro"):
                sh(f"ip netns exec {self.ns(n)} ethtool -K {dev} {off} off", check=False)
        self.exec("r", "sysctl -qw net.ipv4.ip_forward=1")
        for n in "arb":
            self.exec(n, "sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0")
        self.ip("r", "addr add 10.0.1.254/32 dev r0")
        self.ip("r", "addr add 10.0.2.254/32 dev r1")
        self.ip("r", f"route add {A_IP}/32 dev r0")
        self.ip("r", f"neigh add {A_IP} lladdr {MAC['a0']} dev r0 nud permanent")
        self.ip("r", f"route add {B_IP}/32 dev r1")
        self.ip("r", f"neigh add {B_IP} lladdr {MAC['b0']} dev r1 nud permanent")
        self.ip("b", f"addr add {B_IP}/32 dev b0")
        self.ip("b", f"route add {A_IP}/32 dev b0")
        self.ip("b", f"neigh add {A_IP} lladdr {MAC['r1']} dev b0 nud permanent")
        self.ip("b", "route add 10.0.2.254/32 dev b0")
        self.ip("b", f"neigh add 10.0.2.254 lladdr {MAC['r1']} dev b0 nud permanent")
        # A: its IP input on a0 is dropped (the TunShell's packet socket sees frames first)
        self.exec("a", "nft add table netdev mtt")
        self.exec(
            "a",
            "nft add chain netdev mtt in { type filter hook ingress device a0 priority 0 ; policy drop ; }",
        )
        # R: the outage chain (empty = link up)
        self.exec("r", "nft add table inet mtt")
        self.exec(
            "r", "nft add chain inet mtt outage { type filter hook forward priority 0 ; policy accept ; }"
        )
        if rate:
            self.exec("r", f"tc qdisc add dev r1 root tbf rate {rate} burst 3000 limit {queue_bytes}")
        return self

    def exec(self, which: str, cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh(f"ip netns exec {self.ns(which)} {cmd}", check=check)

    def popen(self, which: str, cmd: str) -> subprocess.Popen[str]:
        p = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(which), *shlex.split(cmd)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(p)
        return p

    def outage(self, on: bool) -> None:
        """Scripted outage of the R-B link (both directions): R drops everything it forwards."""
        if on:
            self.exec("r", "nft add rule inet mtt outage drop")
        else:
            self.exec("r", "nft flush chain inet mtt outage")

    def configure_tun_a(self) -> None:
        self.ip("a", f"addr add {A_IP}/32 dev tun0")
        self.ip("a", "link set tun0 up")
        self.ip("a", f"route add {B_IP}/32 dev tun0")

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(3)
                except subprocess.TimeoutExpired:
                    p.kill()
        for n in "arb":
            sh(f"ip netns del {self.ns(n)}", check=False)


class TunShell(threading.Thread):
    """I/O shell for an endpoint agent in namespace A: TUN <-> agent <-> Ethernet on a0."""

    def __init__(self, chain: MiniChain, agent: Any) -> None:
        super().__init__(daemon=True, name="tunshell")
        self.chain = chain
        self.agent = agent
        with nsutil.netns(chain.ns("a")):
            self.tun = nsutil.open_tun("tun0")
            self.pkt = nsutil.open_packet("a0")
        chain.configure_tun_a()
        self.eth = (
            bytes.fromhex(MAC["r0"].replace(":", ""))
            + bytes.fromhex(MAC["a0"].replace(":", ""))
            + b"\x08\x00"
        )
        self.timers = Scheduler()
        self.rd, self.wr = os.pipe()
        self.calls: list[Callable[[int], list[Action]]] = []
        self.lock = threading.Lock()
        self.stop_flag = False
        self.t0 = time.monotonic_ns()
        self.wire: list[tuple[int, str, bytes]] = []  # (t_ns, "out"/"in"/"drop", packet)
        self.drop_filter: Callable[[bytes], bool] | None = None
        self.drops: dict[str, int] = {}
        self.keep_wire = True

    def now(self) -> int:
        return time.monotonic_ns() - self.t0

    def call(self, fn: Callable[[int], list[Action]]) -> None:
        """Run ``fn(now_ns)`` in the shell thread; its actions are applied."""
        with self.lock:
            self.calls.append(fn)
        os.write(self.wr, b"x")

    def call_sync(self, fn: Callable[[int], Any], timeout: float = 5.0) -> Any:
        box: list[Any] = []
        ev = threading.Event()

        def run(now: int) -> list[Action]:
            box.append(fn(now))
            ev.set()
            r = box[0]
            return r if isinstance(r, list) else []

        self.call(run)
        if not ev.wait(timeout):
            raise TimeoutError("shell call")
        return box[0]

    def stop(self) -> None:
        self.stop_flag = True
        os.write(self.wr, b"x")
        self.join(3)
        for fd in (self.tun, self.rd, self.wr):
            os.close(fd)
        self.pkt.close()

    def apply(self, acts: list[Action], now: int) -> None:
        for a in acts:
            if isinstance(a, ToNetwork):
                if self.drop_filter is not None and self.drop_filter(a.packet):
                    self.drop_filter = None
                    if self.keep_wire:
                        self.wire.append((now, "drop", a.packet))
                    continue
                if self.keep_wire:
                    self.wire.append((now, "out", a.packet))
                self.pkt.send(self.eth + a.packet)
            elif isinstance(a, ToKernel):
                os.write(self.tun, a.packet)
            elif isinstance(a, SetTimer):
                self.timers.set(a.key, a.at_ns)
            elif isinstance(a, CancelTimer):
                self.timers.cancel(a.key)
            elif isinstance(a, Drop):
                self.drops[a.reason] = self.drops.get(a.reason, 0) + 1

    def run(self) -> None:
        while not self.stop_flag:
            nxt = self.timers.next_time()
            timeout = None if nxt is None else max(0.0, (nxt - self.now()) / 1e9)
            r, _, _ = select.select([self.tun, self.pkt.fileno(), self.rd], [], [], timeout)
            now = self.now()
            if self.rd in r:
                os.read(self.rd, 4096)
                with self.lock:
                    calls, self.calls = self.calls, []
                for fn in calls:
                    self.apply(fn(now), now)
            if self.tun in r:
                p = os.read(self.tun, 65535)
                self.apply(self.agent.on_outbound(p, now), now)
            if self.pkt.fileno() in r:
                f = self.pkt.recv(65535)
                if len(f) > 14 and f[12:14] == b"\x08\x00":
                    p = f[14:]
                    if self.keep_wire:
                        self.wire.append((now, "in", p))
                    self.apply(self.agent.on_inbound(p, now), now)
            for key in self.timers.pop_due(self.now()):
                self.apply(self.agent.on_timer(key, self.now()), self.now())
