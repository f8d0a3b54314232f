"""The sans-I/O substrate of the station router (STYLE.md "Protocol cores").

Import from here: ``from nodes.core import Frame, Send, RoutingProtocol, NodeContext, ...``.
"""

from nodes.core.addr import BROADCAST, ip_to_station, station_ip, station_ip_bytes, station_mac
from nodes.core.clock import NS_PER_MS, NS_PER_S, NS_PER_US, Clock, Scheduler, VirtualClock, seconds
from nodes.core.counters import Counters
from nodes.core.events import (
    Action,
    CancelTimer,
    DeliverLocal,
    Drop,
    Event,
    Frame,
    FromAir,
    FromLocal,
    IfqDrop,
    Send,
    SetPower,
    SetTimer,
    Timer,
    ToKernel,
    ToNetwork,
    TxStatus,
)
from nodes.core.hooks import CrossLayerEvent, Hooks, UndeclaredEvent
from nodes.core.ifq import DEFAULT_IFQ_LEN, InterfaceQueue
from nodes.core.protocol import NodeContext, ParamError, RoutingProtocol, params_from_dict

__all__ = [
    "BROADCAST",
    "NS_PER_MS",
    "NS_PER_S",
    "NS_PER_US",
    "DEFAULT_IFQ_LEN",
    "Action",
    "CancelTimer",
    "Clock",
    "Counters",
    "CrossLayerEvent",
    "DeliverLocal",
    "Drop",
    "Event",
    "Frame",
    "FromAir",
    "FromLocal",
    "Hooks",
    "IfqDrop",
    "InterfaceQueue",
    "NodeContext",
    "ParamError",
    "RoutingProtocol",
    "Scheduler",
    "Send",
    "SetPower",
    "SetTimer",
    "Timer",
    "ToKernel",
    "ToNetwork",
    "TxStatus",
    "UndeclaredEvent",
    "VirtualClock",
    "ip_to_station",
    "params_from_dict",
    "seconds",
    "station_ip",
    "station_ip_bytes",
    "station_mac",
]
