"""Scenario files (YAML) and mobility: the ``topologies`` package.

- ``topologies.scenario``: the scenario schema, ``load_scenario``, ``ScenarioError``.
- ``topologies.mobility``: seeded trajectories, ``position_at``, ``velocity_at``.
- ``topologies.ns2`` / ``topologies.bonnmotion``: movement-file import and export.
- ``topologies.generate``: a CLI that writes scenario files and ns-2 movement files.

docs/scenarios.md documents every field.
"""

from topologies.errors import MovementFileError, ScenarioError
from topologies.scenario import CONGESTION_CONTROLS, EXTENSIONS, PROTOCOLS, Scenario, load_scenario

__all__ = [
    "CONGESTION_CONTROLS",
    "EXTENSIONS",
    "PROTOCOLS",
    "MovementFileError",
    "Scenario",
    "ScenarioError",
    "load_scenario",
]
