"""Events into a protocol core and the actions it returns (STYLE.md: sans-I/O cores).

A core is ``on_event(event, now_ns) -> list[Action]``. Events come from the kernel (``FromLocal``:
an IP packet from the TUN), the air (``FromAir``: a frame the medium delivered, with its signal),
the MAC (``TxStatus``: the per-frame link-layer feedback), the interface queue (``IfqDrop``) and
timers (``Timer``). Actions are applied by the node runtime (``nodes.core.runtime``), the same in
virtual time (tests) and on the wall clock (the router daemon).

Events and actions are values: nobody mutates one after building it. They are plain slotted
dataclasses rather than ``frozen=True`` ones because several are built per forwarded packet and a
frozen dataclass's ``__init__`` (``object.__setattr__`` per field) costs 3.3 us here against 0.8 us
(docs/router.md, "Performance"); ``unsafe_hash=True`` keeps them hashable by value as before.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, eq=False)
class Frame:
    """One entry of the interface queue: a packet and where the MAC sends it.

    ``control`` frames (routing packets) go ahead of data frames, as in ns-2's PriQueue.
    ``meta`` is the protocol's private bookkeeping for this frame (e.g. DSR's salvage count);
    the runtime never reads it.
    """

    packet: bytes
    next_hop: int
    control: bool = False
    tx_power_dbm: float | None = None
    retry_limit: int | None = None
    no_rts: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    enq_ns: int = 0


# ---------------------------------------------------------------- events


@dataclass(slots=True, unsafe_hash=True)
class FromLocal:
    """An IP packet the local kernel sent into the TUN (to be routed)."""

    packet: bytes


@dataclass(slots=True, unsafe_hash=True)
class FromAir:
    """A frame received from neighbour ``src``; ``overheard`` when addressed to another station."""

    packet: bytes
    src: int
    dst: int
    rssi_dbm: float = 0.0
    snr_db: float = 0.0
    overheard: bool = False


@dataclass(slots=True, unsafe_hash=True)
class TxStatus:
    """Link-layer feedback for a frame the MAC finished (acknowledged, failed or broadcast sent)."""

    frame: Frame
    ok: bool
    rts_attempts: int = 0
    data_attempts: int = 0
    cause: int = 0  # medium ground truth; cores must not read it (docs/interfaces.md)


@dataclass(slots=True, unsafe_hash=True)
class Timer:
    """A timer the core set with ``SetTimer(key, at_ns)`` has fired."""

    key: Hashable


@dataclass(slots=True, unsafe_hash=True)
class IfqDrop:
    """The interface queue was full: ``frame`` was dropped (drop-tail)."""

    frame: Frame


Event = FromLocal | FromAir | TxStatus | Timer | IfqDrop

# ---------------------------------------------------------------- actions


@dataclass(slots=True, unsafe_hash=True)
class Send:
    """Enqueue ``frame`` on the interface queue after ``jitter_ns`` (broadcast jitter)."""

    frame: Frame
    jitter_ns: int = 0


@dataclass(slots=True, unsafe_hash=True)
class DeliverLocal:
    """Hand an IP packet up to the local kernel (write it to the TUN)."""

    packet: bytes


@dataclass(slots=True, unsafe_hash=True)
class SetTimer:
    """Fire ``Timer(key)`` at absolute time ``at_ns``; replaces a pending timer with that key."""

    key: Hashable
    at_ns: int


@dataclass(slots=True, unsafe_hash=True)
class CancelTimer:
    key: Hashable


@dataclass(slots=True, unsafe_hash=True)
class Drop:
    """The core discards ``packet``; the runtime counts it under ``reason``."""

    packet: bytes
    reason: str


@dataclass(slots=True, unsafe_hash=True)
class SetPower:
    """Change the tx power towards ``neighbour`` (None: every neighbour); None power resets."""

    neighbour: int | None
    tx_power_dbm: float | None


@dataclass(slots=True, unsafe_hash=True)
class ToNetwork:
    """(Endpoint agent) pass a kernel packet on to the routing core, as if it came from the TUN."""

    packet: bytes


@dataclass(slots=True, unsafe_hash=True)
class ToKernel:
    """(Endpoint agent) write a packet to the local kernel, bypassing the endpoint agent."""

    packet: bytes


Action = Send | DeliverLocal | SetTimer | CancelTimer | Drop | SetPower | ToNetwork | ToKernel
