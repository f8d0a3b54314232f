"""Yu 2004 extension options in DSR: DSR-Update's cache update notification (type 18) and
EPLN/BEAD's conn_list (type 17): literal bytes, the scapy layer and the router codec agree, and
back; bytes that are not such an option stay a raw option (carried unchanged)."""

from __future__ import annotations

from scapy.layers.inet import IP

from nodes.extensions.dsr_update import OPT_CACHE_UPDATE, CacheUpdateOption
from nodes.extensions.epln import ConnInfo, ConnListOption
from nodes.formats.dsr import (
    DSR,
    DSRConnInfo,
    DSRConnSeq,
    DSROptCacheUpdate,
    DSROptConnList,
    DSROptRouteError,
    DSROptSourceRoute,
    DSROptUnknown,
)
from nodes.protocols.dsr.options import (
    DsrOption,
    RawOption,
    RouteError,
    SourceRoute,
    build,
    decode_options,
    parse,
)

CACHE_UPDATE = bytes.fromhex("12 08 0a000002 0a000003")
CONN_LIST = bytes.fromhex("11 13 0a000001 0a000004 9c40 1451 00 01 01020304 01")
CONN_LIST_ACK = bytes.fromhex("11 18 0a000004 0a000001 1451 9c40 c0 02 00000064 01 000000c8 01")


def test_cache_update_literal_bytes_and_back() -> None:
    opt = CacheUpdateOption(2, 3)
    assert OPT_CACHE_UPDATE == 18 and 18 & 0x80 == 0 and 18 & 0x60 == 0
    assert opt.encode() == CACHE_UPDATE
    assert bytes(DSROptCacheUpdate(link_from="10.0.0.2", link_to="10.0.0.3")) == CACHE_UPDATE
    assert decode_options(CACHE_UPDATE) == [opt]
    back = DSROptCacheUpdate(CACHE_UPDATE)
    assert (back.type, back.len, back.link_from, back.link_to) == (18, 8, "10.0.0.2", "10.0.0.3")


def test_cache_update_in_a_route_error_packet() -> None:
    opts: list[DsrOption] = [SourceRoute((), 0), RouteError(2, 4, unreachable=3), CacheUpdateOption(2, 3)]
    pkt = build(2, 4, opts, ttl=64)
    ref = IP(src="10.0.0.2", dst="10.0.0.4", ttl=64, proto=48, id=0) / DSR(
        nh=59,
        options=[
            DSROptSourceRoute(addresses=[], segs_left=0),
            DSROptRouteError(err_src="10.0.0.2", err_dst="10.0.0.4", unreachable="10.0.0.3"),
            DSROptCacheUpdate(link_from="10.0.0.2", link_to="10.0.0.3"),
        ],
    )
    assert pkt[20:] == bytes(ref)[20:]
    assert pkt[-10:] == CACHE_UPDATE
    assert parse(pkt).options == opts
    back = IP(pkt)[DSR]
    assert [type(o) for o in back.options] == [DSROptSourceRoute, DSROptRouteError, DSROptCacheUpdate]


def test_conn_list_literal_bytes_and_back() -> None:
    data = ConnInfo(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 4]), 40000, 5201, "data", ((0x01020304, True),))
    opt = ConnListOption((data,))
    assert opt.encode() == CONN_LIST
    layer = DSROptConnList(
        conn_list=[
            DSRConnInfo(
                src="10.0.0.1", dst="10.0.0.4", sport=40000, dport=5201, seqnos=[DSRConnSeq(seqno=0x01020304)]
            )
        ]
    )
    assert bytes(layer) == CONN_LIST
    assert decode_options(CONN_LIST) == [opt]
    back = DSROptConnList(CONN_LIST)
    (e,) = back.conn_list
    assert (e.src, e.dport, e.ack, e.n, e.seqnos[0].seqno, e.seqnos[0].pkt_lost) == (
        "10.0.0.1",
        5201,
        0,
        1,
        0x01020304,
        1,
    )
    acks = ConnInfo(
        bytes([10, 0, 0, 4]), bytes([10, 0, 0, 1]), 5201, 40000, "ack", ((100, True), (200, True)), True
    )
    assert ConnListOption((acks,)).encode() == CONN_LIST_ACK
    assert decode_options(CONN_LIST_ACK) == [ConnListOption((acks,))]
    b2 = DSROptConnList(CONN_LIST_ACK).conn_list[0]
    assert (b2.ack, b2.ack_sent, [s.seqno for s in b2.seqnos]) == (1, 1, [100, 200])


def test_bytes_that_are_not_the_option_stay_raw() -> None:
    assert decode_options(b"\x11\x02\x01\x02") == [RawOption(17, b"\x01\x02")]
    assert decode_options(b"\x12\x02\x01\x02") == [RawOption(18, b"\x01\x02")]
    assert type(DSR(bytes.fromhex("3b00 0004 11020102")).options[0]) is DSROptUnknown
    assert type(DSR(bytes.fromhex("3b00 0004 12020102")).options[0]) is DSROptUnknown
