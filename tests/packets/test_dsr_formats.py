"""DSR options header (RFC 4728 section 6): each option built to literal bytes and dissected
back, the router's codec and raw-bytes source-route code (srcroute) byte for byte against the scapy layers, unknown and
truncated options, and tshark decoding a pcap of a virtual-time run as DSR."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from nodes.core import NS_PER_S, NodeContext
from nodes.core.addr import station_ip
from nodes.core.events import FromAir
from nodes.core.sim import SimNetwork
from nodes.formats.dsr import (
    DSR,
    DSROptAck,
    DSROptAckRequest,
    DSROptPad1,
    DSROptPadN,
    DSROptRouteError,
    DSROptRouteReply,
    DSROptRouteRequest,
    DSROptSourceRoute,
    DSROptUnknown,
)
from nodes.protocols.dsr import DsrParams, DsrRouting, create, srcroute
from nodes.protocols.dsr.options import (
    Ack,
    AckRequest,
    MalformedDsr,
    Pad1,
    PadN,
    RawOption,
    RouteError,
    RouteReply,
    RouteRequest,
    SourceRoute,
    build,
    decode_options,
    parse,
)


def standalone_core(station: int) -> DsrRouting:
    return DsrRouting(NodeContext(station=station, n_stations=8, rng=random.Random(1)), DsrParams())


def chain_run() -> list[bytes]:
    """Every frame of a 5-station chain discovering a route and carrying one UDP packet."""
    net = SimNetwork.chain(5, lambda ctx: create(ctx, {"name": "dsr", "params": {}}))
    net.inject(1, bytes(IP(src=station_ip(1), dst=station_ip(5)) / UDP(sport=1, dport=2) / Raw(b"hi")))
    net.run_until(NS_PER_S)
    return [t.packet for t in net.trace]


A1, A2, A3, A4 = (station_ip(i) for i in (1, 2, 3, 4))

# (scapy layer, codec object, literal bytes (RFC 4728 section 6 layouts, hand-assembled))
OPTIONS: list[tuple[Any, Any, str]] = [
    (
        DSROptRouteRequest(id=0x1234, target=A4, addresses=[A2, A3]),
        RouteRequest(0x1234, 4, (2, 3)),
        "010e12340a0000040a0000020a000003",
    ),
    (DSROptRouteRequest(id=1, target=A4), RouteRequest(1, 4, ()), "010600010a000004"),
    (DSROptRouteReply(addresses=[A2, A3, A4]), RouteReply((2, 3, 4)), "020d000a0000020a0000030a000004"),
    (DSROptRouteReply(L=1, addresses=[A4]), RouteReply((4,), last_hop_external=True), "0205800a000004"),
    (
        DSROptRouteError(err_src=A3, err_dst=A1, unreachable=A4, salvage=2),
        RouteError(3, 1, 4, salvage=2),
        "030e01020a0000030a0000010a000004",
    ),
    (
        DSROptRouteError(err_type=3, err_src=A3, err_dst=A1, unsupported_opt=0x99),
        RouteError(3, 1, None, err_type=3, unsupported_opt=0x99),
        "030b03000a0000030a00000199",
    ),
    (
        DSROptRouteError(err_type=2, err_src=A3, err_dst=A1),
        RouteError(3, 1, None, err_type=2),
        "030a02000a0000030a000001",
    ),
    (DSROptAckRequest(id=0xBEEF), AckRequest(0xBEEF), "a002beef"),
    (DSROptAck(id=7, ack_src=A2, ack_dst=A1), Ack(7, 2, 1), "200a00070a0000020a000001"),
    (
        DSROptSourceRoute(addresses=[A2, A3], segs_left=2, salvage=0),
        SourceRoute((2, 3), 2),
        "600a00020a0000020a000003",
    ),
    (
        DSROptSourceRoute(F=1, L=1, addresses=[A2], segs_left=1, salvage=15),
        SourceRoute((2,), 1, 15, True, True),
        "6006c3c10a000002",
    ),
    (DSROptSourceRoute(addresses=[], segs_left=0), SourceRoute((), 0), "60020000"),
    (DSROptPad1(), Pad1(), "e0"),
    (DSROptPadN(padding=b"\0\0\0"), PadN(3), "0003000000"),
    (DSROptUnknown(type=17, data=b"\x01\x02"), RawOption(17, b"\x01\x02"), "11020102"),
]


@pytest.mark.parametrize(("layer", "obj", "literal"), OPTIONS)
def test_option_literal_bytes_and_back(layer: Any, obj: Any, literal: str) -> None:
    want = bytes.fromhex(literal)
    assert bytes(layer) == want
    assert obj.encode() == want
    assert decode_options(want) == [obj]
    hdr = DSR(bytes(DSR(options=[layer])))
    assert hdr.plen == len(want)
    back = hdr.options[0]
    assert type(back) is type(layer)
    for f in layer.fields:
        assert back.getfieldval(f) == layer.getfieldval(f), f


def test_header_and_whole_packet_match_scapy() -> None:
    opts = [SourceRoute((2,), 1), RouteError(3, 1, 4, salvage=1), Pad1(), RouteReply((2, 3))]
    ours = build(3, 1, opts, ttl=64)
    theirs = IP(src=A3, dst=A1, ttl=64, id=0, flags=0) / DSR(
        options=[
            DSROptSourceRoute(addresses=[A2], segs_left=1),
            DSROptRouteError(err_src=A3, err_dst=A1, unreachable=A4, salvage=1),
            DSROptPad1(),
            DSROptRouteReply(addresses=[A2, A3]),
        ]
    )
    assert ours == bytes(theirs)
    dp = parse(ours)
    assert (dp.src, dp.dst, dp.next_header, dp.options) == (3, 1, 59, opts)
    rreq = build(1, None, [RouteRequest(9, 4, ())], ttl=1)
    assert rreq == bytes(
        IP(src=A1, dst="255.255.255.255", ttl=1, id=0, flags=0)
        / DSR(options=[DSROptRouteRequest(id=9, target=A4)])
    )
    assert parse(rreq).dst is None


def inner_udp(ttl: int = 64) -> bytes:
    return bytes(IP(src=A1, dst=A4, ttl=ttl, id=77) / UDP(sport=1000, dport=2000) / Raw(b"payload!"))


@pytest.mark.parametrize("route", [(), (2,), (2, 3), tuple(range(2, 40))])
def test_srcroute_add_strip_match_scapy(route: tuple[int, ...]) -> None:
    inner = inner_udp()
    ours = srcroute.add_source_route(inner, route)
    ip = IP(inner)
    theirs = (
        IP(src=A1, dst=A4, ttl=64, id=77, flags=ip.flags)
        / DSR(
            nh=17, options=[DSROptSourceRoute(addresses=[station_ip(a) for a in route], segs_left=len(route))]
        )
        / Raw(bytes(ip.payload))
    )
    assert ours == bytes(theirs)
    assert IP(ours)[DSR].nh == 17 and IP(ours).haslayer(UDP)
    assert srcroute.strip(ours) == inner


def test_srcroute_advance_and_salvage_rewrite_match_scapy() -> None:
    pkt = srcroute.add_source_route(inner_udp(), (2, 3))
    buf = bytearray(pkt)
    off = srcroute.find_source_route(buf, 20)
    assert off == 24
    srcroute.advance(buf, off)
    assert srcroute.route_of(buf, off) == ((2, 3), 1, 0)
    salv = srcroute.replace_source_route(bytes(buf), off, srcroute.source_route_bytes((3, 5, 6), 2, 1))
    want = (
        IP(src=A1, dst=A4, ttl=64, id=77)
        / DSR(
            nh=17,
            options=[DSROptSourceRoute(addresses=[A3, station_ip(5), station_ip(6)], segs_left=2, salvage=1)],
        )
        / Raw(bytes(IP(inner_udp()).payload))
    )
    assert salv == bytes(want)
    assert IP(salv).chksum == IP(bytes(want)).chksum


def test_unknown_option_kept_or_dropped_by_its_type_bits() -> None:
    # 0x11 (conn_list number, & 0x60 == 0): skipped, the packet is forwarded with it
    c = standalone_core(2)
    pkt = build(1, 3, [RawOption(0x11, b"ab"), SourceRoute((2,), 1)], next_header=17, payload=b"\0" * 8)
    acts = c.on_event(FromAir(pkt, 1, 2), 0)
    assert [type(a).__name__ for a in acts] == ["Send"]
    assert c.ctx.counters.extra["unknown_option"] == 1
    # 0x7f (& 0x60 == 0x60): the packet MUST be dropped (section 8.1.6)
    pkt = build(1, 3, [RawOption(0x7F, b"ab"), SourceRoute((2,), 1)], next_header=17, payload=b"\0" * 8)
    acts = c.on_event(FromAir(pkt, 1, 2), 0)
    assert [(type(a).__name__, getattr(a, "reason", "")) for a in acts] == [("Drop", "unknown_option")]


@pytest.mark.parametrize("cut", [21, 23, 25, 27, 30, 35])
def test_truncated_packets_are_counted_not_raised(cut: int) -> None:
    full = build(1, 3, [SourceRoute((2,), 1), RouteError(1, 3, 2)], next_header=59)
    bad = bytearray(full[:cut])
    bad[2:4] = struct.pack("!H", len(bad))  # a consistent IP total length, truncated DSR inside
    with pytest.raises(MalformedDsr):
        parse(bytes(bad))
    c = standalone_core(2)
    acts = c.on_event(FromAir(bytes(bad), 1, 2), 0)
    assert [(type(a).__name__, getattr(a, "reason", "")) for a in acts] == [("Drop", "malformed")]
    assert sum(c.ctx.counters.malformed.values()) == 1
    IP(bytes(bad))  # scapy dissects it without raising


def test_tshark_decodes_a_run_as_dsr(tmp_path: Path) -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    trace = chain_run()
    frames = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(p) for p in trace]
    pcap = tmp_path / "dsr.pcap"
    wrpcap(str(pcap), frames)
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-V"], capture_output=True, text=True, timeout=60, check=True
    )
    text = out.stdout
    assert text.count("Dynamic Source Routing") >= len(frames)
    for label in ("Route Request", "Route Reply", "Source Route"):
        assert label.lower() in text.lower(), label
    assert "Malformed" not in text
    fields = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "dsr.option.srcrt.segsleft", "-Y", "udp"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert fields == ["3", "2", "1", "0"]


def test_tshark_decodes_route_error(tmp_path: Path) -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    pkt = build(3, 1, [SourceRoute((2,), 1), RouteError(3, 1, 4, salvage=1)])
    pcap = tmp_path / "rerr.pcap"
    wrpcap(str(pcap), [Ether() / IP(pkt)])
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(pcap),
            "-T",
            "fields",
            "-e",
            "dsr.option.err.unreachablenode",
            "-e",
            "dsr.option.err.salvage",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == ["10.0.0.4", "1"] or out == ["10.0.0.4", "0x01"]
