"""Scenario files (YAML) and mobility: the ``topologies`` package.

- ``topologies.scenario``: ``load_scenario``, ``Scenario``, ``ScenarioError``; it puts together
  ``schema`` (the models), ``layout`` (trajectories, positions, neighbours), ``routes`` (static
  routes), ``checks`` (cross-field checks) and ``yamlfile`` (line numbers, overrides).
- ``topologies.mobility``: trajectory math: random waypoint, ``position_at``, ``velocity_at``.
- ``topologies.ns2`` / ``topologies.bonnmotion``: movement-file import and export.
- ``topologies.generate``: a CLI that writes scenario files and ns-2 movement files.

docs/scenarios.md documents every field.
"""

from typing import TYPE_CHECKING, Any

from topologies.errors import MovementFileError, ScenarioError

if TYPE_CHECKING:
    from topologies.scenario import CONGESTION_CONTROLS, EXTENSIONS, PROTOCOLS, Scenario, load_scenario

_FROM_SCENARIO = frozenset({"CONGESTION_CONTROLS", "EXTENSIONS", "PROTOCOLS", "Scenario", "load_scenario"})


def __getattr__(name: str) -> Any:
    """Import ``topologies.scenario`` (pydantic, YAML) only when one of its names is asked for, so
    that the router can import ``topologies.radio`` and ``topologies.seeding`` cheaply."""
    if name in _FROM_SCENARIO:
        from topologies import scenario

        return getattr(scenario, name)
    raise AttributeError(f"module 'topologies' has no attribute {name!r}")


__all__ = [
    "CONGESTION_CONTROLS",
    "EXTENSIONS",
    "PROTOCOLS",
    "MovementFileError",
    "Scenario",
    "ScenarioError",
    "load_scenario",
]
