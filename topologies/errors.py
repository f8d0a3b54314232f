"""Errors raised while reading scenario and movement files.

Every message names the file, where in it (a line or a field path) and the reason, one problem per
line, like a compiler: ``topologies/chain5.yaml:14: traffic.tcp[0].dst: station 9 does not exist
(stations are 1..5)``.
"""

from __future__ import annotations


class ScenarioError(Exception):
    """A scenario file that cannot be used: YAML syntax, unknown key, bad value, inconsistency.

    ``problems`` holds one ``(field_path, reason)`` per problem (``field_path`` is ``""`` for a
    problem with the file itself); ``str(error)`` is the full, multi-line message.
    """

    def __init__(self, file: str, problems: list[tuple[str, str]], message: str) -> None:
        super().__init__(message)
        self.file = file
        self.problems = problems


class FieldErrors(ValueError):
    """Raised by a model validator: problems as (path relative to the model, reason).

    ``topologies.yamlfile`` turns them into a ``ScenarioError`` whose paths start at the
    document's root and whose messages name the file and line."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{p}: {r}" for p, r in problems))
        self.problems = problems


class MovementFileError(Exception):
    """An ns-2 or BonnMotion movement file that cannot be read: ``<file>:<line>: <reason>``."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        super().__init__(f"{source}:{line}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason
