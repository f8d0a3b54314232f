"""The station's network devices, made with raw ioctls (no pyroute2: ~1 ms, no extra imports).

- TUN ``tun0`` (IFF_TUN | IFF_NO_PI): the station address with prefix /16, MTU 1500, up. Setting
  the address with a /16 netmask on an up device makes the kernel add the connected route
  ``10.0.0.0/16 dev tun0``, which is the route every station uses.
- TAP ``staN-wlan0`` (IFF_TAP | IFF_NO_PI) switched to link type radiotap (``TUNSETLINK`` 803,
  allowed only while the device is down), IPv6 disabled, no address, MTU 2304, up. Frames the
  router writes to it are "received" by the kernel, so tcpdump on it sees the station's air
  traffic; nothing the kernel sends out on it matters (the router drains and discards it).

Both devices are not persistent: they vanish when the router's file descriptors close, so a
killed router leaves nothing behind in the namespace. Everything here acts on the calling
process's current network namespace.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

TUNSETIFF = 0x400454CA
TUNSETLINK = 0x400454CD
IFF_TUN = 0x0001
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
SIOCSIFADDR = 0x8916
SIOCSIFNETMASK = 0x891C
SIOCSIFMTU = 0x8922
IFF_UP = 0x1

ARPHRD_IEEE80211_RADIOTAP = 803
CLONE_NEWNET = 0x40000000
TUN_MTU = 1500
TAP_MTU = 2304
IFNAMSIZ = 16


def _ifname(name: str) -> bytes:
    raw = name.encode()
    if not 0 < len(raw) < IFNAMSIZ:
        raise ValueError(f"interface name {name!r} must be 1..15 bytes")
    return raw


def open_tun(name: str, tap: bool = False) -> int:
    """Create a TUN (or TAP) device and return its non-blocking file descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        flags = (IFF_TAP if tap else IFF_TUN) | IFF_NO_PI
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", _ifname(name), flags))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sockaddr_in(addr: bytes) -> bytes:
    return struct.pack("=H2s4s8x", socket.AF_INET, b"\x00\x00", addr)


def configure(
    ctl: socket.socket,
    name: str,
    *,
    mtu: int,
    addr: bytes | None = None,
    prefix_len: int = 16,
    up: bool = True,
) -> None:
    """Set address (4 bytes) and netmask, MTU, then bring the device up, via ``ctl`` (AF_INET)."""
    ifn = _ifname(name)
    if addr is not None:
        fcntl.ioctl(ctl, SIOCSIFADDR, struct.pack("16s16s", ifn, _sockaddr_in(addr)) + bytes(8))
        mask = (0xFFFF_FFFF << (32 - prefix_len)) & 0xFFFF_FFFF
        fcntl.ioctl(
            ctl, SIOCSIFNETMASK, struct.pack("16s16s", ifn, _sockaddr_in(mask.to_bytes(4, "big"))) + bytes(8)
        )
    fcntl.ioctl(ctl, SIOCSIFMTU, struct.pack("16si20x", ifn, mtu))
    if up:
        res = fcntl.ioctl(ctl, SIOCGIFFLAGS, struct.pack("16s24x", ifn))
        flags = struct.unpack_from("16sH", res)[1]
        fcntl.ioctl(ctl, SIOCSIFFLAGS, struct.pack("16sH22x", ifn, flags | IFF_UP))


def disable_ipv6(name: str) -> None:
    """``net.ipv6.conf.<name>.disable_ipv6 = 1`` in the current netns (no-op without IPv6)."""
    try:
        with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:
            f.write("1")
    except FileNotFoundError:
        pass


def create_station_devices(station: int, addr: bytes, tun_name: str = "tun0") -> tuple[int, int, str]:
    """Create and configure ``tun0`` and ``sta<N>-wlan0``; return ``(tun_fd, tap_fd, tap_name)``."""
    tap_name = f"sta{station}-wlan0"
    tun_fd = open_tun(tun_name)
    try:
        tap_fd = open_tun(tap_name, tap=True)
    except BaseException:
        os.close(tun_fd)
        raise
    try:
        fcntl.ioctl(tap_fd, TUNSETLINK, ARPHRD_IEEE80211_RADIOTAP)
        disable_ipv6(tun_name)
        disable_ipv6(tap_name)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as ctl:
            configure(ctl, tun_name, mtu=TUN_MTU, addr=addr)
            configure(ctl, tap_name, mtu=TAP_MTU)
    except BaseException:
        os.close(tun_fd)
        os.close(tap_fd)
        raise
    return tun_fd, tap_fd, tap_name


def enter_netns(name_or_path: str) -> None:
    """setns(2) into a named netns (``/run/netns/NAME``) or a path (Python 3.11 has no os.setns)."""
    path = name_or_path if "/" in name_or_path else f"/run/netns/{name_or_path}"
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def lo_up() -> None:
    """Bring the namespace's loopback up (a new netns has it down); idempotent."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as ctl:
        res = fcntl.ioctl(ctl, SIOCGIFFLAGS, struct.pack("16s24x", b"lo"))
        flags = struct.unpack_from("16sH", res)[1]
        if not flags & IFF_UP:
            fcntl.ioctl(ctl, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
