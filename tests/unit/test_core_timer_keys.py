"""Typed timer keys in the runtime: the runtime's own (``JitterTimer``), the endpoint agent's
(``EndpointTimer`` subclasses: ``ThawTimer``, ``PollTimer``, tcpctl's ``ReportTimer``) and the
core's (anything else, as a ``Timer`` event), in virtual time."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from test_core_runtime import make

from nodes.core.events import Action, Frame, Send, SetTimer, Timer
from nodes.core.runtime import ENDPOINT_TIMER, EndpointTimer, JitterTimer
from nodes.tcpctl.agent import ConnId, PollTimer, ThawTimer
from nodes.tcpctl.station import ReportTimer

CID = ConnId(b"\x0a\x00\x00\x01", 40000, b"\x0a\x00\x00\x03", 5201)


@dataclass(frozen=True, slots=True)
class CoreKey:
    dst: int


class Endpoint:
    def __init__(self) -> None:
        self.timers: list[tuple[int, Hashable]] = []

    def on_outbound(self, packet: bytes, now_ns: int) -> list[Action]:
        return []

    def on_inbound(self, packet: bytes, now_ns: int) -> list[Action]:
        return []

    def on_timer(self, key: Hashable, now_ns: int) -> list[Action]:
        self.timers.append((now_ns, key))
        return []


def test_each_key_goes_to_its_owner() -> None:
    rt, core, io = make()
    ep = Endpoint()
    rt.endpoint = ep
    legacy = (ENDPOINT_TIMER, "atcp", CID, "rto")  # an extension's own key (still a tuple)
    rt.apply(
        [
            SetTimer(ThawTimer(CID), 10),
            SetTimer(PollTimer(), 20),
            SetTimer(ReportTimer(CID, 1000), 30),
            SetTimer(legacy, 40),
            SetTimer(CoreKey(5), 50),
            Send(Frame(b"j" * 20, 3), jitter_ns=60),
        ],
        0,
    )
    assert rt.timers.pending(JitterTimer(0)) == 60  # the jitter is a typed key too
    for t in (10, 20, 30, 40, 50, 60):
        rt.fire_due(t)
    assert ep.timers == [(10, ThawTimer(CID)), (20, PollTimer()), (30, ReportTimer(CID, 1000)), (40, legacy)]
    assert [e for _, e in core.events] == [Timer(CoreKey(5))]
    assert [f.packet for f in io.tx] == [b"j" * 20]  # the jittered frame went to the MAC at 60


def test_endpoint_keys_are_values() -> None:
    assert ThawTimer(CID) == ThawTimer(CID) and hash(ThawTimer(CID)) == hash(ThawTimer(CID))
    assert ThawTimer(CID) != ReportTimer(CID, 0)
    assert isinstance(PollTimer(), EndpointTimer) and not isinstance(CoreKey(1), EndpointTimer)
