"""The neighbour table: who was heard when, at what signal strength, and the RREQ blacklist.

Every received frame updates its sender's entry (last heard, RSSI, SNR): this is what Klemm
2004's neighbour table is built from (the ``NeighbourSignal`` event carries the same samples).
HELLO bookkeeping follows RFC 3561 section 6.9: "If, within the past DELETE_PERIOD, it has
received a Hello message from a neighbor, and then for that neighbor does not receive any
packets (Hello messages or otherwise) for more than ALLOWED_HELLO_LOSS * HELLO_INTERVAL
milliseconds, the node SHOULD assume that the link to this neighbor is currently lost."

The blacklist is section 6.8: a node that did not acknowledge a RREP with the 'A' flag is
blacklisted for BLACKLIST_TIMEOUT, and RREQs from it are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Neighbour:
    station: int
    last_heard_ns: int
    rssi_dbm: float = 0.0
    snr_db: float = 0.0
    last_hello_ns: int | None = None


class NeighbourTable:
    def __init__(self) -> None:
        self._nb: dict[int, Neighbour] = {}
        self._blacklist: dict[int, int] = {}

    def __contains__(self, station: int) -> bool:
        return station in self._nb

    def get(self, station: int) -> Neighbour | None:
        return self._nb.get(station)

    def heard(self, station: int, now_ns: int, rssi_dbm: float, snr_db: float) -> Neighbour:
        n = self._nb.get(station)
        if n is None:
            n = self._nb[station] = Neighbour(station, now_ns, rssi_dbm, snr_db)
        else:
            n.last_heard_ns, n.rssi_dbm, n.snr_db = now_ns, rssi_dbm, snr_db
        return n

    def hello(self, station: int, now_ns: int) -> None:
        n = self._nb.get(station)
        if n is None:
            n = self._nb[station] = Neighbour(station, now_ns)
        n.last_hello_ns = now_ns

    def remove(self, station: int) -> None:
        self._nb.pop(station, None)

    def hello_lost(self, now_ns: int, silence_ns: int, delete_period_ns: int) -> list[int]:
        """Neighbours heard by HELLO within DELETE_PERIOD that have been silent > ``silence_ns``."""
        return sorted(
            n.station
            for n in self._nb.values()
            if n.last_hello_ns is not None
            and now_ns - n.last_hello_ns <= delete_period_ns
            and now_ns - n.last_heard_ns > silence_ns
        )

    # ---------------------------------------------------------------- blacklist (6.8)
    def blacklist(self, station: int, until_ns: int) -> None:
        self._blacklist[station] = until_ns

    def blacklisted(self, station: int, now_ns: int) -> bool:
        until = self._blacklist.get(station)
        if until is None:
            return False
        if until <= now_ns:
            del self._blacklist[station]
            return False
        return True

    def to_dict(self, now_ns: int) -> list[dict[str, object]]:
        return [
            {
                "station": n.station,
                "age_s": (now_ns - n.last_heard_ns) / 1e9,
                "rssi_dbm": n.rssi_dbm,
                "snr_db": n.snr_db,
            }
            for n in sorted(self._nb.values(), key=lambda n: n.station)
        ]
