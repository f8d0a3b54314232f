"""DSR route caches (RFC 4728 section 4.1): ns-2's path cache and an optional link cache.

Path cache (ns-2 ``MobiCache``, what Yu 2004 calls "path caches"): every cached route starts at
this node. A small *primary* cache holds routes this node discovered (learned from Route
Replies); a *secondary* cache holds routes snooped from packets forwarded or, in promiscuous
("tapping") mode, overheard. Both replace in FIFO order when full (Yu 2004 section 2.1: "a small
cache size with FIFO replacement policy for path caches"). A lookup searches the primary cache,
then the secondary; a secondary hit is promoted to the primary cache. The shortest cached
(sub)route to the destination wins.

RFC 4728 section 8.3.5: "if the node implements its Route Cache as a path cache ... all routes
(paths) that use this link are removed." ns-2 truncates such a path at the broken link instead
(keeping the still valid prefix); we do the same.

Link cache: a graph of links, each with an absolute expiry; lookups run a breadth-first search
(fewest hops). ns-2's adaptive link lifetimes (Link-MaxLife) are not modelled: every link lives
``route_cache_timeout``.

Entries hold absolute expiry times and are purged lazily on lookup (STYLE.md). Changes are
reported through ``notify(event, path, detail)`` (``insert``/``remove``), which the core turns into
the ``on_cache_insert`` / ``on_cache_remove`` hooks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

Path = tuple[int, ...]
Notify = Callable[[str, Path, str], None]


def _noop(event: str, path: Path, detail: str) -> None:
    return None


class RouteCache(Protocol):
    def add(self, path: Path, now_ns: int, *, primary: bool) -> bool: ...

    def find(self, dst: int, now_ns: int, *, promote: bool = True) -> Path | None: ...

    def remove_link(self, a: int, b: int, now_ns: int) -> int: ...

    def state(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class _Entry:
    path: Path
    expires_ns: int


class _FifoStore:
    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.capacity = capacity
        self.entries: deque[_Entry] = deque()

    def __len__(self) -> int:
        return len(self.entries)

    def covering(self, path: Path) -> _Entry | None:
        """An entry equal to ``path`` or extending it."""
        n = len(path)
        for e in self.entries:
            if len(e.path) >= n and e.path[:n] == path:
                return e
        return None


class PathCache:
    """ns-2 path cache: primary (discovered) + secondary (snooped), FIFO, starting at ``me``."""

    def __init__(
        self,
        me: int,
        primary_size: int,
        secondary_size: int,
        timeout_ns: int,
        notify: Notify = _noop,
        *,
        shortest_over_both: bool = False,
    ) -> None:
        self.me = me
        self.timeout_ns = timeout_ns
        self.shortest_over_both = shortest_over_both
        """ns-2 ``MobiCache::findRoute``: the shortest route over both caches (primary wins a
        tie); else the primary cache's shortest, the secondary's only without one."""
        self.primary = _FifoStore("primary", primary_size)
        self.secondary = _FifoStore("secondary", secondary_size)
        self.notify = notify

    def __len__(self) -> int:
        return len(self.primary) + len(self.secondary)

    def paths(self, which: str = "all") -> list[Path]:
        stores = {"primary": [self.primary], "secondary": [self.secondary]}.get(
            which, [self.primary, self.secondary]
        )
        return [e.path for s in stores for e in s.entries]

    def add(self, path: Path, now_ns: int, *, primary: bool) -> bool:
        """Cache ``path`` (must start at ``me``, >= 2 nodes, loop-free); True if it is new."""
        if len(path) < 2 or path[0] != self.me or len(set(path)) != len(path):
            return False
        self._purge(now_ns)
        exp = now_ns + self.timeout_ns
        hit = self.primary.covering(path)
        if hit is not None:
            hit.expires_ns = max(hit.expires_ns, exp)
            return False
        sec = self.secondary.covering(path)
        if sec is not None:
            if not primary:
                sec.expires_ns = max(sec.expires_ns, exp)
                return False
            self.secondary.entries.remove(sec)  # promoted: the primary copy replaces it
        store = self.primary if primary else self.secondary
        for e in list(store.entries):  # a shorter route we now know the continuation of
            if len(e.path) < len(path) and path[: len(e.path)] == e.path:
                store.entries.remove(e)
        store.entries.append(_Entry(path, exp))
        self.notify("insert", path, store.name)
        while len(store.entries) > store.capacity:
            victim = store.entries.popleft()
            self.notify("remove", victim.path, "evicted")
        return True

    def find(self, dst: int, now_ns: int, *, promote: bool = True) -> Path | None:
        """The shortest cached route from ``me`` to ``dst`` (primary first, or over both caches
        with ``shortest_over_both``), or None; a secondary hit moves to the primary cache when
        ``promote`` (ns-2 ``findRoute``'s ``for_me``)."""
        if dst == self.me:
            return None
        self._purge(now_ns)
        best: Path | None = None
        best_entry: _Entry | None = None
        best_store: _FifoStore | None = None
        for store in (self.primary, self.secondary):
            if best is not None and not self.shortest_over_both:
                break
            for e in store.entries:
                p = e.path
                if dst in p:
                    cand = p[: p.index(dst) + 1]
                    if best is None or len(cand) < len(best):
                        best, best_entry, best_store = cand, e, store
        if best is None or best_entry is None:
            return None
        best_entry.expires_ns = now_ns + self.timeout_ns
        if best_store is self.secondary and promote:
            self.secondary.entries.remove(best_entry)
            self.primary.entries.append(best_entry)
            self.notify("insert", best_entry.path, "primary")
            while len(self.primary.entries) > self.primary.capacity:
                victim = self.primary.entries.popleft()
                self.notify("remove", victim.path, "evicted")
        return best

    def remove_link(self, a: int, b: int, now_ns: int) -> int:
        """Truncate every cached path at the link ``a -> b``; return how many paths it touched."""
        touched = 0
        for store in (self.primary, self.secondary):
            for e in list(store.entries):
                p = e.path
                for i in range(len(p) - 1):
                    if p[i] == a and p[i + 1] == b:
                        touched += 1
                        self.notify("remove", p, "link_broken")
                        if i >= 1:
                            e.path = p[: i + 1]
                        else:
                            store.entries.remove(e)
                        break
        return touched

    def _purge(self, now_ns: int) -> None:
        for store in (self.primary, self.secondary):
            if any(e.expires_ns <= now_ns for e in store.entries):
                for e in [e for e in store.entries if e.expires_ns <= now_ns]:
                    store.entries.remove(e)
                    self.notify("remove", e.path, "expired")

    def state(self) -> dict[str, Any]:
        return {
            "primary": [list(p) for p in self.paths("primary")],
            "secondary": [list(p) for p in self.paths("secondary")],
        }


class LinkCache:
    """A link cache: links with absolute expiries, breadth-first search for the fewest hops."""

    def __init__(
        self, me: int, capacity: int, timeout_ns: int, notify: Notify = _noop, *, bidirectional: bool = True
    ) -> None:
        self.me = me
        self.capacity = capacity
        self.timeout_ns = timeout_ns
        self.bidirectional = bidirectional
        self.links: dict[tuple[int, int], int] = {}
        self.notify = notify
        self._memo: dict[int, Path | None] = {}

    def __len__(self) -> int:
        return len(self.links)

    def _put(self, link: tuple[int, int], exp: int) -> bool:
        new = link not in self.links
        if not new:
            del self.links[link]  # re-learned: moves to the FIFO tail
        self.links[link] = exp
        return new

    def add(self, path: Path, now_ns: int, *, primary: bool) -> bool:
        if len(path) < 2 or len(set(path)) != len(path):
            return False
        self._purge(now_ns)
        exp = now_ns + self.timeout_ns
        new = False
        for a, b in zip(path, path[1:], strict=False):
            new |= self._put((a, b), exp)
            if self.bidirectional:
                new |= self._put((b, a), exp)
        while len(self.links) > self.capacity:
            victim = next(iter(self.links))
            del self.links[victim]
            self.notify("remove", victim, "evicted")
        self._memo.clear()
        if new:
            self.notify("insert", path, "link")
        return new

    def find(self, dst: int, now_ns: int, *, promote: bool = True) -> Path | None:
        if dst == self.me:
            return None
        self._purge(now_ns)
        if dst in self._memo:
            return self._memo[dst]
        adj: dict[int, list[int]] = {}
        for a, b in self.links:
            adj.setdefault(a, []).append(b)
        prev: dict[int, int] = {self.me: self.me}
        frontier = [self.me]
        while frontier and dst not in prev:
            nxt: list[int] = []
            for u in frontier:
                for v in adj.get(u, ()):
                    if v not in prev:
                        prev[v] = u
                        nxt.append(v)
            frontier = nxt
        path: Path | None = None
        if dst in prev:
            rev = [dst]
            while rev[-1] != self.me:
                rev.append(prev[rev[-1]])
            path = tuple(reversed(rev))
            for a, b in zip(path, path[1:], strict=False):
                self.links[(a, b)] = max(self.links[(a, b)], now_ns + self.timeout_ns)
        self._memo[dst] = path
        return path

    def remove_link(self, a: int, b: int, now_ns: int) -> int:
        if (a, b) in self.links:
            del self.links[(a, b)]
            self._memo.clear()
            self.notify("remove", (a, b), "link_broken")
            return 1
        return 0

    def _purge(self, now_ns: int) -> None:
        dead = [k for k, t in self.links.items() if t <= now_ns]
        for k in dead:
            del self.links[k]
            self.notify("remove", k, "expired")
        if dead:
            self._memo.clear()

    def state(self) -> dict[str, Any]:
        return {"links": [list(k) for k in self.links]}


def make_cache(
    kind: str,
    me: int,
    *,
    primary_size: int,
    secondary_size: int,
    link_size: int,
    timeout_ns: int,
    bidirectional: bool,
    shortest_over_both: bool = False,
    notify: Notify = _noop,
) -> PathCache | LinkCache:
    if kind == "link":
        return LinkCache(me, link_size, timeout_ns, notify, bidirectional=bidirectional)
    return PathCache(
        me, primary_size, secondary_size, timeout_ns, notify, shortest_over_both=shortest_over_both
    )


def loop_free(path: Iterable[int]) -> bool:
    p = list(path)
    return len(set(p)) == len(p)
