"""Sweep files: the schema, validation on load, and the expansion into run points.

A sweep is data (issue 2, item 5; STYLE "Experiments and results"): a base scenario, overrides set
on every run, a grid of overrides (dotted field path -> list of values), optional named variants
(an axis whose values are labelled bundles of overrides), exclusions, and the seeds. Its cartesian
product x seeds is the list of run points, in a fixed order. Each point has a stable id, a hash of
the base scenario path, its overrides and its seed, so a resumed or sharded sweep finds the same
points again. docs/experiments.md documents the format.

Errors name the file, the line, the field and the reason, like scenario errors:
``experiments/sweeps/x.yaml:7: grid.routing.protocol: expected a non-empty list of values``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationError,
    model_validator,
)

from experiments.rows import LEGACY_PROFILE, ROW_COLUMNS
from nodes.protocols import effective_params
from nodes.protocols.profiles import RoutingProfile, params_digest
from topologies.scenario import ScenarioError, scenario_document
from topologies.schema import Routing, TcpSettings
from topologies.yamlfile import apply_overrides, render_path, yaml_line_map

#: Sweep-file keys that name fields of the scenario are dotted paths, as ``load_scenario`` takes them.
_PATH_PATTERN: Final = r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*|\[\d+\])*$"

DottedPath = Annotated[str, StringConstraints(pattern=_PATH_PATTERN)]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$")]
#: Where in a sweep file: keys and list indices from the top.
Loc = tuple[str | int, ...]
Label = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")]


class SweepError(Exception):
    """A sweep file that cannot be used. ``problems``: ``(field path, reason)`` pairs."""

    def __init__(self, file: str, problems: list[tuple[str, str]], message: str) -> None:
        super().__init__(message)
        self.file = file
        self.problems = problems


class SeedRange(BaseModel):
    """``seeds: {first: 1, count: 10}`` is seeds 1..10."""

    model_config = ConfigDict(extra="forbid")
    first: Annotated[StrictInt, Field(ge=0)] = 1
    count: Annotated[StrictInt, Field(ge=1)]


class Until(BaseModel):
    """When a sequential sweep stops adding seeds to a comparison (issue 10, item 3).

    Each value of ``axis`` other than ``baseline`` is compared with the baseline at every assignment
    of the other axes (a *block*), on ``metric``, paired by seed: the relative change 100 x
    (treatment / baseline - 1) with its ``confidence`` interval (``experiments.stats``). A block
    gets more seeds until every comparison in it has an interval that excludes zero, or one
    narrower than ``half_width_pct`` percentage points on each side, or the block has ``max`` seeds.
    """

    model_config = ConfigDict(extra="forbid")
    metric: str
    axis: str
    baseline: Any
    half_width_pct: float | None = None
    confidence: float = 0.95


class SequentialSeeds(BaseModel):
    """``seeds: {first: 1, min: 5, max: 50, step: 1, until: {...}}``: at least ``min`` and at most
    ``max`` paired seeds per block, ``step`` more at a time, until ``until`` is met."""

    model_config = ConfigDict(extra="forbid")
    first: Annotated[StrictInt, Field(ge=0)] = 1
    min: StrictInt
    max: StrictInt
    step: StrictInt = 1
    until: Until
    #: ``repeated``: the interval at ``until.confidence`` after every seed (the earlier sweeps'
    #: rule: about 15 % false effects under the null, docs/experiments.md); ``group-sequential``:
    #: looks at min, min + step, ..., max with O'Brien-Fleming-type alpha spending
    #: (``experiments.stats.SequentialDesign``: at most 5 % false effects).
    design: Literal["repeated", "group-sequential"] = "repeated"


#: The longest sequential sweep a file may ask for, per block (a bound, not a plan).
MAX_SEQUENTIAL_SEEDS: Final = 1000


class Sweep(BaseModel):
    """A validated sweep file. Build it with ``load_sweep``."""

    model_config = ConfigDict(extra="forbid")

    #: Results go to ``<out>/<experiment>/``.
    experiment: Name
    description: str = ""
    #: Base scenario file, relative to the working directory (the repository root).
    scenario: str
    #: Which paper's headline numbers ``experiments.compare`` puts beside ours (``experiments.papers``).
    paper: str | None = None
    #: Which part of the paper's evaluation this sweep runs (``experiments.papers``: a paper with
    #: several scenarios, e.g. Liu & Singh's congestion and partition experiments); its report
    #: compares that part's claims only. "" (default): the main one.
    part: str = ""
    seeds: list[Annotated[StrictInt, Field(ge=0)]] | SeedRange | SequentialSeeds
    #: Overrides applied to every point (dotted path -> value).
    set: dict[DottedPath, Any] = Field(default_factory=dict)
    #: Axes of the grid: dotted path -> the values it takes.
    grid: dict[DottedPath, list[Any]] = Field(default_factory=dict)
    #: Named axes whose values are labelled bundles of overrides: axis -> label -> {path: value}.
    variants: dict[Name, dict[Label, dict[DottedPath, Any]]] = Field(default_factory=dict)
    #: Points to leave out: each entry is a partial assignment of axes (grid values or variant labels).
    exclude: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Sweep:
        problems: list[tuple[Loc, str]] = []
        seeds = self.seed_list()
        if not seeds:
            problems.append((("seeds",), "no seeds"))
        dup = sorted({s for s in seeds if seeds.count(s) > 1})
        if dup:
            problems.append((("seeds",), f"seed {dup[0]} listed twice"))
        for path, values in self.grid.items():
            if not values:
                problems.append((("grid", path), "expected a non-empty list of values"))
            if path in self.set:
                problems.append((("grid", path), "also in set: a field is either fixed or an axis"))
            for i, v in enumerate(values):
                if v in values[:i]:
                    problems.append((("grid", path, i), f"value {v!r} listed twice"))
        for axis, bundles in self.variants.items():
            if axis in self.grid:
                problems.append((("variants", axis), "also a grid axis"))
            if not bundles:
                problems.append((("variants", axis), "expected at least one labelled bundle"))
            for name, overrides in bundles.items():
                for path in overrides:
                    if path in self.grid or path in self.set:
                        where = "grid" if path in self.grid else "set"
                        problems.append((("variants", axis, name, path), f"also in {where}"))
        axes = self.axes()
        for axis in axes:
            if axis in ROW_COLUMNS:  # a grid path too: duration_s is a scenario field and a column
                where = "grid" if axis in self.grid else "variants"
                problems.append(
                    (
                        (where, axis),
                        f"the name of a rows column (experiments.rows): rename the axis, e.g. n_{axis}",
                    )
                )
        if isinstance(self.seeds, SequentialSeeds):
            problems.extend(self._check_sequential(self.seeds, axes))
        for i, ex in enumerate(self.exclude):
            for key, value in ex.items():
                if key not in axes:
                    problems.append((("exclude", i, key), f"not an axis (axes: {', '.join(axes) or 'none'})"))
                elif not any(label(value) == label(v) for v in axes[key]):
                    problems.append((("exclude", i, key), f"{value!r} is not one of the axis' values"))
        if self.part:
            from experiments.papers import PAPERS

            paper = PAPERS.get(self.paper or "")
            if paper is None:
                problems.append((("part",), f"a part needs a known paper (paper: {self.paper!r})"))
            elif self.part not in paper.parts:
                known = ", ".join(p for p in paper.parts if p)
                problems.append(
                    (("part",), f"{self.part!r} is not a part of {paper.key} (parts: {known or 'none'})")
                )
        if problems:
            raise _Problems(problems)
        return self

    @staticmethod
    def _check_sequential(seq: SequentialSeeds, axes: dict[str, list[Any]]) -> list[tuple[Loc, str]]:
        from experiments.aggregate import DERIVED_METRICS, METRICS

        out: list[tuple[Loc, str]] = []
        if seq.min < 2:
            out.append((("seeds", "min"), f"{seq.min}: at least 2 paired seeds are needed for an interval"))
        if seq.max < seq.min:
            out.append((("seeds", "max"), f"{seq.max} is below min {seq.min}"))
        if seq.max > MAX_SEQUENTIAL_SEEDS:
            out.append((("seeds", "max"), f"{seq.max} is above the limit {MAX_SEQUENTIAL_SEEDS}"))
        if seq.step < 1:
            out.append((("seeds", "step"), f"{seq.step}: must be at least 1"))
        u = seq.until
        known = [*METRICS, *DERIVED_METRICS]
        if u.metric not in known:
            out.append(
                (("seeds", "until", "metric"), f"unknown metric {u.metric!r} (known: {', '.join(known)})")
            )
        if u.axis not in axes:
            out.append(
                (("seeds", "until", "axis"), f"{u.axis!r} is not an axis (axes: {', '.join(axes) or 'none'})")
            )
        elif not any(label(u.baseline) == label(v) for v in axes[u.axis]):
            out.append((("seeds", "until", "baseline"), f"{u.baseline!r} is not one of {u.axis}'s values"))
        elif len(axes[u.axis]) < 2:
            out.append((("seeds", "until", "axis"), f"{u.axis} has one value: nothing to compare"))
        if u.half_width_pct is not None and not 0.0 < u.half_width_pct < 1000.0:
            out.append((("seeds", "until", "half_width_pct"), f"{u.half_width_pct}: must be in (0, 1000) %"))
        if not 0.5 <= u.confidence < 1.0:
            out.append((("seeds", "until", "confidence"), f"{u.confidence}: must be in [0.5, 1)"))
        return out

    def seed_list(self) -> list[int]:
        """Every seed a point may run with (for a sequential sweep: up to ``max``)."""
        if isinstance(self.seeds, SeedRange):
            return list(range(self.seeds.first, self.seeds.first + self.seeds.count))
        if isinstance(self.seeds, SequentialSeeds):
            return list(range(self.seeds.first, self.seeds.first + self.seeds.max))
        return list(self.seeds)

    @property
    def sequential(self) -> SequentialSeeds | None:
        return self.seeds if isinstance(self.seeds, SequentialSeeds) else None

    def axes(self) -> dict[str, list[Any]]:
        """Every axis with its values, in declaration order: grid paths, then variant names (labels)."""
        out: dict[str, list[Any]] = {path: list(values) for path, values in self.grid.items()}
        for axis, bundles in self.variants.items():
            out[axis] = list(bundles)
        return out


class _Problems(ValueError):
    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        super().__init__("; ".join(f"{render_path(p)}: {r}" for p, r in problems))
        self.problems = problems


def label(value: Any) -> str:
    """How a parameter value is written in CSV files, tables and plots: lists as ``a+b`` (``none`` if empty)."""
    if isinstance(value, list | tuple):
        return "+".join(label(v) for v in value) if value else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


@dataclass(frozen=True, slots=True)
class Point:
    """One run of a sweep: an assignment of every axis, the overrides it means, and a seed.

    ``index`` is the point's position in the sweep's expansion order (shards use it);
    ``params`` maps each axis to its value (a variant axis to its label).
    """

    index: int
    point_id: str
    params: dict[str, Any]
    overrides: dict[str, Any]
    seed: int

    @property
    def group_key(self) -> tuple[tuple[str, str], ...]:
        """The point without its seed: runs with the same key are averaged together."""
        return tuple((k, label(v)) for k, v in self.params.items())


def point_id(
    scenario: str,
    overrides: Mapping[str, Any],
    seed: int,
    tcp_digest: str | None = None,
    routing_digest: str | None = None,
) -> str:
    """Stable 12-hex id of (base scenario path, overrides, seed) and, unless the point runs the
    legacy TCP profile, the digest of its TCP settings (``tcp_digest``), and unless it runs static
    routing or the legacy routing profile, the digest of its routing parameters
    (``routing_digest``): a point whose TCP or routing behaviour changes is a new point, so its
    rows never join those of other code. Legacy points keep the ids they had before profiles
    existed (their rows in git stay theirs). Key order does not matter."""
    doc: dict[str, Any] = {"scenario": Path(scenario).as_posix(), "overrides": overrides, "seed": seed}
    if tcp_digest is not None:
        doc["tcp"] = tcp_digest
    if routing_digest is not None:
        doc["routing"] = routing_digest
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:12]


def tcp_digest(scenario: str, overrides: Mapping[str, Any]) -> str | None:
    """The digest of the TCP a point runs (``EffectiveTcp.digest``), None for the legacy profile,
    for a scenario file that cannot be read or a ``tcp`` block that does not validate (the
    sweep's scenario check reports those)."""
    return _tcp_digest(scenario, _overrides_key(overrides))


def _overrides_key(overrides: Mapping[str, Any]) -> str:
    """A point's overrides as a hashable cache key (canonical JSON)."""
    return json.dumps(dict(overrides), sort_keys=True, default=str)


@functools.lru_cache(maxsize=256)
def _point_document(scenario: str, overrides_json: str) -> dict[str, Any] | None:
    """A point's scenario document (its ``extends`` chain merged) with its overrides applied, read
    once per point for both digests; None for a file that cannot be read or a bad override (the
    sweep's scenario check reports those). Callers only read it."""
    try:
        data, _ = scenario_document(scenario)
        return apply_overrides(data, json.loads(overrides_json))
    except (ScenarioError, ValueError):
        return None


@functools.lru_cache(maxsize=256)
def _tcp_digest(scenario: str, overrides_json: str) -> str | None:
    data = _point_document(scenario, overrides_json)
    if data is None:
        return None
    try:
        settings = TcpSettings.model_validate(data.get("tcp") or {})
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None
    eff = settings.effective
    return None if eff.profile == LEGACY_PROFILE else eff.digest()


def routing_digest(scenario: str, overrides: Mapping[str, Any]) -> str | None:
    """The digest of the routing parameters a point's DSR or AODV cores run
    (``nodes.protocols.profiles.params_digest``), None for static routing, the legacy profile, a
    scenario file that cannot be read or routing settings that do not validate."""
    return _routing_digest(scenario, _overrides_key(overrides))


@functools.lru_cache(maxsize=256)
def _routing_digest(scenario: str, overrides_json: str) -> str | None:
    data = _point_document(scenario, overrides_json)
    if data is None:
        return None
    try:
        routing = Routing.model_validate(data.get("routing") or {})
        params = effective_params(routing.protocol, routing.profile, routing.params)
    except ValueError:  # ValidationError and ParamError are ValueErrors
        return None
    if params is None or routing.profile == RoutingProfile.LEGACY.value:
        return None
    return params_digest(params)


def _excluded(sweep: Sweep, params: Mapping[str, Any]) -> bool:
    return any(all(label(params[k]) == label(v) for k, v in ex.items()) for ex in sweep.exclude)


def expand(sweep: Sweep) -> list[Point]:
    """The sweep's run points: the product of the axes in declaration order (last axis fastest),
    seeds innermost, excluded combinations left out. ``index`` counts the points kept."""
    axes = sweep.axes()
    names = list(axes)
    points: list[Point] = []
    for combo in itertools.product(*(axes[n] for n in names)) if names else [()]:
        params = dict(zip(names, combo, strict=True))
        if _excluded(sweep, params):
            continue
        overrides: dict[str, Any] = dict(sweep.set)
        for name, value in params.items():
            if name in sweep.variants:
                overrides.update(sweep.variants[name][value])
            else:
                overrides[name] = value
        tcp = tcp_digest(sweep.scenario, overrides)
        routing = routing_digest(sweep.scenario, overrides)
        for seed in sweep.seed_list():
            pid = point_id(sweep.scenario, overrides, seed, tcp, routing)
            points.append(Point(len(points), pid, dict(params), dict(overrides), seed))
    return points


def groups(points: list[Point]) -> Iterator[list[Point]]:
    """Points grouped by ``group_key`` (same parameters, different seeds), in expansion order."""
    seen: dict[tuple[tuple[str, str], ...], list[Point]] = {}
    for p in points:
        seen.setdefault(p.group_key, []).append(p)
    yield from seen.values()


# --------------------------------------------------------------------------------------------
# Loading


def _fail(file: str, problems: list[tuple[Loc, str]], lines: dict[tuple[str, ...], int]) -> SweepError:
    msgs, rendered = [], []
    for loc, reason in problems:
        key = tuple(str(p) for p in loc)
        line = next((lines[key[:n]] for n in range(len(key), -1, -1) if key[:n] in lines), None)
        where = f"{file}:{line}" if line else file
        path = render_path(loc)
        rendered.append((path, reason))
        msgs.append(f"{where}: {path or '<top>'}: {reason}")
    return SweepError(file, rendered, "\n".join(msgs))


def parse_sweep(text: str, file: str = "<sweep>", check_scenario: bool = True) -> Sweep:
    """Validate sweep YAML ``text``; ``file`` names it in errors. Raises ``SweepError``."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}" if mark else file
        reason = " ".join(s for s in (exc.context, exc.problem) if s)
        raise SweepError(file, [("", reason)], f"{where}: YAML syntax error: {reason}") from None
    lines = yaml_line_map(node)
    if not isinstance(data, dict):
        raise SweepError(file, [("", "expected a mapping")], f"{file}: expected a mapping of fields")
    try:
        sweep = Sweep.model_validate(data)
    except ValidationError as exc:
        problems: list[tuple[Loc, str]] = []
        for err in exc.errors():
            inner = (err.get("ctx") or {}).get("error")
            if isinstance(inner, _Problems):
                problems.extend(inner.problems)
                continue
            loc = tuple(err["loc"])
            if loc[:1] == ("seeds",) and len(loc) > 1:
                # The seeds union: report only the branch the file chose (a list or a mapping).
                seeds = data.get("seeds")
                if isinstance(seeds, dict):
                    branch = "SequentialSeeds" if "until" in seeds or "min" in seeds else "SeedRange"
                else:
                    branch = "list[constrained-int]"
                if loc[1] != branch:
                    continue
                loc = ("seeds", *loc[2:])
            reason = {"extra_forbidden": "unknown key", "missing": "required field missing"}.get(
                err["type"], err["msg"].removeprefix("Value error, ")
            )
            if err["type"] == "string_pattern_mismatch":
                reason = f"{err['input']!r} is not a valid name (expected pattern {err['ctx']['pattern']})"
            if loc[-1:] == ("[key]",):
                loc = loc[:-2] + (str(err["input"]),) if len(loc) >= 2 else loc[:-1]
                reason = (
                    f"{err['input']!r} is not a dotted field path like routing.protocol or traffic.tcp[0].cc"
                )
            problems.append((loc, reason))
        raise _fail(file, problems, lines) from None
    if check_scenario and not Path(sweep.scenario).is_file():
        raise _fail(file, [(("scenario",), f"file {sweep.scenario!r} does not exist")], lines)
    return sweep


def load_sweep(path: str | Path, check_scenario: bool = True) -> Sweep:
    """Read and validate a sweep file. Raises ``SweepError`` naming file, line, field and reason."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SweepError(file, [("", exc.strerror or str(exc))], f"{file}: {exc.strerror}") from None
    return parse_sweep(text, file, check_scenario)


def check_points(sweep: Sweep, points: list[Point]) -> list[str]:
    """Load the base scenario with each distinct set of overrides (catches a misspelt path or a
    value the scenario rejects before any run starts); returns one message per failing set."""
    from topologies.errors import ScenarioError
    from topologies.scenario import load_scenario

    errors: list[str] = []
    seen: set[str] = set()
    for p in points:
        key = json.dumps(p.overrides, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            load_scenario(sweep.scenario, p.overrides)
        except ScenarioError as exc:
            params = ", ".join(f"{k}={label(v)}" for k, v in p.params.items())
            errors.append(f"point {params or '(no axes)'}:\n  " + str(exc).replace("\n", "\n  "))
    return errors
