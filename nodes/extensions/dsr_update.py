"""DSR-Update, the distributed cache update algorithm (Yu 2004, MobiCom, section 2.2; Yu & Kedem's
"distributed adaptive cache update algorithm" [21] it summarises), over DSR.

s2.2: "In a cache table, a node not only stores routes but also maintains the information
necessary for cache updates ... (2) which neighbor has learned which link of the route through a
ROUTE REPLY. Thus, for each cached link, a node knows a set of neighborhood nodes that have that
link in their caches." "The algorithm is started either when a node detects a link failure or
when a node receives a cache update notification. In either case, it notifies only the
neighborhood nodes that have cached the broken link to update their caches. Therefore, the
information about a broken link will be propagated to all reachable nodes that have that link in
their caches."

- The cache table (:attr:`DsrUpdate.cache_table`) holds *routes*, as s2.2's does ("in a cache
  table, a node not only stores routes but also maintains the information necessary for cache
  updates"): each route this node sent with the neighbours that learned it, from DSR's
  ``DsrRouteSent`` event for Route Replies sent or forwarded ("learned ... through a ROUTE
  REPLY") and for data source routes originated, forwarded or salvaged (our stand-in for the
  per-route synchronisation state, which tells the nodes on a route); ROUTE ERRORs, the
  notifications among them, are not recorded. It holds the last routes sent, as many as DSR's
  path cache (primary + secondary, ns-2's 30 + 64), first in first out as ns-2's cache, so a
  node forgets the learners of a route that many routes later. It does not follow what DSR's
  own cache drops (a truncation at a break, an expiry). (Until 2026-11-27 the table was one of
  1024 *links* whose learners were forgotten only when notified, docs/fidelity.md.)
- The learners of a link are those of every route in the table that has it (with
  ``bidirectional_links`` a neighbour caches a heard path both ways, so a link matches in either
  direction).
- On ``LinkFailure`` (this node detected the break) and on receiving a cache update
  notification for a link, the node sends one notification to each learner of the link (never
  back to the node it heard the notification from, nor to the unreachable node) and removes the
  routes that have the link, so the recursion ends.
- The notification is a one-hop ROUTE ERROR (NODE_UNREACHABLE for the link: every DSR node
  removes the link on it, as Yu counts "Update ROUTE ERRORs" as routing overhead) followed by a
  :class:`CacheUpdateOption` (DSR option type 18, :data:`OPT_CACHE_UPDATE`) that tells a node
  with this extension to propagate it.
"""

from __future__ import annotations

import logging
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from nodes.core import ipv4
from nodes.core.addr import ip_to_station, station_ip_bytes
from nodes.core.events import Action
from nodes.core.hooks import LinkFailure, Needs
from nodes.core.protocol import NodeContext, RoutingProtocol
from nodes.extensions import core_api
from nodes.protocols.dsr.core import DsrRouting
from nodes.protocols.dsr.events import DsrRouteErrorReceived, DsrRouteSent
from nodes.protocols.dsr.options import (
    OPT_EXPERIMENTAL_FIRST,
    OPTION_DECODERS,
    DsrOption,
    RawOption,
    RouteError,
    register_option,
)

OPT_CACHE_UPDATE = OPT_EXPERIMENTAL_FIRST
"""DSR option type 18: the DSR-Update cache update notification. Unassigned in RFC 4728; ``18 &
0x80 == 0`` and ``18 & 0x60 == 0``: a router without the extension skips it (section 8.1.6)."""

LINK = struct.Struct("!4s4s")

Link = tuple[int, int]


@dataclass(frozen=True, slots=True)
class CacheUpdateOption:
    """The cache update notification::

    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    | Option Type=18| Opt Data Len=8|
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                Link From Address (broken link)                |
    |                 Link To Address (broken link)                 |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    """

    TYPE: ClassVar[int] = OPT_CACHE_UPDATE
    link_from: int
    link_to: int

    @property
    def link(self) -> Link:
        return (self.link_from, self.link_to)

    def encode(self) -> bytes:
        return bytes((OPT_CACHE_UPDATE, LINK.size)) + LINK.pack(
            station_ip_bytes(self.link_from), station_ip_bytes(self.link_to)
        )


def decode_cache_update(data: bytes) -> DsrOption:
    """The notification, or a :class:`RawOption` carried unchanged when the bytes are not one."""
    if len(data) != LINK.size:
        return RawOption(OPT_CACHE_UPDATE, data)
    a, b = (ip_to_station(x) for x in LINK.unpack(data))
    if a is None or b is None:
        return RawOption(OPT_CACHE_UPDATE, data)
    return CacheUpdateOption(a, b)


if OPTION_DECODERS.get(OPT_CACHE_UPDATE) is not decode_cache_update:
    register_option(OPT_CACHE_UPDATE, decode_cache_update)


Route = tuple[int, ...]

RECORDED_KINDS = frozenset({"rrep", "data"})
"""The packets whose route a neighbour learns for the cache table: Route Replies (s2.2 "learned
... through a ROUTE REPLY") and data (the nodes on the route); not ROUTE ERRORs, so the
notifications do not fill the table with one-hop routes."""


@dataclass(frozen=True, slots=True)
class DsrUpdateParams:
    cache_table_routes: int = 0
    """Routes kept in the cache table, first in first out; 0: as many as DSR's path cache holds
    (``primary_cache_size + secondary_cache_size``: the cache table is the route cache, s2.2)."""
    both_directions: bool = True
    """A link matches in both directions (as DSR's ``bidirectional_links`` learns it)."""

    def __post_init__(self) -> None:
        if self.cache_table_routes < 0:
            raise ValueError("cache_table_routes must be >= 0 (0: DSR's path cache size)")


class DsrUpdate:
    """DSR-Update at one station."""

    name = "dsr_update"

    def __init__(
        self, ctx: NodeContext, protocol: DsrRouting, params: DsrUpdateParams, log: logging.Logger
    ) -> None:
        self.ctx = ctx
        self.protocol = protocol
        self.p = params
        self.log = log
        self.cache_table: OrderedDict[Route, set[int]] = OrderedDict()
        """cached route -> the neighbours that learned it from this node (oldest first)."""
        dsr = protocol.p
        self.capacity = params.cache_table_routes or dsr.primary_cache_size + dsr.secondary_cache_size
        self.notified: list[tuple[int, Link, int]] = []
        """(t_ns, link, neighbour) of every notification sent."""
        self.counters = dict.fromkeys(("updates_sent", "updates_received", "link_failures"), 0)
        hooks = ctx.hooks
        hooks.subscribe(DsrRouteSent, self.on_route_sent)
        hooks.subscribe(LinkFailure, self.on_link_failure)
        hooks.subscribe(DsrRouteErrorReceived, self.on_route_error_received)

    def _has(self, route: Route, link: Link) -> bool:
        a, b = link
        for x, y in zip(route, route[1:], strict=False):
            if (x, y) == (a, b) or (self.p.both_directions and (x, y) == (b, a)):
                return True
        return False

    def _routes_with(self, link: Link) -> list[Route]:
        return [route for route in self.cache_table if self._has(route, link)]

    def learners(self, link: Link) -> set[int]:
        """The neighbours that learned ``link`` from this node: those of every cached route with it."""
        return set().union(*(self.cache_table[route] for route in self._routes_with(link)))

    def on_route_sent(self, ev: DsrRouteSent) -> list[Action]:
        """ "which neighbor has learned which link of the route" (s2.2): the next hop learned them all."""
        if ev.kind not in RECORDED_KINDS:
            return []
        route = tuple(ev.route)
        who = self.cache_table.get(route)
        if who is None:
            who = self.cache_table[route] = set()
            while len(self.cache_table) > self.capacity:  # first in, first out (ns-2's path cache)
                self.cache_table.popitem(last=False)
        who.add(ev.next_hop)
        return []

    def on_link_failure(self, ev: LinkFailure) -> list[Action]:
        """ "started ... when a node detects a link failure"."""
        self.counters["link_failures"] += 1
        return self.notify((self.ctx.station, ev.next_hop), {ev.next_hop}, ev.now_ns)

    def on_route_error_received(self, ev: DsrRouteErrorReceived) -> list[Action]:
        """ "... or when a node receives a cache update notification"."""
        if not ev.for_me:
            return []
        now_ns, packet = ev.now_ns, ev.packet
        opt = next((o for o in ev.following if isinstance(o, (CacheUpdateOption, RouteError))), None)
        if not isinstance(opt, CacheUpdateOption):
            return []
        self.counters["updates_received"] += 1
        self.ctx.counters.extra["dsr_update_received"] += 1
        sender = ip_to_station(ipv4.src(packet))
        return self.notify(opt.link, {opt.link_to} | ({sender} if sender is not None else set()), now_ns)

    def notify(self, link: Link, exclude: set[int], now_ns: int) -> list[Action]:
        """ "it notifies only the neighborhood nodes that have cached the broken link"."""
        targets: set[int] = set()
        for route in self._routes_with(link):  # the routes with the broken link leave the table
            targets |= self.cache_table.pop(route)
        out: list[Action] = []
        for n in sorted(targets - exclude - {self.ctx.station}):
            opts: list[DsrOption] = [RouteError(link[0], n, unreachable=link[1]), CacheUpdateOption(*link)]
            acts = self.protocol.send_options(n, opts, route=(self.ctx.station, n))
            if acts is None:
                continue
            self.notified.append((now_ns, link, n))
            del self.notified[:-1024]
            self.counters["updates_sent"] += 1
            self.ctx.counters.extra["dsr_update_sent"] += 1
            out += acts
        return out

    def state(self) -> dict[str, Any]:
        return {"counters": dict(self.counters), "cache_table": len(self.cache_table)}


PARAMS = DsrUpdateParams
NEEDS = Needs(events=frozenset({DsrRouteSent, LinkFailure, DsrRouteErrorReceived}), core=DsrRouting)
"""The cache table from the routes sent; the update is a ROUTE ERROR with the cache update option
(``DsrRouting.send_options``)."""


def attach(ctx: NodeContext, protocol: RoutingProtocol, params: DsrUpdateParams) -> DsrUpdate:
    return DsrUpdate(ctx, core_api(protocol, DsrRouting), params, ctx.log.getChild("dsr_update"))
