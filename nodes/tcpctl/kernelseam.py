"""The seam between the endpoint agent and the kernel's TCP state (STYLE.md: inject a seam).

``KernelTcp`` is what the agent asks of the kernel: snapshot and restore the congestion state
(ELFN), set cwnd/ssthresh (ATCP, ABRA), choose the RTO policy, read the per-connection state the
BPF side keeps. ``BpfKernel`` implements it with the run's pinned maps (nodes.tcpctl.kernel);
``FakeKernel`` records calls for tests in virtual time; ``NullKernel`` does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from nodes.tcpctl.agent import ConnId


@dataclass(frozen=True, slots=True)
class Standard:
    """Linux's own RTO backoff (doubling, RFC 6298 section 5.5)."""


@dataclass(frozen=True, slots=True)
class FixedAfterTwo:
    """Dyer & Boppana 2001: after two consecutive timeouts, stop doubling the RTO."""


@dataclass(frozen=True, slots=True)
class Abra:
    """Ghanem 2008: backoff_new = 1 + (last_srtt - min_srtt)/(max_srtt - min_srtt); restore
    cwnd/2 and ssthresh/4. min_srtt and max_srtt start at these values (paper: 0.1 s, 0.6 s)."""

    min_srtt_s: float = 0.1
    max_srtt_s: float = 0.6


RtoPolicy = Standard | FixedAfterTwo | Abra


KernelRestore = Literal["old", "default", "cwnd"]
"""What ``restore`` sets back from the last snapshot. ``old``: ELFN's thaw to the values at the
freeze (cwnd, ssthresh, and the RTO kept at the freeze's until the kernel's estimator agrees
again); ``default``: ELFN's thaw to cwnd 2 and an RTO of 6 s; ``cwnd``: cwnd and ssthresh only
(ATCP leaving its loss state)."""


class KernelTcp(Protocol):
    def snapshot(self, conn: ConnId) -> None: ...

    def restore(self, conn: ConnId, mode: KernelRestore) -> None: ...

    def set_cwnd(self, conn: ConnId, cwnd: int, ssthresh: int = 0) -> None: ...

    def set_policy(self, conn: ConnId, policy: RtoPolicy) -> None: ...

    def state(self, conn: ConnId) -> dict[str, Any] | None: ...


class NullKernel:
    def snapshot(self, conn: ConnId) -> None:
        pass

    def restore(self, conn: ConnId, mode: KernelRestore) -> None:
        pass

    def set_cwnd(self, conn: ConnId, cwnd: int, ssthresh: int = 0) -> None:
        pass

    def set_policy(self, conn: ConnId, policy: RtoPolicy) -> None:
        pass

    def state(self, conn: ConnId) -> dict[str, Any] | None:
        return None


@dataclass
class FakeKernel:
    """Records every call; ``states`` is what ``state`` returns (tests set it)."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)
    states: dict[Any, dict[str, Any]] = field(default_factory=dict)

    def snapshot(self, conn: ConnId) -> None:
        self.calls.append(("snapshot", conn))

    def restore(self, conn: ConnId, mode: KernelRestore) -> None:
        self.calls.append(("restore", conn, mode))

    def set_cwnd(self, conn: ConnId, cwnd: int, ssthresh: int = 0) -> None:
        self.calls.append(("set_cwnd", conn, cwnd, ssthresh))

    def set_policy(self, conn: ConnId, policy: RtoPolicy) -> None:
        self.calls.append(("set_policy", conn, policy))

    def state(self, conn: ConnId) -> dict[str, Any] | None:
        return self.states.get(conn)


class BpfKernel:
    """``KernelTcp`` over the run's pinned BPF maps; ``netns`` is the station's netns cookie."""

    def __init__(self, maps: Any, netns: int) -> None:
        self.maps = maps
        self.netns = netns

    def key(self, conn: ConnId) -> Any:
        from nodes.tcpctl.kernel import ConnKey

        return ConnKey(self.netns, conn.local_ip, conn.remote_ip, conn.local_port, conn.remote_port)

    def snapshot(self, conn: ConnId) -> None:
        """Snapshot at a freeze, unless the last thaw's restore has not run yet.

        A command runs when the kernel processes the connection's next ACK, and there is one
        command slot: a freeze right after a thaw (the thaw's deferred segments join a route
        discovery under way, ELFN) would replace the restore before the kernel has read the
        thawing ACK, and snapshot the frozen kernel's state instead. The connection has not
        sent since the last snapshot then: keep it for the next thaw, and replace the restore by
        ``CMD_NONE`` (which also ends an RTO cap set for it). If the kernel runs the restore
        between this read and the write, it ran for microseconds with the restored values."""
        from nodes.tcpctl import kernel as K

        key = self.key(conn)
        ctl = self.maps.ctl(key)
        if ctl.cmd in (K.CMD_RESTORE_OLD, K.CMD_RESTORE_DEFAULT):
            st = self.maps.state(key)
            if st is not None and st["cmd_done"] != ctl.cmd_seq:
                self.maps.command(key, K.CMD_NONE)
                return
        self.maps.command(key, K.CMD_SNAPSHOT)

    def restore(self, conn: ConnId, mode: KernelRestore) -> None:
        from nodes.tcpctl import kernel as K

        cmd = {"old": K.CMD_RESTORE_OLD, "default": K.CMD_RESTORE_DEFAULT, "cwnd": K.CMD_RESTORE_CWND}[mode]
        self.maps.command(self.key(conn), cmd)

    def set_cwnd(self, conn: ConnId, cwnd: int, ssthresh: int = 0) -> None:
        from nodes.tcpctl import kernel as K

        self.maps.command(self.key(conn), K.CMD_SET, cwnd, ssthresh)

    def set_policy(self, conn: ConnId, policy: RtoPolicy) -> None:
        from nodes.tcpctl import kernel as K

        if isinstance(policy, Abra):
            self.maps.set_policy(
                self.key(conn), K.POLICY_ABRA, round(policy.min_srtt_s * 1e6), round(policy.max_srtt_s * 1e6)
            )
        elif isinstance(policy, FixedAfterTwo):
            self.maps.set_policy(self.key(conn), K.POLICY_FIXED_AFTER_TWO)
        else:
            self.maps.set_policy(self.key(conn), K.POLICY_STANDARD)

    def state(self, conn: ConnId) -> dict[str, Any] | None:
        st: dict[str, Any] | None = self.maps.state(self.key(conn))
        return st
