"""tshark decodes our AODV messages as AODV: scapy-built ones and the bytes of a simulated run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.utils import wrpcap

from nodes.core.clock import NS_PER_S
from nodes.core.protocol import NodeContext
from nodes.core.sim import SimNetwork
from nodes.formats.aodv import AODVRerr, AODVRrep, AODVRrepAck, AODVRreq, AODVUnreachable
from nodes.protocols.aodv import AodvRouting, create

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def tshark(path: Path, *args: str) -> str:
    out = subprocess.run(
        ["tshark", "-r", str(path), *args], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout


def test_tshark_decodes_each_message(tmp_path: Path) -> None:
    msgs = [
        AODVRreq(flags="GU", hop_count=3, rreq_id=77, dest_ip="10.0.0.5", orig_ip="10.0.0.1", orig_seq_no=9),
        AODVRrep(
            flags="A", hop_count=2, dest_ip="10.0.0.5", dest_seq_no=7, orig_ip="10.0.0.1", lifetime=11200
        ),
        AODVRerr(flags="N", unreachable=[AODVUnreachable(dest_ip="10.0.0.5", dest_seq_no=8)]),
        AODVRrepAck(),
    ]
    pcap = tmp_path / "aodv.pcap"
    wrpcap(str(pcap), [IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / m for m in msgs])
    verbose = tshark(pcap, "-V")
    assert verbose.count("Ad hoc On-demand Distance Vector") == 4
    fields = tshark(
        pcap,
        "-T",
        "fields",
        "-E",
        "separator=,",
        "-e",
        "aodv.type",
        "-e",
        "aodv.flags.rreq_gratuitous",
        "-e",
        "aodv.flags.rreq_unknown",
        "-e",
        "aodv.flags.rreq_join",
        "-e",
        "aodv.flags.rrep_ack",
        "-e",
        "aodv.flags.rerr_nodelete",
        "-e",
        "aodv.hopcount",
        "-e",
        "aodv.rreq_id",
        "-e",
        "aodv.lifetime",
        "-e",
        "aodv.unreach_dest_ip",
    ).splitlines()
    rreq, rrep, rerr, ack = (line.split(",") for line in fields)
    assert (
        rreq[0] == "1" and rreq[1] in ("1", "True") and rreq[2] in ("1", "True") and rreq[3] in ("0", "False")
    )
    assert rreq[6] == "3" and rreq[7] == "77"
    assert rrep[0] == "2" and rrep[4] in ("1", "True") and rrep[8] == "11200"
    assert rerr[0] == "3" and rerr[5] in ("1", "True") and rerr[9] == "10.0.0.5"
    assert ack[0] == "4"


def test_tshark_decodes_a_simulated_run(tmp_path: Path) -> None:
    def make(ctx: NodeContext) -> AodvRouting:
        return create(ctx, {"name": "aodv", "params": {}})

    net = SimNetwork(5, make, [(1, 2), (2, 3), (3, 4), (4, 5)])
    net.inject(1, bytes(IP(src="10.0.0.1", dst="10.0.0.5") / UDP(sport=1, dport=2) / b"x"))
    net.at(NS_PER_S, lambda: net.link_down(3, 4))
    net.inject(1, bytes(IP(src="10.0.0.1", dst="10.0.0.5") / UDP(sport=1, dport=2) / b"y"), at_ns=NS_PER_S)
    net.run_until(3 * NS_PER_S)
    aodv = [t.packet for t in net.trace if t.packet[9] == 17 and t.packet[22:24] == b"\x02\x8e"]
    pcap = tmp_path / "run.pcap"
    wrpcap(str(pcap), [IP(p) for p in aodv])
    types = tshark(pcap, "-T", "fields", "-e", "aodv.type").split()
    assert len(types) == len(aodv) > 0
    assert {"1", "2", "3"} <= set(types)  # RREQ, RREP and the RERR after the break
    assert "Malformed" not in tshark(pcap, "-V")
    assert "Bad" not in tshark(pcap, "-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-V")
