"""Fixed RTO (Dyer & Boppana, MobiHoc 2001; as described by Ghanem et al. 2008 section 2) for
every TCP connection the station originates.

Ghanem 2008 section 2: "It concludes that if two successive timeouts exists, then it is a route
failure and not a network congestion. The action taken due to this situation is to retransmit
the unacknowledged packet and the RTO is not doubled a second time and remains fixed until the
route is reestablished and the retransmitted packet is acknowledged."

Realisation: at the connection's first segment the kernel policy ``FixedAfterTwo`` is selected
(``TcpControl.rto_policy``); the BPF sock_ops program caps the RTO at its current value from the
second consecutive expiration on and lifts the cap when an ACK covers the retransmission.
:class:`FixedRtoBackoff` is the rule in Python, checked against every expiration the kernel
reports. Hooks: ``tcp_segment_sent`` (connection start), ``tcp_timeout`` (observe).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions._rto import RtoPolicyExtension
from nodes.extensions._tcp import endpoint_of
from nodes.tcpctl.kernelseam import FixedAfterTwo


@dataclass(frozen=True, slots=True)
class FixedRtoParams:
    successive_timeouts: int = 2
    """"if two successive timeouts exists, then it is a route failure" (the kernel side: only 2)."""
    observe: bool = True
    """Poll the kernel's RTO expirations and check each against :class:`FixedRtoBackoff`."""

    def __post_init__(self) -> None:
        if self.successive_timeouts != 2:
            raise ValueError("successive_timeouts: only the paper's 2 is realised (BPF)")


@dataclass(slots=True)
class FixedRtoBackoff:
    successive_timeouts: int = 2

    def on_srtt_range(self, min_srtt: float, max_srtt: float) -> None:
        pass

    def on_timeout(self, rto_current: float, last_srtt: float, consecutive: int) -> float | None:
        """The RTO after the ``consecutive``-th expiration of a series: doubled by TCP until the
        second, then "not doubled a second time and remains fixed" (None = the kernel doubles)."""
        return rto_current if consecutive >= self.successive_timeouts else None

    def rto_series(self, rto0: float, n: int) -> list[float]:
        """The RTOs of ``n`` consecutive expirations starting at ``rto0`` (for the docs/tests)."""
        out, rto = [], rto0
        for k in range(1, n + 1):
            out.append(rto)
            nxt = self.on_timeout(rto, 0.0, k)
            rto = 2 * rto if nxt is None else nxt
        return out


class FixedRtoExtension(RtoPolicyExtension):
    name = "fixed_rto"


PARAMS = FixedRtoParams
NEEDS = Needs(endpoint=True)
"""Any routing protocol: it acts on kernel TCP only."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: FixedRtoParams) -> FixedRtoExtension:
    p = params
    api = endpoint_of(ctx, "fixed_rto")
    return FixedRtoExtension(
        api,
        FixedAfterTwo(),
        lambda: FixedRtoBackoff(p.successive_timeouts),
        p.observe,
        ctx.log.getChild("fixed_rto"),
    )
