"""Scenario files as YAML: line numbers, overrides by field path, and problems as file:line.

Duplicate keys are errors (PyYAML keeps the last one silently); every field path of the file maps
to its line, so that a problem reads ``topologies/chain5.yaml:14: traffic.tcp[0].dst: station 9
does not exist``; ``apply_overrides`` sets ``dotted.path[i]`` keys (sweeps, ``--set``).
``experiments/spec.py`` uses the same line map for sweep files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, NoReturn

import yaml
from pydantic import ValidationError

from topologies.errors import FieldErrors, ScenarioError


class _Loader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

PathKey = tuple[str, ...]


def _line_map(node: yaml.Node | None, prefix: PathKey, out: dict[PathKey, int]) -> None:
    """Map each field path (as strings) to its 1-based line in the file."""
    if node is None:
        return
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*prefix, str(key_node.value))
            out[key] = key_node.start_mark.line + 1
            _line_map(value_node, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*prefix, str(i)), out)


def yaml_line_map(node: yaml.Node | None) -> dict[PathKey, int]:
    """Each field path (as strings) of a composed YAML document -> its 1-based line (for error
    messages that name file:line; also used by experiments/spec.py for sweep files)."""
    out: dict[PathKey, int] = {}
    _line_map(node, (), out)
    return out


def read_yaml(text: str, file: str) -> tuple[Any, dict[PathKey, int]]:
    """Parse a YAML document (duplicate keys are errors) and map its field paths to lines."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        reason = " ".join(s for s in (exc.context, exc.problem) if s)
        raise ScenarioError(file, [("", reason)], f"{where}: YAML syntax error: {reason}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(file, [("", str(exc))], f"{file}: YAML error: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[PathKey, int] = {}
    _line_map(node, (), lines)
    return data, lines


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_path(key: str) -> list[str | int]:
    """``"traffic.tcp[0].cc"`` or ``"traffic.tcp.0.cc"`` -> ``["traffic", "tcp", 0, "cc"]``."""
    parts: list[str | int] = []
    for name, index in _PATH_PART.findall(key):
        if index:
            parts.append(int(index))
        elif name.isdigit():
            parts.append(int(name))
        else:
            parts.append(name)
    return parts


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set each ``dotted.path[i]`` key of ``overrides`` in a copy of ``data``; values replace."""
    import copy

    out = copy.deepcopy(data)
    for key, value in overrides.items():
        parts = parse_path(key)
        if not parts:
            raise ValueError(f"override {key!r}: empty path")
        cur: Any = out
        for i, part in enumerate(parts[:-1]):
            nxt = parts[i + 1]
            if isinstance(cur, list):
                if not isinstance(part, int) or not 0 <= part < len(cur):
                    raise ValueError(f"override {key!r}: no list item {part!r}")
                cur = cur[part]
            elif isinstance(cur, dict):
                if part not in cur or cur[part] is None:
                    cur[part] = [] if isinstance(nxt, int) else {}
                cur = cur[part]
            else:
                raise ValueError(f"override {key!r}: {part!r} is inside a plain value")
        last = parts[-1]
        if isinstance(cur, list) and isinstance(last, int) and 0 <= last < len(cur):
            cur[last] = value
        elif isinstance(cur, dict):
            cur[last] = value
        else:
            raise ValueError(f"override {key!r}: cannot set {last!r}")
    return out


def render_path(parts: Sequence[str | int]) -> str:
    """``["traffic", "tcp", 0, "cc"]`` -> ``"traffic.tcp[0].cc"`` (the inverse of ``parse_path``)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _locate(loc: tuple[str | int, ...], data: Any, names_model: bool) -> list[str | int]:
    """Turn a pydantic ``loc`` into a field path of the *input*, dropping union tags.

    ``names_model``: the loc is a (sub)model itself, so a trailing element that is not in the
    input is a union tag, not a missing field.
    """
    parts: list[str | int] = []
    cur = data
    for i, el in enumerate(loc):
        if isinstance(cur, dict):
            key: Any = el
            if key not in cur and isinstance(el, str) and el.lstrip("-").isdigit():
                key = int(el)
            if key in cur:
                parts.append(el if isinstance(el, str) and not el.isdigit() else int(el))
                cur = cur[key]
                continue
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            parts.append(el)
            cur = cur[el]
            continue
        if el == "[key]":
            continue
        if i == len(loc) - 1 and not names_model:
            parts.append(el)  # a missing or unknown field
        # else: a discriminated union's tag (e.g. "random_waypoint"): not part of the input
    return parts


_REASONS: Final[dict[str, str]] = {
    "extra_forbidden": "unknown key",
    "missing": "required field missing",
}


def validation_problems(exc: ValidationError, data: Any) -> list[tuple[list[str | int], str]]:
    """pydantic's errors as (field path of the input, reason), with a model validator's
    ``FieldErrors`` spread out under the model's path."""
    out: list[tuple[list[str | int], str]] = []
    for err in exc.errors():
        ctx = err.get("ctx") or {}
        inner = ctx.get("error")
        parts = _locate(tuple(err["loc"]), data, isinstance(inner, FieldErrors))
        if isinstance(inner, FieldErrors):
            for rel, reason in inner.problems:
                out.append(([*parts, *parse_path(rel)], reason))
            continue
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            disc = str(ctx.get("discriminator", "")).strip("'")
            if disc:
                parts.append(disc)
            if err["type"] == "union_tag_not_found":
                reason = "required field missing"
            else:
                reason = f"{ctx.get('tag')!r} is not one of {ctx.get('expected_tags')}"
        elif err["type"] in _REASONS:
            reason = _REASONS[err["type"]]
        else:
            reason = err["msg"].removeprefix("Value error, ")
            if err["type"] != "value_error" and not isinstance(err.get("input"), dict | list):
                reason += f" (got {err['input']!r})"
        out.append((parts, reason))
    return out


def raise_scenario_error(
    file: str,
    problems: list[tuple[list[str | int], str]],
    lines: dict[PathKey, int],
    overridden: list[list[str | int]],
) -> NoReturn:
    """Raise a ``ScenarioError`` with one ``file:line: path: reason`` line per problem (the line
    of the deepest part of the path the file has; none for a value from ``overridden`` paths)."""
    rendered: list[tuple[str, str]] = []
    msgs: list[str] = []
    for parts, reason in problems:
        path = render_path(parts)
        key = tuple(str(p) for p in parts)
        from_override = any(key[: len(o)] == tuple(str(p) for p in o) for o in overridden)
        line = None
        if not from_override:
            for n in range(len(key), -1, -1):
                if key[:n] in lines:
                    line = lines[key[:n]]
                    break
        where = f"{file}:{line}" if line is not None else file
        suffix = " (value from overrides)" if from_override else ""
        rendered.append((path, reason))
        msgs.append(f"{where}: {path or '<top>'}: {reason}{suffix}")
    raise ScenarioError(file, rendered, "\n".join(msgs))
