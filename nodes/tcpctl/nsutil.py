"""Small Linux helpers for the tcpctl I/O shells and netns tests: run a function in a network
namespace (per thread, setns(2)), open a TUN device, an AF_PACKET socket."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
ETH_P_ALL = 0x0003
PACKET_IGNORE_OUTGOING = 23
SOL_PACKET = 263

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


@contextlib.contextmanager
def netns(name_or_path: str) -> Iterator[None]:
    """Switch the calling thread into a network namespace (``/run/netns/<name>`` or a path)."""
    path = name_or_path if name_or_path.startswith("/") else f"/run/netns/{name_or_path}"
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    target = os.open(path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def in_netns(name: str, fn: Callable[[], T]) -> T:
    with netns(name):
        return fn()


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def open_packet(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.bind((ifname, 0))
    return s
