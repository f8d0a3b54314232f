"""The run's pinned tcpctl maps and commands on real BPF (root only): the papers' largest fields; which
restore caps the RTO."""

from __future__ import annotations

import ctypes
import errno
import json
import multiprocessing
import os
import socket
import subprocess
import time
from typing import Any

import pytest

from nodes.tcpctl import kernel as K
from nodes.tcpctl.nsutil import CLONE_NEWNET
from tests.netns.stack_run import skip_without_stack


@pytest.fixture(autouse=True)
def _skip_without_prereq() -> None:
    skip_without_stack()


def test_netns_map_takes_a_100_station_run_and_names_its_limit() -> None:
    """Cohen's and Yu's 100-station fields register every station's netns (the map held 64 before:
    station 65 of a Cohen run with route control failed with E2BIG); one past the limit is a clear
    error naming the station and the limit."""
    run_id = f"t{os.getpid() % 100000:05d}"
    K.cleanup(run_id)
    K.load(run_id, vegas=False)
    try:
        maps = K.Maps(run_id)
        try:
            for station in range(1, K.MAX_STATIONS + 1):
                maps.register_netns(cookie=10**9 + station, station=station)
            with pytest.raises(K.BpfError) as e:
                maps.register_netns(cookie=10**9 + K.MAX_STATIONS + 1, station=K.MAX_STATIONS + 1)
            assert e.value.errno == errno.E2BIG
            assert f"station {K.MAX_STATIONS + 1}" in str(e.value)
            assert f"at most {K.MAX_STATIONS} stations" in str(e.value)
        finally:
            maps.close()
    finally:
        K.cleanup(run_id)
    assert not K.run_dir(run_id).exists()


def _restore_commands_in_own_netns(run_id: str, out: Any) -> None:
    """Child process: a loopback TCP connection on the run's congestion control in a new network
    namespace; snapshot, then each restore command, and the RTO cap (``rto_max_ms``, ``rto_hold``)
    it leaves. Writes ``{step: state}`` as JSON to the pipe ``out``."""
    res: dict[str, Any] = {}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        maps = K.Maps(run_id)
        cookie = K.netns_cookie_of_current()
        maps.register_netns(cookie, station=1)
        srv = socket.create_server(("127.0.0.1", 0))
        cli = socket.socket()
        cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, K.ctl_cc_name(run_id).encode())
        cli.connect(srv.getsockname())
        peer, _ = srv.accept()
        sport, dport = cli.getsockname()[1], srv.getsockname()[1]
        key = K.ConnKey(cookie, socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"), sport, dport)

        def step(name: str, cmd: int) -> None:
            maps.command(key, cmd)
            want = maps.ctl(key).cmd_seq
            for _ in range(200):  # the command runs at the next ACK the kernel processes
                cli.sendall(b"x" * 1000)
                peer.recv(65536)
                time.sleep(0.005)
                st = maps.state(key)
                if st is not None and st["cmd_done"] == want:
                    res[name] = {k: st[k] for k in ("rto_hold", "rto_max_ms", "frz_rto_us", "setsockopt_err")}
                    return
            res[name] = None

        step("snapshot", K.CMD_SNAPSHOT)
        step("restore_cwnd", K.CMD_RESTORE_CWND)
        step("restore_old", K.CMD_RESTORE_OLD)
        step("snapshot_again", K.CMD_SNAPSHOT)
        for s in (cli, peer, srv):
            s.close()
        maps.close()
    except BaseException as exc:  # reported to the parent
        res["error"] = f"{type(exc).__name__}: {exc}"
    out.send(json.dumps(res))


def test_only_elfns_thaw_caps_the_rto_and_the_next_command_lifts_it() -> None:
    """The thaw's restore=old caps the RTO (TCP_RTO_MAX_MS) at the freeze's; ATCP's loss exit
    (CMD_RESTORE_CWND) must not: the cap also bounds the kernel's zero-window probing, and with it
    ATCP connections in persist died (ETIMEDOUT, Liu partition runs of 27 Nov 2026). The next
    command lifts it (docs/tcpctl.md, "Thaw")."""
    run_id = f"t{(os.getpid() + 7) % 100000:05d}"
    K.cleanup(run_id)
    K.load(run_id, vegas=False)
    try:
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_restore_commands_in_own_netns, args=(run_id, send))
        p.start()
        assert recv.poll(60), "no answer from the child"
        res = json.loads(recv.recv())
        p.join(10)
    finally:
        K.cleanup(run_id)
    assert "error" not in res, res
    assert all(res[s] is not None for s in ("snapshot", "restore_cwnd", "restore_old", "snapshot_again")), res
    assert res["restore_cwnd"]["rto_hold"] == 0 and res["restore_cwnd"]["rto_max_ms"] in (0, 120_000), res
    cap = max(1000, (res["restore_old"]["frz_rto_us"] + 999) // 1000)
    assert res["restore_old"]["rto_hold"] == 2 and res["restore_old"]["rto_max_ms"] == cap, res
    assert res["snapshot_again"]["rto_hold"] == 0 and res["snapshot_again"]["rto_max_ms"] == 120_000, res
    assert all(res[s]["setsockopt_err"] == 0 for s in res), res
