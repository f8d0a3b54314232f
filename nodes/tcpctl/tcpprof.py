"""Kernel side of the TCP profiles' BPF knobs: load, register stations, read counters (an I/O shell).

``bpf/tcpprof.bpf.c`` is a cgroup sock_ops program that carries the three knobs of a TCP profile
no sysctl or route metric can (topologies/tcp_profiles.py, ``Mechanism.BPF``): the initial RTO,
the congestion-window clamp and the backoff cap. Per run it is loaded once, attached to the root
cgroup v2 with a BPF link pinned under ``/sys/fs/bpf/mt<runid>/tcpprof_link`` beside tcpctl's pins,
and acts only on the network namespaces registered in ``tcpprof_netns``. ``kernel.cleanup(run_id)``
removes the pin directory, which detaches it (also after a SIGKILL, through ``make clean``).
"""

from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nodes.tcpctl.kernel import (
    BPF_DIR,
    _check,
    _obj_get,
    _ptr,
    attach_sockops,
    ensure_bpffs,
    lib,
    run_dir,
)

TCPPROF_OBJ: Final = BPF_DIR / "tcpprof.bpf.o"
_PROF: Final = struct.Struct("<4I")  # struct tcpprof
STATS_FIELDS: Final = (
    "timeout_init",
    "clamps",
    "backoff_caps",
    "backoff_uncaps",
    "setsockopt_err",
    "established",
)
_STATS: Final = struct.Struct(f"<{len(STATS_FIELDS)}Q")  # struct tcpprof_stats
PINS: Final = ("tcpprof_netns", "tcpprof_stats")


@dataclass(frozen=True, slots=True)
class ProfileParams:
    """One station's ``struct tcpprof`` (0 = leave the kernel's behaviour)."""

    rto_init_ms: int = 0
    cwnd_clamp: int = 0
    max_backoff: int = 0
    #: the namespace's tcp_rto_max_ms, put back after a series the backoff cap ended
    rto_max_ms: int = 120_000

    @property
    def backoff_shift(self) -> int:
        """log2(max_backoff): expirations after which the RTO stops doubling (0: no cap)."""
        return self.max_backoff.bit_length() - 1 if self.max_backoff > 1 else 0

    def pack(self) -> bytes:
        return _PROF.pack(self.rto_init_ms, self.cwnd_clamp, self.backoff_shift, self.rto_max_ms)

    @property
    def active(self) -> bool:
        return bool(self.rto_init_ms or self.cwnd_clamp or self.backoff_shift)


def load(run_id: str, cgroup: Path | None = None) -> Path:
    """Load and attach the program for one run; returns the pin directory (made if tcpctl has not)."""
    ensure_bpffs()
    L = lib()
    pin = run_dir(run_id)
    pin.mkdir(mode=0o700, exist_ok=True)
    obj = _ptr(L.bpf_object__open_file(str(TCPPROF_OBJ).encode(), None), f"open {TCPPROF_OBJ}")
    for m in PINS:
        mp = _ptr(L.bpf_object__find_map_by_name(obj, m.encode()), f"map {m}")
        _check(L.bpf_map__set_pin_path(mp, str(pin / m).encode()), f"pin path {m}")
    _check(L.bpf_object__load(obj), f"load {TCPPROF_OBJ}")
    attach_sockops(obj, "tcpprof_sockops", cgroup, pin / "tcpprof_link")
    return pin


class ProfileMaps:
    """The run's pinned tcpprof maps, opened by path."""

    def __init__(self, run_id: str) -> None:
        pin = run_dir(run_id)
        self.netns_fd = _obj_get(pin / "tcpprof_netns")
        self.stats_fd = _obj_get(pin / "tcpprof_stats")

    def close(self) -> None:
        os.close(self.netns_fd)
        os.close(self.stats_fd)

    def register(self, cookie: int, params: ProfileParams) -> None:
        k = struct.pack("<Q", cookie)
        _check(
            lib().bpf_map_update_elem(self.netns_fd, k, params.pack(), 0), "register netns in tcpprof_netns"
        )

    def stats(self, cookie: int) -> dict[str, int]:
        """The namespace's counters (all 0 before its first TCP event)."""
        buf = ctypes.create_string_buffer(_STATS.size)
        rc = lib().bpf_map_lookup_elem(self.stats_fd, struct.pack("<Q", cookie), buf)
        if rc < 0:
            return dict.fromkeys(STATS_FIELDS, 0)
        return dict(zip(STATS_FIELDS, _STATS.unpack(buf.raw), strict=True))
