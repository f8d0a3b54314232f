"""The part ABRA and Fixed RTO share: choose the kernel's RTO policy for every TCP connection the
station originates, at its first segment (the SYN), and watch the kernel's RTO expirations.

The backoff itself runs in the kernel (nodes/tcpctl/bpf/tcpctl.bpf.c: the sock_ops RTO callback
caps the next RTO with ``TCP_RTO_MAX_MS``). Each extension keeps an exact model of its paper's
rule (``RtoModel``) and, with ``observe`` on, compares every expiration the kernel reports
(``tcp_timeout``, polled) with it: ``events[conn]`` and the ``mismatches`` counter say whether the
kernel did what the paper says: the RTO the kernel applies next (its doubling bounded by the cap,
which it floors at 1 s), not the cap asked for, so an RTO the paper keeps below 1 s counts as a
mismatch (issue 47).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from nodes.core.events import Action
from nodes.extensions._tcp import originated_here
from nodes.tcpctl.agent import ConnId, TcpSegmentSent, TcpTimeout
from nodes.tcpctl.api import TcpControl
from nodes.tcpctl.kernelseam import RtoPolicy

MAX_EVENTS = 64
"""Expirations kept per connection (oldest dropped)."""
CAP_TOLERANCE_US = 4_000
"""The kernel's RTO granularity: jiffies of 4 ms (CONFIG_HZ=250) and whole ms for the cap."""
RTO_MAX_FLOOR_US = 1_000_000
"""The kernel's floor for ``TCP_RTO_MAX_MS`` (tcpctl.bpf.c ``RTO_MAX_FLOOR_MS``): a cap below it
is applied as 1 s, so the next RTO is min(2 x RTO, max(cap, 1 s)), not the cap."""


class RtoModel(Protocol):
    """The paper's rule for one connection, fed with what the kernel reports."""

    def on_srtt_range(self, min_srtt: float, max_srtt: float) -> None: ...

    def on_timeout(self, rto_current: float, last_srtt: float, consecutive: int) -> float | None:
        """The RTO (s) the paper gives after this expiration; None: the kernel's own doubling."""
        ...


class RtoPolicyExtension:
    """Set ``policy`` on every connection the station originates; optionally check the kernel."""

    name = "rto_policy"

    def __init__(
        self,
        api: TcpControl,
        policy: RtoPolicy,
        make_model: Callable[[], RtoModel],
        observe: bool,
        log: logging.Logger,
    ) -> None:
        self.api = api
        self.policy = policy
        self.make_model = make_model
        self.observe = observe
        self.log = log
        self.applied: dict[ConnId, int] = {}
        """Connection -> time (ns) the policy was set."""
        self.events: dict[ConnId, list[dict[str, Any]]] = {}
        self.models: dict[ConnId, RtoModel] = {}
        self.counters = {"conns": 0, "timeouts": 0, "mismatches": 0}
        self._polling = False
        api.on_segment_sent(self.on_segment_sent)

    # ------------------------------------------------------------------ hooks
    def on_segment_sent(self, ev: TcpSegmentSent) -> list[Action]:
        conn, now_ns = ev.conn, ev.now_ns
        if conn in self.applied or not originated_here(self.api, conn):
            return []
        self.api.rto_policy(conn, self.policy)
        self.applied[conn] = now_ns
        self.models[conn] = self.make_model()
        self.counters["conns"] += 1
        self.log.debug("%s: RTO policy %s on %s", self.name, self.policy, conn)
        if self.observe and not self._polling:
            self._polling = True
            return self.api.on_timeout(self.on_timeout, now_ns)
        return []

    def on_timeout(self, ev: TcpTimeout) -> list[Action]:
        conn, n_rto, info, now_ns = ev.conn, ev.n_rto, ev.info, ev.now_ns
        model = self.models.get(conn)
        if model is None:
            return []
        log = self.events.setdefault(conn, [])
        seen = log[-1]["n_rto"] if log else 0
        rto_events = info.get("rto_events") or []
        first = n_rto - len(rto_events) + 1  # index (1-based) of rto_events[0]
        model.on_srtt_range(info.get("min_srtt_us", 0) / 1e6, info.get("max_srtt_us", 0) / 1e6)
        consecutive = int(info.get("consec_rto", 0))
        for i, rto_ev in enumerate(rto_events):
            k = first + i
            if k <= seen:
                continue
            rto = rto_ev["rto_us"] / 1e6
            # the expiration k is the (consecutive - (n_rto - k))-th of the current series
            nth = max(1, consecutive - (n_rto - k))
            expected = model.on_timeout(rto, info.get("last_srtt_us", 0) / 1e6, nth)
            cap = int(rto_ev.get("next_cap_us", 0))
            # what the kernel applies: its doubling, bounded by the cap it accepted (>= 1 s)
            applied = (
                2 * int(rto_ev["rto_us"])
                if cap == 0
                else min(2 * int(rto_ev["rto_us"]), max(cap, RTO_MAX_FLOOR_US))
            )
            ok = (expected is None and cap == 0) or (
                expected is not None and abs(applied - expected * 1e6) <= CAP_TOLERANCE_US
            )
            self.counters["timeouts"] += 1
            if not ok:
                self.counters["mismatches"] += 1
            log.append(
                {
                    "t_ns": now_ns,
                    "n_rto": k,
                    "rto_us": rto_ev["rto_us"],
                    "next_cap_us": cap,
                    "applied_us": applied,
                    "expected_us": None if expected is None else round(expected * 1e6),
                    "ok": ok,
                }
            )
        del log[:-MAX_EVENTS]
        return []

    def state(self) -> dict[str, Any]:
        return {
            "counters": dict(self.counters),
            "conns": {
                str(c): {"since_ns": t, "events": self.events.get(c, [])} for c, t in self.applied.items()
            },
        }
