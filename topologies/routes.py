"""Static routes: shortest-hop next hops over who reaches whom, and following them.

``routing.routes: auto`` (docs/scenarios.md): breadth-first shortest-hop paths over
``topologies.layout.neighbours`` at t = 0; the checker (``topologies.checks``) follows them to
make sure every flow has a loop-free path.
"""

from __future__ import annotations

from collections import deque

from topologies.layout import neighbours
from topologies.schema import ScenarioFields


def static_routes(scenario: ScenarioFields, seed: int | None = None) -> dict[int, dict[int, int]]:
    """Next hops ``{station: {destination: next_hop}}`` for the static protocol.

    Explicit ``routing.routes`` are returned as given. ``auto``: breadth-first shortest-hop
    paths over ``neighbours()``; ties go to the lowest next-hop id, and unreachable
    destinations have no entry.
    """
    if isinstance(scenario.routing.routes, dict):
        return {s: dict(t) for s, t in scenario.routing.routes.items()}
    return shortest_hop_routes(scenario.station_ids, neighbours(scenario, seed))


def shortest_hop_routes(ids: list[int], adj: dict[int, list[int]]) -> dict[int, dict[int, int]]:
    """Breadth-first next hops from every station in ``ids`` over the adjacency ``adj`` (sorted
    neighbour lists): ties go to the lowest next-hop id; unreachable destinations have no entry."""
    routes: dict[int, dict[int, int]] = {}
    for src in ids:
        first_hop: dict[int, int] = {}
        queue: deque[int] = deque()
        for nb in adj[src]:
            first_hop[nb] = nb
            queue.append(nb)
        while queue:
            node = queue.popleft()
            for nb in adj[node]:
                if nb != src and nb not in first_hop:
                    first_hop[nb] = first_hop[node]
                    queue.append(nb)
        routes[src] = dict(sorted(first_hop.items()))
    return routes


def follow(routes: dict[int, dict[int, int]], src: int, dst: int) -> str:
    """Follow next hops from src to dst; '' if it arrives, else why not."""
    node, seen = src, {src}
    while node != dst:
        hop = routes.get(node, {}).get(dst)
        if hop is None:
            return f"station {node} has no next hop for {dst}"
        if hop in seen:
            return f"loop at station {hop}"
        seen.add(hop)
        node = hop
    return ""
