"""``mininet.log``: ``setLogLevel``, ``info``, ``debug``, ``warn``, ``error``, ``output``.

Mininet's messages carry their own newlines, so the handler adds none.
"""

from __future__ import annotations

import logging
import sys

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "output": 25,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
lg = logging.getLogger("mininet")
lg.propagate = False
_handler = logging.StreamHandler(sys.stdout)
_handler.terminator = ""
_handler.setFormatter(logging.Formatter("%(message)s"))
lg.addHandler(_handler)
lg.setLevel(25)


def setLogLevel(level: str = "info") -> None:  # noqa: N802 - Mininet's name
    if level not in LEVELS:
        raise ValueError(f"setLogLevel: unknown level {level!r} (known: {', '.join(LEVELS)})")
    lg.setLevel(LEVELS[level])


def _join(args: tuple[object, ...]) -> str:
    return " ".join(str(a) for a in args)


def info(*args: object) -> None:
    lg.info("%s", _join(args))


def output(*args: object) -> None:
    lg.log(25, "%s", _join(args))


def debug(*args: object) -> None:
    lg.debug("%s", _join(args))


def warn(*args: object) -> None:
    lg.warning("%s", _join(args))


warning = warn


def error(*args: object) -> None:
    lg.error("%s", _join(args))
