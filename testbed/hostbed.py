"""A bed of SSH "hosts" on this machine, for multi-host sweeps (issue 17, item 1).

``python -m testbed.hostbed up [--hosts 3]`` (or ``HostBed`` in the tests and the benchmark)
makes N hosts, each a network namespace ``mt<runid>-h<i>`` with its own address on a bridge
``mt<runid>-br`` in the root namespace (198.18.X.0/24, RFC 2544's benchmarking range; the bridge
is the controller's address ``198.18.X.1``), its own ``sshd`` listening only on the host's address
inside its namespace (key authentication only, with a key the bed generates; host keys, config
and ``known_hosts`` in the bed's folder), and its own install directory
(``<bed>/h<i>/manet-testbed``, filled by ``playbooks/provision.yml``). ``inventory()`` writes an
Ansible inventory for them, so the playbooks run over real SSH exactly as against remote machines.

The hosts share this machine's kernel, filesystem and cores: an install directory is only a
separate path, and runs on three hosts still share the two cores.

Everything carries the run-id prefix and the bed is a run of the registry (``/run/manet/<runid>/``,
its folder the bed's folder, its sshd processes registered), so ``make clean`` removes what a
SIGKILLed bed left: processes in its namespaces, the namespaces, the bridge and veths, the folder.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

from testbed import netns, procs
from testbed.naming import new_run_id, prefix, run_dir
from testbed.registry import Registry

SSHD: Final = "/usr/sbin/sshd"
#: The bed's subnets: 198.18.0.0/15 is set aside for benchmarking (RFC 2544, appendix C.2.2).
SUBNET_BASE: Final = "198.18"
#: Host i has address .(HOST_OFFSET + i); the bridge (the controller) has .1.
HOST_OFFSET: Final = 10
SSH_PORT: Final = 22


class HostBedError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class BedHost:
    """One host of the bed."""

    name: str  # h1, h2, ...
    netns: str  # mt<runid>-h<i>
    address: str
    dest: Path  # its install directory


@dataclass
class HostBed:
    """N hosts on a bridge, each with its own sshd. ``up()`` / ``down()`` or a ``with`` block."""

    count: int = 3
    run_id: str = field(default_factory=new_run_id)
    hosts: list[BedHost] = field(default_factory=list)
    registry: Registry | None = None
    sshd: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    subnet: str = ""

    @property
    def dir(self) -> Path:
        return run_dir(self.run_id)

    @property
    def bridge(self) -> str:
        return f"{prefix(self.run_id)}-br"

    @property
    def controller_address(self) -> str:
        return f"{self.subnet}.1"

    @property
    def key(self) -> Path:
        """The client key every host accepts."""
        return self.dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    def __enter__(self) -> HostBed:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # ------------------------------------------------------------------------------- up

    def _free_subnet(self) -> str:
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=False).stdout
        start = int(self.run_id[:2], 16)
        for k in range(256):
            third = (start + k) % 254 + 1
            candidate = f"{SUBNET_BASE}.{third}"
            if f" {candidate}." not in used:
                return candidate
        raise HostBedError("no free /24 in 198.18.0.0/16 for the host bed")

    def up(self) -> None:
        self.registry = Registry.create(self.run_id)
        self.subnet = self._free_subnet()
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.controller_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        _run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                f"hostbed-{self.run_id}",
                "-f",
                str(self.key),
            ]
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        known: list[str] = []
        for i in range(1, self.count + 1):
            host = self._add_host(i)
            self.hosts.append(host)
            pub = (self.dir / host.name / "ssh_host_ed25519_key.pub").read_text().split()
            known.append(f"{host.address} {pub[0]} {pub[1]}\n")
        self.known_hosts.write_text("".join(known))
        for host in self.hosts:
            self._wait_ssh(host)

    def _add_host(self, i: int) -> BedHost:
        assert self.registry is not None
        name = f"h{i}"
        ns = f"{prefix(self.run_id)}-{name}"
        veth = f"{prefix(self.run_id)}-{name}"  # root side; the host side is eth0 in its namespace
        address = f"{self.subnet}.{HOST_OFFSET + i}"
        hdir = self.dir / name
        hdir.mkdir(mode=0o755)
        self.registry.add_namespaces([ns])
        _ip("netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", self.bridge, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "route", "add", "default", "via", self.controller_address)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hdir / "ssh_host_ed25519_key")])
        (hdir / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        cfg = hdir / "sshd_config"
        cfg.write_text(
            "\n".join(
                [
                    f"ListenAddress {address}:{SSH_PORT}",
                    f"HostKey {hdir / 'ssh_host_ed25519_key'}",
                    f"PidFile {hdir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {hdir / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "MaxStartups 50:30:100",
                    "Subsystem sftp internal-sftp",
                    "",
                ]
            )
        )
        log = open(hdir / "sshd.log", "ab")  # noqa: SIM115 - the sshd's for its lifetime
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", str(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.sshd[name] = proc
        self.registry.add_process(proc.pid, f"sshd-{name}", ns)
        return BedHost(name, ns, address, hdir / "manet-testbed")

    def _wait_ssh(self, host: BedHost, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with socket.create_connection((host.address, SSH_PORT), timeout=1.0) as sock:
                    if sock.recv(4).startswith(b"SSH-"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise HostBedError(
                    f"host {host.name}: sshd on {host.address}:{SSH_PORT} did not answer in {timeout_s:.0f} s "
                    f"(log: {self.dir / host.name / 'sshd.log'})"
                )
            time.sleep(0.1)

    # ------------------------------------------------------------------------------- use

    def ssh(self, host: BedHost, command: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on ``host`` over SSH, as Ansible does."""
        return subprocess.run(
            ["ssh", *self.ssh_options(), f"root@{host.address}", command],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def ssh_options(self, key: Path | None = None) -> list[str]:
        return [
            "-i",
            str(key or self.key),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=5",
        ]

    def inventory(
        self,
        path: Path,
        hosts: list[BedHost] | None = None,
        extra_hosts: dict[str, dict[str, object]] | None = None,
        host_vars: dict[str, object] | None = None,
    ) -> Path:
        """An Ansible inventory for ``hosts`` (default all) in group ``testbed_hosts``, plus
        ``extra_hosts`` (name -> its variables, e.g. an address nothing answers on). Every host
        gets ``host_vars`` and its own ``manet_dest``: host variables, which win over the
        playbooks' group_vars. The controller's plays take their settings from ``-e``."""
        common: dict[str, object] = {
            "ansible_user": "root",
            "ansible_become": False,  # root already; the hosts need no sudo
            "ansible_ssh_private_key_file": str(self.key),
            "ansible_ssh_common_args": " ".join(self.ssh_options()[2:]),
            # Debian's Python, as on a remote Debian host (the apt module needs python3-apt)
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        entries: dict[str, dict[str, object]] = {}
        for h in hosts if hosts is not None else self.hosts:
            entries[h.name] = {
                **common,
                **(host_vars or {}),
                "ansible_host": h.address,
                "manet_dest": str(h.dest),
                "testbed_common_host_bundle_dir": str(h.dest.parent),
            }
        for name, hv in (extra_hosts or {}).items():
            entries[name] = {**common, **(host_vars or {}), **hv}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"testbed_hosts": {"hosts": entries}}, sort_keys=False))
        return path

    def shared_machine_vars(self, parallel: int = 1) -> dict[str, object]:
        """Host variables for hosts that share this machine: its Python and packages (no venv,
        no apt update: nothing to download), the medium built here (``MANET_MEDIUM``; a cargo build
        per host would take minutes), one run at a time (the hosts share the cores)."""
        from testbed.medium import MEDIUM_BIN

        return {
            "manet_python": sys.executable,
            "testbed_common_venv": "",
            "testbed_common_pip": str(Path(sys.executable).parent / "pip3"),
            "testbed_common_apt_update": False,
            "testbed_common_medium_build": False,
            "testbed_common_bundle_dir": str(self.dir),
            "testbed_sweep_environment": {"MANET_MEDIUM": str(MEDIUM_BIN.resolve())},
            "testbed_sweep_parallel": parallel,
        }

    def kill(self, host: BedHost) -> list[int]:
        """The host disappears: SIGKILL every process in its namespace (its sshd, its worker and
        its runs' processes there), then remove the namespace. Returns the pids killed."""
        pids = netns.pids_in([host.netns]).get(host.netns, [])
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        netns.delete([host.netns])
        return sorted(pids)

    # ------------------------------------------------------------------------------- down

    def down(self) -> None:
        from testbed.cleanup import clean_run

        if self.registry is None:
            return
        clean_run(self.registry, own_run=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        for host in self.hosts:
            subprocess.run(
                ["ip", "link", "del", f"{prefix(self.run_id)}-{host.name}"], capture_output=True, check=False
            )
        for proc in self.sshd.values():
            if proc.poll() is None:
                procs.terminate({proc.pid: procs.start_time(proc.pid)}, timeout_s=2.0)
            proc.wait(timeout=5)
        self.registry = None


def _ip(*args: str) -> None:
    _run(["ip", *args])


def _run(argv: list[str]) -> None:
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise HostBedError(f"{' '.join(argv)}: {res.stderr.strip() or f'exit {res.returncode}'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.hostbed", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["up"], help="up: make the bed, print its inventory, wait for Ctrl-C")
    ap.add_argument("--hosts", type=int, default=3, help="how many hosts (default 3)")
    ap.add_argument(
        "--inventory", default=None, help="write the Ansible inventory here (default: the bed's folder)"
    )
    args = ap.parse_args(argv)
    bed = HostBed(args.hosts)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        bed.up()
        inv = bed.inventory(
            Path(args.inventory) if args.inventory else bed.dir / "hosts.yml",
            host_vars=bed.shared_machine_vars(),
        )
        for h in bed.hosts:
            print(f"{h.name} {h.address} ns {h.netns} dest {h.dest}")
        print(f"controller {bed.controller_address}; inventory {inv}; Ctrl-C removes the bed", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    except HostBedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        bed.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
