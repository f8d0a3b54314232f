"""Kernel side of tcpctl: load, attach, command and read the BPF programs (an I/O shell).

What is loaded per run (docs/tcpctl.md "Setup and cleanup"):

- ``tcpctl.bpf.o``: the sock_ops program ``tcpctl_sockops`` attached with a BPF link to a cgroup v2
  (default: the root of the unified hierarchy, so the orchestrator need not move processes;
  the program acts only on sockets of network namespaces registered in ``tcpctl_netns``), its
  three maps, and the struct_ops congestion control ``mtctl_<runid>`` (controllable Reno).
- ``vegas.bpf.o``: the struct_ops congestion control TCP Vegas, registered per run as
  ``vegas_<runid>`` (a per-run name, so one run's cleanup can never unregister the Vegas another
  run is using).

Everything is pinned under ``/sys/fs/bpf/mt<runid>/``; ``cleanup(run_id)`` unregisters the
struct_ops maps pinned there and removes the directory. libbpf (the distribution's libbpf.so.1)
is driven through ctypes: one object holds the sock_ops program, the congestion control and the
maps they share, which bpftool cannot load as one unit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import socket
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

BPF_DIR = Path(__file__).resolve().parent / "bpf" / "build"
TCPCTL_OBJ = BPF_DIR / "tcpctl.bpf.o"
VEGAS_OBJ = BPF_DIR / "vegas.bpf.o"
BPFFS = Path("/sys/fs/bpf")
MAX_STATIONS = 1024
"""Stations one run can register in ``tcpctl_netns`` (``TCPCTL_MAX_STATIONS`` in tcpctl.bpf.c)."""
CGROUP2_CANDIDATES = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
VEGAS_NAME_IN_OBJ = b"tcp_vegas_bpf"
CTL_NAME_IN_OBJ = b"mtctl"
RUN_CC_RE = re.compile(r"^(mtctl|vegas)_([0-9a-z]{1,9})$")
"""Congestion controls registered by ``load``: ``mtctl_<runid>``, ``vegas_<runid>``."""
BPF_CGROUP_SOCK_OPS = 3
SO_NETNS_COOKIE = 71
RTO_LOG = 16

# Byte layouts of nodes/tcpctl/bpf/tcpctl.h (little-endian host; IPv4 addresses as raw bytes).
_KEY = struct.Struct("<Q4s4sHHI")
_CTL = struct.Struct("<8I")
_ST_SCALARS = (
    "cmd_done frz_cwnd frz_ssthresh frz_srtt_us frz_rto_us applied_cwnd applied_ssthresh armed "
    "consec_rto series_una last_cwnd last_ssthresh last_srtt_us min_srtt_us max_srtt_us pending "
    "pending_cwnd pending_ssthresh rto_max_ms n_rto n_retrans n_rtt srtt_us rto_us recoveries "
    "ca_seen setsockopt_err state post_pending post_cwnd rto_hold rto_hold_seq post_rto_us hold_cwnd hold_una hold_caps "
    "rttvar_us rto_est_us"
).split()
_ST_TAIL = ("rtt_sum_us", "rtt_sqerr", "rtt_err_n", "rto_hold_until_ms", "thaw_rto_us", "thaws")
_ST = struct.Struct(f"<{len(_ST_SCALARS)}I{RTO_LOG}Q{RTO_LOG}I{RTO_LOG}I2Q4I")
RTT_ERR_UNIT_US = 10
"""Unit of ``rtt_sqerr`` (tcpctl.h ``RTT_ERR_UNIT_US``): the squared SRTT errors are summed in (10 us)^2."""

CMD_NONE, CMD_SNAPSHOT, CMD_RESTORE_OLD, CMD_RESTORE_DEFAULT, CMD_SET, CMD_RESTORE_CWND = 0, 1, 2, 3, 4, 5
POLICY_STANDARD, POLICY_FIXED_AFTER_TWO, POLICY_ABRA = 0, 1, 2


class BpfError(OSError):
    pass


def run_dir(run_id: str) -> Path:
    return BPFFS / f"mt{run_id}"


def ctl_cc_name(run_id: str) -> str:
    """Name of the run's controllable congestion control (TCP_CA_NAME_MAX is 16 with the NUL)."""
    return _cc_name("mtctl", run_id)


def vegas_cc_name(run_id: str) -> str:
    """Name of the run's TCP Vegas (``iperf3 -C vegas_<runid>``)."""
    return _cc_name("vegas", run_id)


def _cc_name(kind: str, run_id: str) -> str:
    name = f"{kind}_{run_id}"
    if len(name) > 15:
        raise ValueError(f"congestion control name {name!r} longer than 15 characters")
    return name


def netns_cookie_of_current() -> int:
    """The cookie of the calling thread's network namespace (SO_NETNS_COOKIE, Linux 5.14)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        return int(struct.unpack("<Q", s.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8))[0])


def ensure_bpffs() -> None:
    if not os.path.ismount(BPFFS):
        BPFFS.mkdir(parents=True, exist_ok=True)
        rc = _libc().mount(b"bpf", str(BPFFS).encode(), b"bpf", 0, None)
        if rc != 0:
            e = ctypes.get_errno()
            raise BpfError(e, f"mount bpffs on {BPFFS}: {os.strerror(e)}")


def cgroup2_root() -> Path:
    for p in CGROUP2_CANDIDATES:
        if (p / "cgroup.controllers").exists() or (p / "cgroup.procs").exists() and _is_cgroup2(p):
            return p
    raise BpfError(errno.ENOENT, "no cgroup v2 mount found")


def _is_cgroup2(p: Path) -> bool:
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == str(p) and " - cgroup2 " in line for line in f)


# ------------------------------------------------------------------ libbpf via ctypes

_LIB: Any = None
_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return _LIBC


def lib() -> Any:
    global _LIB
    if _LIB is not None:
        return _LIB
    L = ctypes.CDLL("libbpf.so.1", use_errno=True)
    vp, cp, i, u = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "bpf_object__open_file": (vp, [cp, vp]),
        "bpf_object__load": (i, [vp]),
        "bpf_object__close": (None, [vp]),
        "bpf_object__find_map_by_name": (vp, [vp, cp]),
        "bpf_object__find_program_by_name": (vp, [vp, cp]),
        "bpf_map__set_pin_path": (i, [vp, cp]),
        "bpf_map__fd": (i, [vp]),
        "bpf_map__attach_struct_ops": (vp, [vp]),
        "bpf_program__fd": (i, [vp]),
        "bpf_link_create": (i, [i, i, u, vp]),
        "bpf_obj_pin": (i, [i, cp]),
        "bpf_obj_get": (i, [cp]),
        "bpf_map_update_elem": (i, [i, vp, vp, ctypes.c_uint64]),
        "bpf_map_lookup_elem": (i, [i, vp, vp]),
        "bpf_map_delete_elem": (i, [i, vp]),
        "bpf_map_get_next_key": (i, [i, vp, vp]),
        "libbpf_set_print": (vp, [vp]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(L, name)
        fn.restype = res
        fn.argtypes = args
    _LIB = L
    return L


def _check(rc: int, what: str) -> int:
    if rc < 0:
        e = -rc if rc != -1 else ctypes.get_errno()
        raise BpfError(e, f"{what}: {os.strerror(e)}")
    return rc


def _ptr(p: int | None, what: str) -> int:
    if not p:
        e = ctypes.get_errno() or errno.EINVAL
        raise BpfError(e, f"{what}: {os.strerror(e)}")
    return p


def _obj_get(path: Path) -> int:
    return _check(lib().bpf_obj_get(str(path).encode()), f"bpf_obj_get {path}")


def _patched_object(src: Path, old: bytes, new: str) -> Path:
    """Copy of ``src`` with the struct_ops ``.name`` field changed (char[16], NUL padded)."""
    data = src.read_bytes()
    field_old = old.ljust(16, b"\0")
    if data.count(field_old) != 1:
        raise BpfError(errno.EINVAL, f"{src}: cannot find the struct_ops name field {old!r}")
    fd, tmp = tempfile.mkstemp(suffix=".bpf.o", prefix="tcpctl-")
    with os.fdopen(fd, "wb") as f:
        f.write(data.replace(field_old, new.encode().ljust(16, b"\0")))
    return Path(tmp)


# ------------------------------------------------------------------ load / cleanup


@dataclass(frozen=True, slots=True)
class Loaded:
    run_id: str
    pin_dir: Path
    ctl_cc: str
    vegas_cc: str | None


def load(run_id: str, cgroup: Path | None = None, *, vegas: bool = True) -> Loaded:
    """Load and attach everything for one run; idempotent per run id is NOT guaranteed:
    call ``cleanup(run_id)`` first if a previous attempt failed half-way."""
    ensure_bpffs()
    L = lib()
    pin = run_dir(run_id)
    pin.mkdir(mode=0o700, parents=False, exist_ok=False)
    cc = ctl_cc_name(run_id)
    obj_path = _patched_object(TCPCTL_OBJ, CTL_NAME_IN_OBJ, cc)
    try:
        obj = _ptr(L.bpf_object__open_file(str(obj_path).encode(), None), f"open {TCPCTL_OBJ}")
        for m in ("tcpctl_netns", "tcpctl_ctl", "tcpctl_st", "mtctl"):
            mp = _ptr(L.bpf_object__find_map_by_name(obj, m.encode()), f"map {m}")
            _check(L.bpf_map__set_pin_path(mp, str(pin / m).encode()), f"pin path {m}")
        mp = _ptr(L.bpf_object__find_map_by_name(obj, b"cc_faults"), "map cc_faults")
        _check(L.bpf_map__set_pin_path(mp, str(pin / "mtctl_faults").encode()), "pin path mtctl_faults")
        _check(L.bpf_object__load(obj), f"load {TCPCTL_OBJ}")
        ops = L.bpf_object__find_map_by_name(obj, b"mtctl")
        _ptr(L.bpf_map__attach_struct_ops(ops), f"register congestion control {cc}")
        attach_sockops(obj, "tcpctl_sockops", cgroup, pin / "sockops_link")
        # The libbpf object (and its fds) stays open for the life of this process: closing it
        # would only drop fds, the pins and the registration keep everything alive.
    finally:
        obj_path.unlink(missing_ok=True)
    vegas_cc = register_vegas(run_id, pin) if vegas else None
    return Loaded(run_id, pin, cc, vegas_cc)


def attach_sockops(obj: int, prog_name: str, cgroup: Path | None, link_pin: Path) -> None:
    """Attach the loaded object's sock_ops program ``prog_name`` to ``cgroup`` (default: the
    cgroup v2 root) with a BPF link, pinned at ``link_pin`` (unpinning it detaches)."""
    L = lib()
    prog = _ptr(L.bpf_object__find_program_by_name(obj, prog_name.encode()), f"prog {prog_name}")
    cg = cgroup or cgroup2_root()
    cg_fd = os.open(cg, os.O_RDONLY | os.O_DIRECTORY)
    try:
        link = _check(
            L.bpf_link_create(L.bpf_program__fd(prog), cg_fd, BPF_CGROUP_SOCK_OPS, None),
            f"attach {prog_name} to {cg}",
        )
    finally:
        os.close(cg_fd)
    _check(L.bpf_obj_pin(link, str(link_pin).encode()), f"pin {link_pin.name}")
    os.close(link)


def register_vegas(run_id: str, pin: Path) -> str:
    """Register this run's Vegas as ``vegas_<runid>``; its struct_ops map is pinned under ``pin``.

    Per-run names instead of one shared ``tcp_vegas_bpf``: runs never share a registration, so a
    run's cleanup cannot unregister the Vegas of another run that is still starting flows.
    """
    name = vegas_cc_name(run_id)
    L = lib()
    obj_path = _patched_object(VEGAS_OBJ, VEGAS_NAME_IN_OBJ, name)
    try:
        obj = _ptr(L.bpf_object__open_file(str(obj_path).encode(), None), f"open {VEGAS_OBJ}")
        mp = _ptr(L.bpf_object__find_map_by_name(obj, b"vegas"), "map vegas")
        _check(L.bpf_map__set_pin_path(mp, str(pin / "vegas").encode()), "pin path vegas")
        fm = _ptr(L.bpf_object__find_map_by_name(obj, b"cc_faults"), "map cc_faults")
        _check(L.bpf_map__set_pin_path(fm, str(pin / "vegas_faults").encode()), "pin path vegas_faults")
        _check(L.bpf_object__load(obj), f"load {VEGAS_OBJ}")
        _ptr(L.bpf_map__attach_struct_ops(mp), f"register {name}")
    finally:
        obj_path.unlink(missing_ok=True)
    return name


def available_congestion_control() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


STRUCT_OPS_PINS = ("mtctl", "vegas")

#: The congestion controls' repair counters (``cc_faults`` in bpf/common.bpf.h), by pin name.
FAULT_PINS: Final = {"mtctl": "mtctl_faults", "vegas": "vegas_faults"}
#: Index in ``cc_faults`` -> what was out of range and put back.
FAULT_KINDS: Final = ("ssthresh", "cwnd")


def cc_faults(run_id: str) -> dict[str, dict[str, int]]:
    """Per congestion control of the run (``mtctl``, ``vegas``): how many times its state was out
    of range and repaired (ssthresh above 0x7fffffff, cwnd above 2^20; docs/tcpctl.md). Read
    before ``cleanup`` removes the pins; a control without a pinned counter is left out."""
    pin = run_dir(run_id)
    out: dict[str, dict[str, int]] = {}
    for cc, name in FAULT_PINS.items():
        if not (pin / name).exists():
            continue
        fd = _obj_get(pin / name)
        try:
            counts: dict[str, int] = {}
            for i, kind in enumerate(FAULT_KINDS):
                key, val = ctypes.c_uint32(i), ctypes.c_uint64(0)
                _check(lib().bpf_map_lookup_elem(fd, ctypes.byref(key), ctypes.byref(val)), f"read {name}")
                counts[kind] = int(val.value)
            out[cc] = counts
        finally:
            os.close(fd)
    return out


def cleanup(run_id: str) -> list[str]:
    """Undo ``load``: unregister the run's struct_ops, remove its pins (also after a SIGKILL).

    Removing the pinned sock_ops link detaches the program from the cgroup. A struct_ops
    congestion control stays registered until its map element is deleted, hence the explicit
    delete. Sockets still using it keep the code alive until they close.
    """
    pin = run_dir(run_id)
    done: list[str] = []
    if not pin.exists():
        return done
    L = lib()
    for name in STRUCT_OPS_PINS:
        p = pin / name
        if p.exists():
            fd = _obj_get(p)
            key = ctypes.c_int(0)
            rc = L.bpf_map_delete_elem(fd, ctypes.byref(key))
            os.close(fd)
            done.append(f"unregister {name} rc={rc}")
    shutil.rmtree(pin)
    done.append(f"rm -r {pin}")
    return done


def pinned_runs() -> list[str]:
    """Run ids with a pin directory ``/sys/fs/bpf/mt<runid>`` (leftovers included)."""
    if not BPFFS.is_dir():
        return []
    return sorted(p.name[2:] for p in BPFFS.iterdir() if p.is_dir() and p.name.startswith("mt"))


def registered_run_ccs() -> dict[str, list[str]]:
    """Congestion controls named like ours (``mtctl_<runid>``, ``vegas_<runid>``), by run id."""
    out: dict[str, list[str]] = {}
    for name in available_congestion_control():
        m = RUN_CC_RE.match(name)
        if m:
            out.setdefault(m.group(2), []).append(name)
    return out


def unregister_by_name(cc: str) -> bool:
    """Unregister a struct_ops congestion control whose pin is gone (``bpftool struct_ops``).

    ``bpftool struct_ops dump`` shows each registered map's value, whose ``.name`` is the
    congestion control name; the map is unregistered by id. Returns True if one was found.
    """
    import json
    import subprocess

    res = subprocess.run(["bpftool", "-j", "struct_ops", "dump"], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        return False
    try:
        data = json.loads(res.stdout)
    except ValueError:
        return False
    found = False
    map_id = None  # the dump alternates {"bpf_map_info": ...} and {"bpf_struct_ops_...": value}
    for item in data if isinstance(data, list) else [data]:
        if not isinstance(item, dict):
            continue
        if "bpf_map_info" in item:
            map_id = item["bpf_map_info"].get("id")
            continue
        ops = item.get("bpf_struct_ops_tcp_congestion_ops")
        value = ops.get("data", {}) if isinstance(ops, dict) else {}
        if map_id is not None and isinstance(value, dict) and value.get("name") == cc:
            r = subprocess.run(
                ["bpftool", "struct_ops", "unregister", "id", str(map_id)], capture_output=True
            )
            found = found or r.returncode == 0
    return found


# ------------------------------------------------------------------ maps


@dataclass(frozen=True, slots=True)
class ConnKey:
    """One TCP connection as the kernel of one station sees it (local first)."""

    netns: int
    saddr: bytes
    daddr: bytes
    sport: int
    dport: int

    def pack(self) -> bytes:
        return _KEY.pack(self.netns, self.saddr, self.daddr, self.sport, self.dport, 0)

    @classmethod
    def unpack(cls, b: bytes) -> ConnKey:
        n, s, d, sp, dp, _ = _KEY.unpack(b)
        return cls(n, s, d, sp, dp)

    def __str__(self) -> str:
        return f"{socket.inet_ntoa(self.saddr)}:{self.sport}->{socket.inet_ntoa(self.daddr)}:{self.dport}"


@dataclass(slots=True)
class Ctl:
    cmd_seq: int = 0
    cmd: int = 0
    arg_cwnd: int = 0
    arg_ssthresh: int = 0
    policy: int = POLICY_STANDARD
    abra_min_srtt_us: int = 100_000
    abra_max_srtt_us: int = 600_000
    flags: int = 0

    def pack(self) -> bytes:
        return _CTL.pack(
            self.cmd_seq,
            self.cmd,
            self.arg_cwnd,
            self.arg_ssthresh,
            self.policy,
            self.abra_min_srtt_us,
            self.abra_max_srtt_us,
            self.flags,
        )


def unpack_st(b: bytes) -> dict[str, Any]:
    v = _ST.unpack(b)
    n = len(_ST_SCALARS)
    d: dict[str, Any] = dict(zip(_ST_SCALARS, v[:n], strict=True))
    ts = v[n : n + RTO_LOG]
    rto = v[n + RTO_LOG : n + 2 * RTO_LOG]
    nxt = v[n + 2 * RTO_LOG : n + 3 * RTO_LOG]
    k = d["n_rto"]
    idx = [i % RTO_LOG for i in range(max(0, k - RTO_LOG), k)]
    d["rto_events"] = [{"t_ns": ts[i], "rto_us": rto[i], "next_cap_us": nxt[i]} for i in idx]
    d.update(zip(_ST_TAIL, v[n + 3 * RTO_LOG :], strict=True))
    return d


class Maps:
    """The run's pinned maps, opened by path (works from any process and network namespace)."""

    def __init__(self, run_id: str) -> None:
        pin = run_dir(run_id)
        self.netns_fd = _obj_get(pin / "tcpctl_netns")
        self.ctl_fd = _obj_get(pin / "tcpctl_ctl")
        self.st_fd = _obj_get(pin / "tcpctl_st")
        self._ctl: dict[ConnKey, Ctl] = {}

    def close(self) -> None:
        for fd in (self.netns_fd, self.ctl_fd, self.st_fd):
            os.close(fd)

    def register_netns(self, cookie: int, station: int) -> None:
        k, v = struct.pack("<Q", cookie), struct.pack("<I", station)
        rc = lib().bpf_map_update_elem(self.netns_fd, k, v, 0)
        if rc < 0 and (-rc if rc != -1 else ctypes.get_errno()) == errno.E2BIG:
            raise BpfError(
                errno.E2BIG,
                f"register netns of station {station}: the run's tcpctl_netns map is full "
                f"(at most {MAX_STATIONS} stations per run use the TCP control)",
            )
        _check(rc, f"register netns of station {station}")

    def ctl(self, key: ConnKey) -> Ctl:
        return self._ctl.setdefault(key, Ctl())

    def write_ctl(self, key: ConnKey, ctl: Ctl) -> None:
        self._ctl[key] = ctl
        _check(lib().bpf_map_update_elem(self.ctl_fd, key.pack(), ctl.pack(), 0), f"write ctl {key}")

    def command(self, key: ConnKey, cmd: int, cwnd: int = 0, ssthresh: int = 0) -> None:
        c = self.ctl(key)
        c.cmd_seq = (c.cmd_seq + 1) & 0xFFFFFFFF
        c.cmd, c.arg_cwnd, c.arg_ssthresh = cmd, cwnd, ssthresh
        self.write_ctl(key, c)

    def set_policy(
        self, key: ConnKey, policy: int, min_srtt_us: int = 100_000, max_srtt_us: int = 600_000
    ) -> None:
        c = self.ctl(key)
        c.policy, c.abra_min_srtt_us, c.abra_max_srtt_us = policy, min_srtt_us, max_srtt_us
        self.write_ctl(key, c)

    def state(self, key: ConnKey) -> dict[str, Any] | None:
        buf = ctypes.create_string_buffer(_ST.size)
        rc = lib().bpf_map_lookup_elem(self.st_fd, key.pack(), buf)
        if rc < 0:
            return None
        return unpack_st(buf.raw)

    def keys(self) -> list[ConnKey]:
        out: list[ConnKey] = []
        cur = ctypes.create_string_buffer(_KEY.size)
        nxt = ctypes.create_string_buffer(_KEY.size)
        prev: Any = None
        while lib().bpf_map_get_next_key(self.st_fd, prev, nxt) == 0:
            out.append(ConnKey.unpack(nxt.raw))
            ctypes.memmove(cur, nxt, _KEY.size)
            prev = cur
        return out


def main(argv: list[str] | None = None) -> int:
    """``python -m nodes.tcpctl.kernel load|cleanup RUNID`` (for the orchestrator and by hand)."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m nodes.tcpctl.kernel")
    ap.add_argument("op", choices=["load", "cleanup", "dump"])
    ap.add_argument("run_id")
    ap.add_argument("--cgroup", type=Path)
    a = ap.parse_args(argv)
    if a.op == "load":
        r = load(a.run_id, a.cgroup)
        print(json.dumps({"pin_dir": str(r.pin_dir), "ctl_cc": r.ctl_cc, "vegas_cc": r.vegas_cc}))
    elif a.op == "cleanup":
        print("\n".join(cleanup(a.run_id)))
    else:
        m = Maps(a.run_id)
        for k in m.keys():
            print(k, json.dumps(m.state(k)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
