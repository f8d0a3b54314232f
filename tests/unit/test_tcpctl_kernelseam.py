"""BpfKernel's commands over the run's maps (the maps replaced by an in-memory slot)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodes.core.addr import station_ip_bytes
from nodes.tcpctl import kernel as K
from nodes.tcpctl.agent import ConnId
from nodes.tcpctl.kernelseam import BpfKernel

CONN = ConnId(station_ip_bytes(1), 40000, station_ip_bytes(4), 5201)


@dataclass
class SlotMaps:
    """The ctl slot as ``kernel.Maps`` keeps it; ``done`` is the BPF side's ``cmd_done``."""

    ctls: dict[Any, K.Ctl] = field(default_factory=dict)
    done: int = 0
    written: list[int] = field(default_factory=list)

    def ctl(self, key: Any) -> K.Ctl:
        return self.ctls.setdefault(key, K.Ctl())

    def command(self, key: Any, cmd: int, cwnd: int = 0, ssthresh: int = 0) -> None:
        c = self.ctl(key)
        c.cmd_seq += 1
        c.cmd = cmd
        self.written.append(cmd)

    def state(self, key: Any) -> dict[str, Any]:
        return {"cmd_done": self.done}

    def run_command(self, key: Any) -> None:
        """The kernel processes the connection's next ACK."""
        self.done = self.ctl(key).cmd_seq


def test_freeze_after_an_executed_thaw_snapshots() -> None:
    maps = SlotMaps()
    k = BpfKernel(maps, netns=7)
    key = k.key(CONN)
    k.snapshot(CONN)
    maps.run_command(key)
    k.restore(CONN, "old")
    maps.run_command(key)  # the thawing ACK was processed
    k.snapshot(CONN)
    assert maps.written == [K.CMD_SNAPSHOT, K.CMD_RESTORE_OLD, K.CMD_SNAPSHOT]


def test_freeze_before_the_thaw_ran_keeps_the_snapshot_and_cancels_the_restore() -> None:
    """The thaw's deferred segment joins a discovery and freezes again before the kernel read the
    thawing ACK: no snapshot of the frozen kernel, the restore replaced by CMD_NONE."""
    for mode, cmd in (("old", K.CMD_RESTORE_OLD), ("default", K.CMD_RESTORE_DEFAULT)):
        maps = SlotMaps()
        k = BpfKernel(maps, netns=7)
        key = k.key(CONN)
        k.snapshot(CONN)
        maps.run_command(key)
        k.restore(CONN, mode)  # type: ignore[arg-type]
        k.snapshot(CONN)  # before the kernel ran the restore
        assert maps.written == [K.CMD_SNAPSHOT, cmd, K.CMD_NONE]
        maps.run_command(key)
        k.restore(CONN, mode)  # type: ignore[arg-type]
        maps.run_command(key)
        k.snapshot(CONN)  # a later freeze snapshots again
        assert maps.written[-1] == K.CMD_SNAPSHOT


def test_freeze_while_an_atcp_cwnd_restore_waits_still_snapshots() -> None:
    maps = SlotMaps()
    k = BpfKernel(maps, netns=7)
    k.restore(CONN, "cwnd")
    k.snapshot(CONN)
    assert maps.written == [K.CMD_RESTORE_CWND, K.CMD_SNAPSHOT]
