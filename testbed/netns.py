"""Station network namespaces: created and deleted in bulk, inspected without a subprocess.

Creation and deletion go through one ``ip -batch -`` process for all namespaces (50 in about
0.05 s), so namespaces are the usual ``/run/netns/<name>`` bind mounts that ``ip netns exec``,
tcpdump users and ``ip netns pids`` understand. Loopback is brought up, and interfaces are
listed, by a short-lived thread that ``setns``-es into the namespace (network namespaces are
per thread), never by forking ``ip`` once per station.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from testbed.naming import NETNS_DIR, OUR_NETNS_RE
from testbed.procs import setns_fd

T = TypeVar("T")

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


class NetnsError(RuntimeError):
    pass


def _batch(lines: Iterable[str], *, force: bool) -> subprocess.CompletedProcess[str]:
    script = "".join(f"{line}\n" for line in lines)
    args = ["ip", *(["-force"] if force else []), "-batch", "-"]
    return subprocess.run(args, input=script, capture_output=True, text=True, check=False)


def create(names: list[str]) -> None:
    """Create every namespace in ``names`` and bring its loopback up."""
    if not names:
        return
    res = _batch((f"netns add {n}" for n in names), force=False)
    if res.returncode != 0:
        raise NetnsError(f"ip netns add failed: {res.stderr.strip()}")
    for n in names:
        in_netns(n, lambda: set_up("lo"))


def delete(names: Iterable[str]) -> None:
    """Delete the namespaces (missing ones are ignored)."""
    todo = [n for n in names if (NETNS_DIR / n).exists()]
    if todo:
        _batch((f"netns del {n}" for n in todo), force=True)


def exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def list_all() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def list_ours(run_id: str | None = None) -> list[str]:
    """Our namespaces (``mt<6 hex>-...``), of one run or of all runs."""
    out = []
    for n in list_all():
        m = OUR_NETNS_RE.match(n)
        if m and (run_id is None or m.group(1) == run_id):
            out.append(n)
    return out


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` in a fresh thread that has joined the namespace ``name``; return its result."""
    result: list[T] = []
    error: list[BaseException] = []

    def body() -> None:
        try:
            fd = os.open(NETNS_DIR / name, os.O_RDONLY | os.O_CLOEXEC)
            try:
                setns_fd(fd)
            finally:
                os.close(fd)
            result.append(fn())
        except BaseException as exc:  # handed back to the caller's thread
            error.append(exc)

    t = threading.Thread(target=body, name=f"netns-{name}", daemon=True)
    t.start()
    t.join()
    if error:
        raise error[0]
    return result[0]


def set_up(ifname: str) -> None:
    """Set IFF_UP on ``ifname`` in the calling thread's namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", ifname.encode(), 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", ifname.encode(), flags | IFF_UP))


def link_flags() -> dict[str, int]:
    """``name -> IFF_* flags`` of every interface in the calling thread's namespace."""
    out = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            req = struct.pack("16sH14x", name.encode(), 0)
            out[name] = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
    return out


def links(name: str) -> dict[str, int]:
    """Interfaces of namespace ``name`` with their flags."""
    return in_netns(name, link_flags)


def pids_in(names: Iterable[str]) -> dict[str, list[int]]:
    """Processes whose network namespace is one of ``names`` (what ``ip netns pids`` does, for all
    namespaces in one pass over /proc)."""
    inodes: dict[tuple[int, int], str] = {}
    for n in names:
        try:
            st = os.stat(NETNS_DIR / n)
        except FileNotFoundError:
            continue
        inodes[(st.st_dev, st.st_ino)] = n
    found: dict[str, list[int]] = {n: [] for n in inodes.values()}
    if not inodes:
        return found
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == me:
            continue
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
        owner = inodes.get((st.st_dev, st.st_ino))
        if owner is not None:
            found[owner].append(pid)
    return found
