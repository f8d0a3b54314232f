"""Klemm 2004's GDWN message: an AODV RERR with our 'G' flag (the bit after 'N', reserved in RFC
3561 section 5.3; docs/extensions-aodv.md). Scapy layer and struct codec against literal bytes,
and back; a core without the GDWN extension changes no route on it."""

from __future__ import annotations

import random

import pytest
from scapy.compat import raw
from scapy.layers.inet import IP, UDP

from nodes.core.events import FromAir
from nodes.core.protocol import NodeContext
from nodes.formats.aodv import AODV, AODVRerr, AODVUnreachable
from nodes.protocols.aodv import Rerr, create, decode
from nodes.protocols.aodv.route_table import RouteEntry, RouteState
from nodes.protocols.aodv.wire import build

A2, A5, A6 = 0x0A000002, 0x0A000005, 0x0A000006
# |Type=3|N|G| Reserved (14) |DestCount| (Unreachable IP, Unreachable Seq) * DestCount
GDWN_BYTES = bytes.fromhex("03 40 00 02  0a000005 00000008  0a000006 00000009")
GDWN_N_BYTES = bytes.fromhex("03 c0 00 01  0a000005 00000008")


@pytest.mark.parametrize(
    ("wire", "layer", "msg"),
    [
        (
            GDWN_BYTES,
            AODVRerr(
                flags="G",
                unreachable=[
                    AODVUnreachable(dest_ip="10.0.0.5", dest_seq_no=8),
                    AODVUnreachable(dest_ip="10.0.0.6", dest_seq_no=9),
                ],
            ),
            Rerr(((A5, 8), (A6, 9)), going_down=True),
        ),
        (
            GDWN_N_BYTES,
            AODVRerr(flags="NG", unreachable=[AODVUnreachable(dest_ip="10.0.0.5", dest_seq_no=8)]),
            Rerr(((A5, 8),), no_delete=True, going_down=True),
        ),
    ],
)
def test_gdwn_rerr_bytes(wire: bytes, layer: AODVRerr, msg: Rerr) -> None:
    assert raw(layer) == wire
    assert msg.encode() == wire
    assert decode(wire) == msg
    d = AODV(wire)
    assert isinstance(d, AODVRerr)
    assert (
        d.flags.G and d.flags.N == msg.no_delete and d.reserved == 0 and d.dest_count == len(msg.unreachable)
    )
    pkt = IP(build(A2, A5, 1, wire, 7))
    assert isinstance(pkt[UDP].payload, AODVRerr) and pkt[UDP].payload.flags.G


def test_plain_rerr_has_no_g() -> None:
    assert not decode(Rerr(((A5, 8),)).encode()).going_down  # type: ignore[union-attr]
    assert not AODV(Rerr(((A5, 8),)).encode()).flags.G


def test_core_ignores_a_gdwn_rerr_without_the_extension() -> None:
    ctx = NodeContext(station=1, n_stations=10, rng=random.Random(1))
    core = create(ctx, {"name": "aodv"})
    core.table.add(RouteEntry(5, 2, 2, 7, True, 10**10))
    core.on_event(FromAir(build(A2, 0x0A000001, 1, GDWN_BYTES, 1), 2, 1), 10**6)
    e = core.table.lookup(5, 10**6)
    assert e is not None and e.state is RouteState.VALID
    assert ctx.counters.routing_received["rerr"] == 1
