"""What the TCP extensions (abra, fixed_rto, elfn, atcp) share: reaching the station's endpoint
agent (``ctx.endpoint``, a ``nodes.tcpctl.api.TcpControl``) and reading the TCP connection inside
a routed packet. No state, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodes.core.protocol import NodeContext, ParamError
from nodes.tcpctl import packets as P
from nodes.tcpctl.agent import ConnId

if TYPE_CHECKING:
    from nodes.tcpctl.api import TcpControl


def endpoint_of(ctx: NodeContext, extension: str) -> TcpControl:
    """The station's tcpctl API, or a clear error: every TCP extension acts on kernel TCP."""
    ep = ctx.endpoint
    if ep is None:
        raise ParamError(
            f"extension {extension!r} needs the endpoint agent on this station (ctx.endpoint is None): "
            "the orchestrator turns it on for every TCP extension; a router config needs "
            '"tcpctl": {"enabled": true}'
        )
    return ep


def originated_here(api: TcpControl, conn: ConnId) -> bool:
    """True when the local kernel opened ``conn`` (its SYN went out before anything came in)."""
    c = api.agent.conns.get(conn)
    return c is not None and c.stats["seg_in"] == 0 and c.last_ack_pkt is None


def data_conn(ip_packet: bytes) -> tuple[ConnId, int] | None:
    """(connection seen from the TCP sender, sequence number) of a TCP data segment, else None."""
    t = P.parse_tcp(ip_packet)
    if t is None or t.payload_len == 0:
        return None
    return ConnId(t.src, t.sport, t.dst, t.dport), t.seq
