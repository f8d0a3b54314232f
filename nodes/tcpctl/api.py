"""The per-connection API the cross-layer extensions call (issue 5), reached as ``ctx.endpoint``.

Every sender behaviour of the papers is a call here (docs/fidelity.md has the full table):

| paper step | call |
|---|---|
| ELFN freeze on route failure, probe every 2 s (Yu 2004 s3.1) | ``freeze(conn, now, restore="old")`` |
| ELFN thaw: old values / default (RTO 6 s, cwnd 2) | automatic on the first ACK while frozen (Yu 2004 Alg. 2); ``thaw(conn, now, restore=...)`` |
| EPLN Algorithm 2 (ICMP with seqno and pkt_lost) | ``epln_notice(conn, seq, pkt_lost, now)`` |
| BEAD: the receiver's router resends the highest lost ACK | ``resend_ack(conn)`` (on the receiver's station) |
| ATCP: 3 dupACKs -> withhold from the 3rd, persist, retransmit, restore cwnd at the exit | ``withhold_dupacks(conn, set(), from_count=3)``, ``hold(conn, now, "quiet", "new_ack")``, ``snapshot(conn)``, ``retransmit(conn, snd_una, now)``, ``restore(conn)`` |
| ATCP: Destination Unreachable -> persist, cwnd = 1 segment | ``hold(conn, now, "persist", "any_ack")`` + ``set_cwnd(conn, 1)`` (``atcp_disconnect``) |
| ATCP: ECN -> congested (TCP's own reaction) | ``set_ecn(conn, "in", ece=True)`` |
| ABRA backoff + restore cwnd/2, ssthresh/4 | ``rto_policy(conn, Abra(0.1, 0.6))`` |
| Fixed RTO | ``rto_policy(conn, FixedAfterTwo())`` |
| Route-control SR-5 single valid dupACK -> retransmit | ``on_dupack`` + ``retransmit(conn, seq, now)`` |
| Route-control route-number / NEW / RR-number / NR | ``route_number``, ``bump_route_number``; ``on_ack`` gives ``rc_echo``, ``rc_mark`` |
| Route-control Algorithm 3 (RTT restart on a new route) | ``restart_rtt(conn)`` (closest: see docs/fidelity.md) |
| Klemm 2004: TCP Vegas | scenario ``cc: vegas`` -> ``iperf3 -C vegas_<runid>`` (no call) |

Actions returned by these calls must be handed to the node runtime (``runtime.apply``); hook
subscribers simply return them.
"""

from __future__ import annotations

from typing import Any, Literal

from nodes.core.events import Action, ToKernel
from nodes.core.hooks import Handler
from nodes.tcpctl.agent import (
    ConnId,
    EndpointAgent,
    HoldMode,
    ReleaseOn,
    Restore,
    TcpAck,
    TcpDupack,
    TcpSegmentSent,
    TcpTimeout,
    TcpTimer,
    TcpUnreachable,
)
from nodes.tcpctl.kernelseam import Abra, FixedAfterTwo, RtoPolicy, Standard

__all__ = ["Abra", "ConnId", "FixedAfterTwo", "Standard", "TcpControl"]

_MODES = {"persist": HoldMode.PERSIST, "quiet": HoldMode.QUIET, "frozen": HoldMode.FROZEN}


class TcpControl:
    """Facade over one station's ``EndpointAgent`` (and through it, the kernel's BPF side)."""

    def __init__(self, agent: EndpointAgent) -> None:
        self.agent = agent

    # ---------------------------------------------------------------- connections
    def conns(self) -> list[ConnId]:
        return list(self.agent.conns)

    def senders(self) -> list[ConnId]:
        """Connections on which the local kernel has sent data."""
        return [c for c, v in self.agent.conns.items() if v.snd_nxt is not None]

    def kernel_state(self, conn: ConnId) -> dict[str, Any] | None:
        """The BPF per-connection state (srtt, RTO log, counters), or None."""
        return self.agent.kernel.state(conn)

    # ---------------------------------------------------------------- ELFN / EPLN
    def freeze(self, conn: ConnId, now_ns: int, restore: Restore = "old") -> list[Action]:
        return self.agent.freeze(conn, now_ns, restore)

    def thaw(self, conn: ConnId, now_ns: int, restore: Restore | None = None) -> list[Action]:
        return self.agent.thaw(conn, now_ns, restore)

    def epln_notice(self, conn: ConnId, seq: int, pkt_lost: bool, now_ns: int) -> list[Action]:
        return self.agent.epln_notice(conn, seq, pkt_lost, now_ns)

    def is_frozen(self, conn: ConnId) -> bool:
        c = self.agent.conns.get(conn)
        return c is not None and c.hold is not None and c.hold.mode == HoldMode.FROZEN

    # ---------------------------------------------------------------- holding the sender
    def hold(
        self,
        conn: ConnId,
        now_ns: int,
        mode: Literal["persist", "quiet"] = "persist",
        release_on: ReleaseOn = "never",
    ) -> list[Action]:
        return self.agent.hold(conn, _MODES[mode], now_ns, release_on)

    def release(self, conn: ConnId, now_ns: int) -> list[Action]:
        return self.agent.release(conn, now_ns)

    def atcp_disconnect(self, conn: ConnId, now_ns: int) -> list[Action]:
        """ATCP on Destination Unreachable: "puts the TCP sender into persist mode ... sets TCP's
        CWND to one segment"; leaves when the receiver answers a probe (any ACK)."""
        return self.hold(conn, now_ns, "persist", "any_ack") + self.set_cwnd(conn, 1)

    # ---------------------------------------------------------------- segments and ACKs
    def retransmit(self, conn: ConnId, seq: int, now_ns: int, fresh_ts: bool = True) -> list[Action]:
        return self.agent.retransmit(conn, seq, now_ns, fresh_ts)

    def retransmit_unacked(self, conn: ConnId, now_ns: int, limit: int | None = None) -> list[Action]:
        return self.agent.retransmit_unacked(conn, now_ns, limit)

    def withhold_dupacks(self, conn: ConnId, counts: set[int] | frozenset[int], from_count: int = 0) -> None:
        self.agent.set_withhold_dupacks(conn, counts, from_count)

    def snapshot(self, conn: ConnId) -> None:
        """Save the kernel's cwnd and ssthresh (executed at the next ACK the kernel processes)."""
        self.agent.kernel.snapshot(conn)

    def restore(self, conn: ConnId, keep_rto: bool = False) -> None:
        """Set cwnd and ssthresh back to the last snapshot (at the next ACK the kernel processes);
        ``keep_rto`` also caps the RTO at the snapshot's until the kernel's estimator agrees (the
        ``old`` restore), so an RTT sample spanning the time since the snapshot does not inflate it."""
        self.agent.kernel.restore(conn, "old" if keep_rto else "cwnd")

    def add_dupacks(self, conn: ConnId, n: int) -> list[Action]:
        return self.agent.add_dupacks(conn, n)

    def resend_ack(self, conn: ConnId) -> list[Action]:
        """BEAD at the receiver's station: send the local kernel's latest ACK again (towards the
        sender), e.g. after a notification that ACKs were lost."""
        c = self.agent.conns.get(conn)
        if c is None or c.last_out_pkt is None:
            return []
        from nodes.core.events import ToNetwork

        return [ToNetwork(c.last_out_pkt)]

    def set_ecn(
        self,
        conn: ConnId,
        direction: Literal["in", "out"],
        ip_ecn: int | None = None,
        ece: bool | None = None,
        cwr: bool | None = None,
    ) -> None:
        self.agent.set_ecn(conn, direction, ip_ecn, ece, cwr)

    def clear_ecn(self, conn: ConnId) -> None:
        self.agent.clear_ecn(conn)

    def unreachable(self, conn: ConnId, code: int = 1) -> list[Action]:
        return self.agent.unreachable(conn, code)

    def deliver(self, packet: bytes) -> list[Action]:
        """Hand a packet to the local kernel, bypassing the agent."""
        return [ToKernel(packet)]

    # ---------------------------------------------------------------- kernel state
    def set_cwnd(self, conn: ConnId, segments: int, ssthresh: int = 0) -> list[Action]:
        return self.agent.set_cwnd(conn, segments, ssthresh)

    def rto_policy(self, conn: ConnId, policy: RtoPolicy | Literal["standard", "fixed_after_two"]) -> None:
        if policy == "standard":
            policy = Standard()
        elif policy == "fixed_after_two":
            policy = FixedAfterTwo()
        assert not isinstance(policy, str)
        self.agent.kernel.set_policy(conn, policy)

    def restart_rtt(self, conn: ConnId) -> bool:
        """Route-control Algorithm 3 ("RTT estimation restarts with the first sample on a new
        route"). Linux exposes no way to reset srtt/rttvar from BPF or userspace; returns False.
        The closest behaviour (docs/fidelity.md): the ABRA/Fixed policies' srtt range is
        reset, and the kernel's estimator converges within a few RTTs (gain 1/8)."""
        return False

    # ---------------------------------------------------------------- Route-control marks
    def route_number(self, dst: bytes) -> int:
        return self.agent.route_number(dst)

    def bump_route_number(self, dst: bytes) -> int:
        return self.agent.bump_route_number(dst)

    # ---------------------------------------------------------------- subscriptions
    def on_ack(self, fn: Handler[TcpAck]) -> None:
        self.agent.hooks.subscribe(TcpAck, fn)

    def on_dupack(self, fn: Handler[TcpDupack]) -> None:
        self.agent.hooks.subscribe(TcpDupack, fn)

    def on_unreachable(self, fn: Handler[TcpUnreachable]) -> None:
        self.agent.hooks.subscribe(TcpUnreachable, fn)

    def on_segment_sent(self, fn: Handler[TcpSegmentSent]) -> None:
        self.agent.hooks.subscribe(TcpSegmentSent, fn)

    def on_timer(self, fn: Handler[TcpTimer]) -> None:
        """An extension's own timers: ``SetTimer(("endpoint", <name>, ...), t)`` comes back as a
        :class:`TcpTimer` (the runtime routes ``("endpoint", ...)`` keys to the agent)."""
        self.agent.hooks.subscribe(TcpTimer, fn)

    def on_timeout(self, fn: Handler[TcpTimeout], now_ns: int) -> list[Action]:
        """Kernel RTO expirations (BPF_SOCK_OPS_RTO_CB counter, polled); returns the poll timer."""
        self.agent.hooks.subscribe(TcpTimeout, fn)
        return self.agent.start_polling(now_ns)


def make_endpoint(ctx: Any, runtime: Any, run_id: str | None = None, params: Any = None) -> TcpControl:
    """Create the station's agent, plug it into the runtime and expose the API as ``ctx.endpoint``.

    With ``run_id`` the kernel side is the run's pinned BPF maps (nodes.tcpctl.kernel.load must
    have run, and the calling thread must be in the station's netns so its cookie is right).
    """
    from nodes.tcpctl.agent import AgentParams
    from nodes.tcpctl.kernelseam import BpfKernel, NullKernel

    kernel: Any = NullKernel()
    if run_id is not None:
        from nodes.tcpctl import kernel as K

        maps = K.Maps(run_id)
        cookie = K.netns_cookie_of_current()
        maps.register_netns(cookie, ctx.station)
        kernel = BpfKernel(maps, cookie)
    agent = EndpointAgent(ctx.ip, params or AgentParams(), kernel=kernel, logger=ctx.log.getChild("tcpctl"))
    api = TcpControl(agent)
    runtime.endpoint = agent
    ctx.endpoint = api
    return api
