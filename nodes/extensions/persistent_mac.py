"""Klemm et al. 2004 section 4.1: the Persistent MAC (against false link failures).

"The IEEE 802.11 MAC protocol reports a link failure if it cannot establish an RTS-CTS handshake
with a neighbor within seven RTS attempts. Our idea is to double the number of re-transmission
attempts if there is a high probability that the neighbor is still within transmission range."
"If d_est is smaller than the transmission range of N_X, Persistent MAC will transmit up to
seven additional RTSs ... If d_est is greater than the transmission range, or if the information
in the neighbor table with regard to N_Y is deemed stale, the Persistent MAC will report a link
failure to the routing protocol. The Persistent MAC will also report a link failure if the
additional attempts to establish a handshake with N_Y fail."

Realisation: the MAC is the medium's (docs/medium.md); its short retry limit (7 RTS attempts) is
not changed per frame. At ``on_tx_failure`` of a failed handshake (``rts_attempts`` at the limit,
no DATA attempt) to a neighbour the shared neighbour table
(:mod:`nodes.extensions.neighbour_table`) estimates in range, the frame is sent once more (a new
MAC attempt: up to ``extra_rts_attempts`` = 7 more RTSs) and the link is not reported broken.
Hooks: ``on_tx_failure`` (through the station's shared chain), ``on_neighbour_signal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodes.core.events import Action, Frame, Send
from nodes.core.hooks import Needs, TxFailure
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions.neighbour_table import KlemmStation

META_PERSISTED = "klemm_persistent"
"""Frame.meta key of a frame the Persistent MAC already sent again."""


@dataclass(frozen=True, slots=True)
class PersistentMacParams:
    short_retry_limit: int = 7
    """"within seven RTS attempts" (802.11 dot11ShortRetryLimit; the medium's preset value)."""
    extra_rts_attempts: int = 7
    """"up to seven additional RTSs" (footnote 3: "typically a system parameter"). Only 7 is
    realised: the retry is one more MAC attempt with the medium's own short retry limit."""
    neighbour_table: Mapping[str, Any] | None = None
    """Parameters of the shared neighbour table (``NeighbourTableParams``)."""

    def __post_init__(self) -> None:
        if self.extra_rts_attempts != self.short_retry_limit:
            raise ValueError(
                "extra_rts_attempts: only one more full MAC attempt (= short_retry_limit) is realised"
            )


def resend(frame: Frame, **changes: Any) -> Frame:
    """A copy of ``frame`` for one more MAC attempt (``meta`` copied, ``changes`` applied)."""
    meta = dict(frame.meta)
    meta.update(changes.pop("meta", {}))
    f = Frame(
        frame.packet, frame.next_hop, frame.control, frame.tx_power_dbm, frame.retry_limit, frame.no_rts, meta
    )
    for k, v in changes.items():
        setattr(f, k, v)
    return f


class PersistentMac:
    def __init__(self, ctx: NodeContext, station: KlemmStation, params: PersistentMacParams) -> None:
        self.ctx = ctx
        self.st = station
        self.p = params

    def on_tx_failure(self, ev: TxFailure) -> list[Action]:
        frame = ev.frame
        # A handshake failure: all RTSs unanswered, no DATA sent.
        if (
            ev.rts_attempts < self.p.short_retry_limit
            or ev.data_attempts > 0
            or frame.meta.get(META_PERSISTED)
        ):
            return []
        if not self.st.table.in_range(frame.next_hop, ev.now_ns):
            self.ctx.counters.extra["klemm_persistent_gave_up"] += 1
            return []
        ev.decision.link_break = False
        self.ctx.counters.extra["klemm_persistent_retries"] += 1
        return [Send(resend(frame, meta={META_PERSISTED: True}))]


PARAMS = PersistentMacParams
NEEDS = Needs(services=(KlemmStation,))
"""The shared table's distance estimate and its station-wide ``TxFailure`` subscriber."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: PersistentMacParams) -> PersistentMac:
    p = params
    st = KlemmStation.of(ctx, p.neighbour_table)
    ext = PersistentMac(ctx, st, p)
    st.tx_failure.append((0, ext.on_tx_failure))
    return ext
