"""The orchestrator's side of tcpctl (docs/tcpctl.md, docs/orchestrator.md "TCP control").

Per run, when the scenario needs it, the BPF side is loaded once before the routers start
(``nodes.tcpctl.kernel.load``: pins under ``/sys/fs/bpf/mt<runid>/``, congestion controls
``mtctl_<runid>`` and ``vegas_<runid>``), recorded in the registry, and unloaded at teardown.
``clean_leftovers`` removes the pins and congestion controls of dead runs, found only by our
names (``/sys/fs/bpf/mt<6 hex>``, ``mtctl_<6 hex>``, ``vegas_<6 hex>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nodes.extensions import needs_of
from nodes.router.config import TcpctlConfig
from topologies.scenario import Scenario


def agent_wanted(sc: Scenario) -> bool:
    """The endpoint agent runs in every router (``tcpctl.enabled`` or an extension whose ``NEEDS``
    says it acts on the TCP sender or receiver)."""
    return sc.tcpctl.enabled or any(needs_of(e).endpoint for e in sc.routing.extensions)


def uses_vegas(sc: Scenario) -> bool:
    return sc.tcp.cc == "vegas" or any(f.cc == "vegas" for f in sc.traffic.tcp)


def bpf_wanted(sc: Scenario) -> bool:
    """The run loads the BPF side: for the agent, or for the BPF Vegas (not compiled in here)."""
    return agent_wanted(sc) or uses_vegas(sc)


@dataclass(frozen=True, slots=True)
class RunTcpCtl:
    """What a run loaded; ``cc_names`` maps a scenario ``cc`` to the kernel's name for it."""

    run_id: str
    pin_dir: str
    agent: bool
    cc_names: dict[str, str]

    def cc(self, name: str) -> str:
        return self.cc_names.get(name, name)


def load(sc: Scenario, run_id: str) -> RunTcpCtl:
    from nodes.tcpctl import kernel as K

    loaded = K.load(run_id, vegas=True)
    names: dict[str, str] = {}
    if loaded.vegas_cc:
        names["vegas"] = loaded.vegas_cc
    agent = agent_wanted(sc)
    if agent and sc.tcpctl.controllable_reno:
        names["reno"] = loaded.ctl_cc
    return RunTcpCtl(run_id, str(loaded.pin_dir), agent, names)


def router_config(rt: RunTcpCtl | None, state: Path, sid: int) -> TcpctlConfig | None:
    """The router's ``tcpctl`` key (docs/tcpctl.md), or None when the agent is off."""
    if rt is None or not rt.agent:
        return None
    return TcpctlConfig(bpf=True, control_socket=str(state / f"sta{sid}.tcpctl.sock"))


def clean_leftovers(live: set[str], run_ids: list[str] | None = None) -> list[str]:
    """Unload the BPF side of every run of ours that is not ``live`` (``python -m testbed.clean``)."""
    from testbed.naming import RUN_ID_RE

    try:
        from nodes.tcpctl import kernel as K

        pinned = K.pinned_runs()
        ccs = K.registered_run_ccs()
    except (OSError, ImportError):
        return []
    out = []
    for rid in sorted(set(pinned) | set(ccs)):
        if not RUN_ID_RE.match(rid) or rid in live or (run_ids is not None and rid not in run_ids):
            continue
        try:
            if rid in pinned:
                K.cleanup(rid)
            for cc in K.registered_run_ccs().get(rid, []):
                K.unregister_by_name(cc)
        except OSError:
            continue
        out.append(rid)
    return out
