"""ABRA, the Adaptive Backoff and Response Approach (Ghanem, Elkilani, Hadhood, MEJ 33(1) 2008,
section 3), for every TCP connection the station originates.

Section 3: "The ABRA depends on saving the values of congestion window, slow start threshold and
smoothed round trip time as last_cwnd, last_ssthr and last_srtt respectively when the
retransmission timer expires. Then instead of multiplying RTO interval by two each time, we
multiply it by a value called backoff_new between one and two depending on the last_srtt"::

    backoff_new = 1 + (last_srtt - min_srtt) / (max_srtt - min_srtt)
    RTO_new     = backoff_new * RTO_current

"min_srtt is the minimum smoothed round trip time seen so far, and max_srtt is the maximum ...
We initialize min_srtt and max_srtt with the values 0.1 and 0.6 seconds respectively." And: "When
the sender receives an acknowledgement, TCP returns to its transmission state before the
expiration of its retransmission timer. Also, congestion window (CWND) and slow start threshold
(SSThr) will be divided by 2 and 4 respectively."

Realisation (docs/fidelity.md "ABRA"): at the connection's first segment the extension selects
the kernel policy ``Abra(min_srtt_init, max_srtt_init)`` (``TcpControl.rto_policy``); the BPF
sock_ops program computes backoff_new at each expiration and caps the kernel's doubling with it,
and restores cwnd/2, ssthresh/4 when an ACK covers the retransmission. :class:`AbraBackoff` is
the same rule in Python: the extension checks each expiration the kernel reports against it.
Hooks: ``tcp_segment_sent`` (connection start), ``tcp_timeout`` (observe).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodes.core.hooks import Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions._rto import RtoPolicyExtension
from nodes.extensions._tcp import endpoint_of
from nodes.tcpctl.kernelseam import Abra


@dataclass(frozen=True, slots=True)
class AbraParams:
    min_srtt_init: float = 0.1
    """s; "We initialize min_srtt and max_srtt with the values 0.1 and 0.6 seconds"."""
    max_srtt_init: float = 0.6
    """s; see ``min_srtt_init``."""
    cwnd_divisor: int = 2
    """"CWND and SSThr will be divided by 2 and 4 respectively" (done in the kernel: only 2)."""
    ssthresh_divisor: int = 4
    """See ``cwnd_divisor`` (only 4)."""
    observe: bool = True
    """Poll the kernel's RTO expirations and check each against :class:`AbraBackoff`."""

    def __post_init__(self) -> None:
        if not 0 < self.min_srtt_init < self.max_srtt_init:
            raise ValueError("need 0 < min_srtt_init < max_srtt_init")
        if (self.cwnd_divisor, self.ssthresh_divisor) != (2, 4):
            raise ValueError("cwnd_divisor/ssthresh_divisor: only the paper's 2 and 4 are realised (BPF)")


@dataclass(slots=True)
class AbraBackoff:
    """Section 3's rule for one connection (the paper's names; seconds, segments)."""

    min_srtt: float
    max_srtt: float
    last_srtt: float | None = None
    last_cwnd: int | None = None
    last_ssthresh: int | None = None
    backoff_new: float = 1.0

    @classmethod
    def from_params(cls, p: AbraParams) -> AbraBackoff:
        return cls(p.min_srtt_init, p.max_srtt_init)

    def on_srtt(self, srtt: float) -> None:
        """A new srtt: "minimum/maximum smoothed round trip time seen so far"."""
        if srtt > 0:
            self.min_srtt = min(self.min_srtt, srtt)
            self.max_srtt = max(self.max_srtt, srtt)

    def on_srtt_range(self, min_srtt: float, max_srtt: float) -> None:
        self.on_srtt(min_srtt)
        self.on_srtt(max_srtt)

    def expire(
        self, rto_current: float, srtt: float, cwnd: int = 0, ssthresh: int = 0, first: bool = True
    ) -> float:
        """The retransmission timer expired: save last_* (first expiration of a series), return
        RTO_new = backoff_new * RTO_current with backoff_new in [1, 2]."""
        if first or self.last_srtt is None:
            self.last_srtt, self.last_cwnd, self.last_ssthresh = srtt, cwnd, ssthresh
        assert self.last_srtt is not None
        span = self.max_srtt - self.min_srtt
        f = 1.0 + (self.last_srtt - self.min_srtt) / span if span > 0 else 1.0
        self.backoff_new = min(2.0, max(1.0, f))
        return self.backoff_new * rto_current

    def on_timeout(self, rto_current: float, last_srtt: float, consecutive: int) -> float | None:
        return self.expire(rto_current, last_srtt, first=consecutive <= 1)

    def recover(self) -> tuple[int, int]:
        """An ACK covers the retransmission: (cwnd, ssthresh) = (last_cwnd/2, last_ssthresh/4)."""
        return max(1, (self.last_cwnd or 0) // 2), max(2, (self.last_ssthresh or 0) // 4)


class AbraExtension(RtoPolicyExtension):
    name = "abra"


PARAMS = AbraParams
NEEDS = Needs(endpoint=True)
"""Any routing protocol: it acts on kernel TCP only."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: AbraParams) -> AbraExtension:
    p = params
    api = endpoint_of(ctx, "abra")
    return AbraExtension(
        api,
        Abra(p.min_srtt_init, p.max_srtt_init),
        lambda: AbraBackoff.from_params(p),
        p.observe,
        ctx.log.getChild("abra"),
    )
