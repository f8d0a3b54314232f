"""Scenario files: ``load_scenario``, ``scenario_from_dict`` and the validated ``Scenario``.

Issue 2, item 2: a scenario states the stations, field, radio, mobility, traffic, routing and
its extensions, TCP settings, per-link overrides, scripted events, duration and seed. It is
validated on load; unknown keys are errors; every error names the file, the field path and the
reason. docs/scenarios.md documents every field.

``load_scenario(path)`` reads YAML (JSON is YAML too, so a saved ``model_dump_json()`` loads back).

The jobs live in their own modules, in this order of imports (none imports one above it):
``schema`` (field types, the section models, ``ScenarioFields``), ``layout`` (trajectories,
positions, neighbours), ``routes`` (static routes), ``checks`` (cross-field checks),
``yamlfile`` (YAML with line numbers, overrides, file:line messages). This module puts them
together and re-exports the schema's names, so ``from topologies.scenario import ...`` keeps
working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError, ValidationInfo, model_validator

from topologies import layout, routes
from topologies.checks import check_scenario
from topologies.errors import FieldErrors, ScenarioError
from topologies.schema import (
    CONGESTION_CONTROLS,
    EXTENSIONS,
    PROTOCOLS,
    BonnMotionMobility,
    Capture,
    CongestionControl,
    Endpoint,
    Event,
    FieldSize,
    GridPlacement,
    LinePlacement,
    Link,
    Mobility,
    MoveEvent,
    Ns2Mobility,
    PartitionEvent,
    Placement,
    PresetName,
    ProtocolName,
    Radio,
    RandomPlacement,
    RandomWaypoint,
    Routing,
    ScenarioFields,
    SetLinkEvent,
    StaticMobility,
    Stations,
    TcpCtlSettings,
    TcpFlow,
    TcpSettings,
    Traffic,
    UdpFlow,
)
from topologies.yamlfile import (
    PathKey,
    apply_overrides,
    parse_path,
    raise_scenario_error,
    read_yaml,
    validation_problems,
    yaml_line_map,
)

__all__ = [
    "CONGESTION_CONTROLS",
    "EXTENSIONS",
    "PROTOCOLS",
    "BonnMotionMobility",
    "Capture",
    "CongestionControl",
    "Endpoint",
    "Event",
    "FieldSize",
    "GridPlacement",
    "LinePlacement",
    "Link",
    "Mobility",
    "MoveEvent",
    "Ns2Mobility",
    "PartitionEvent",
    "Placement",
    "PresetName",
    "ProtocolName",
    "Radio",
    "RandomPlacement",
    "RandomWaypoint",
    "Routing",
    "Scenario",
    "ScenarioError",
    "SetLinkEvent",
    "StaticMobility",
    "Stations",
    "TcpCtlSettings",
    "TcpFlow",
    "TcpSettings",
    "Traffic",
    "UdpFlow",
    "apply_overrides",
    "load_scenario",
    "merge_documents",
    "scenario_document",
    "scenario_from_dict",
    "yaml_line_map",
]


class Scenario(ScenarioFields):
    """A validated scenario. Build it with ``load_scenario``; ``model_dump_json()`` round-trips."""

    def initial_positions(self, seed: int | None = None) -> dict[int, tuple[float, float]]:
        """Where every station is at t = 0 of the run (``topologies.layout``)."""
        return layout.initial_positions(self, seed)

    def neighbours(self, seed: int | None = None) -> dict[int, list[int]]:
        """Who reaches whom at t = 0 (``topologies.layout``)."""
        return layout.neighbours(self, seed)

    def static_routes(self, seed: int | None = None) -> dict[int, dict[int, int]]:
        """Next hops ``{station: {destination: next_hop}}`` for the static protocol
        (``topologies.routes``)."""
        return routes.static_routes(self, seed)

    @model_validator(mode="after")
    def _cross_check(self, info: ValidationInfo) -> Scenario:
        context = info.context if isinstance(info.context, dict) else {}
        base_dir = Path(context.get("base_dir", "."))
        problems = check_scenario(self, base_dir)
        if problems:
            raise FieldErrors(problems)
        return self


#: How deep ``extends`` may chain (a bound against runaway chains; cycles are refused anyway).
MAX_EXTENDS_DEPTH = 8


def merge_documents(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``base``: mappings merge key by key, any other value (a list, a number, a
    string, null) replaces the base's."""
    out = dict(base)
    for key, value in child.items():
        old = out.get(key)
        out[key] = merge_documents(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return out


def scenario_document(
    path: str | Path, _chain: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], dict[PathKey, int]]:
    """The scenario file as a mapping, with ``extends: <file>`` resolved (docs/scenarios.md
    "Extending a scenario": the named file, relative to this one, is read first and this file's
    fields are merged over it), and the line of each field of this file."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(file, [("", exc.strerror or str(exc))], f"{file}: {exc.strerror}") from None
    data, lines = read_yaml(text, file)
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise ScenarioError(
            file, [("", "expected a mapping")], f"{file}: expected a mapping of fields, got {kind}"
        )
    base = data.pop("extends", None)
    if base is None:
        return data, lines
    where = f"{file}:{lines.get(('extends',), 1)}"
    if not isinstance(base, str):
        raise ScenarioError(
            file, [("extends", "expected a file name")], f"{where}: extends: expected a file name"
        )
    base_path = (Path(path).parent / base).resolve()
    chain = (*_chain, Path(path).resolve())
    if base_path in chain or len(chain) > MAX_EXTENDS_DEPTH:
        reason = "a cycle" if base_path in chain else f"more than {MAX_EXTENDS_DEPTH} files deep"
        raise ScenarioError(file, [("extends", reason)], f"{where}: extends: {base} makes {reason}")
    base_data, _ = scenario_document(base_path, chain)
    return merge_documents(base_data, data), lines


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read, override and validate a scenario file; raise ``ScenarioError`` on any problem.

    ``overrides`` maps a field path (``"seed"``, ``"mobility.max_speed_mps"``,
    ``"traffic.tcp[0].cc"``) to the value that replaces whatever the file says there.
    Relative movement-file paths are resolved against the scenario file's folder.
    """
    file = str(path)
    data, lines = scenario_document(path)
    overridden: list[list[str | int]] = []
    if overrides:
        try:
            data = apply_overrides(data, overrides)
        except ValueError as exc:
            raise ScenarioError(file, [("", str(exc))], f"{file}: {exc}") from None
        overridden = [parse_path(k) for k in overrides]
    return _validate(data, file, Path(path).parent, lines, overridden)


def scenario_from_dict(data: dict[str, Any], source: str = "<dict>", base_dir: str | Path = ".") -> Scenario:
    """Validate an in-memory scenario (e.g. generated by a script) with ``load_scenario``'s errors.

    ``source`` stands in for the file name in messages; movement files are relative to ``base_dir``.
    """
    return _validate(data, source, Path(base_dir), {}, [])


def _validate(
    data: Any, file: str, base_dir: Path, lines: dict[PathKey, int], overridden: list[list[str | int]]
) -> Scenario:
    try:
        return Scenario.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise_scenario_error(file, validation_problems(exc, data), lines, overridden)
