"""Routing profiles: which code a DSR or AODV core behaves as (issue 46, docs/dsr.md and
docs/aodv.md "Profiles").

A profile is a named set of parameter values of the protocol's parameter dataclass
(``DsrParams``, ``AodvParams``): timer constants and behaviour switches. Each protocol's
``params`` module owns its table (``PROFILES``), one entry per profile with the fields whose value
differs from the dataclass default; the dataclass defaults are the ``legacy`` behaviour (what every
run before profiles ran, so the earlier rows keep their meaning). A scenario names the profile in
``routing.profile``; its ``routing.params`` override single fields on top.

- ``ns2``: ns-2's code as the papers ran it (each value cites the function and release), the
  default, since every paper ran ns-2 or a DSR/AODV that the paper says matches it;
- ``rfc``: RFC 4728 / RFC 3561 where ns-2 differs;
- ``legacy``: the testbed's behaviour before profiles (neither of the two in places; the docs'
  tables say where).

This module is I/O-free and knows no protocol: the protocol modules call ``resolve_params``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, TypeVar

from nodes.core.protocol import ParamError, params_from_dict


class RoutingProfile(StrEnum):
    NS2 = "ns2"
    RFC = "rfc"
    LEGACY = "legacy"


DEFAULT_PROFILE: Final = RoutingProfile.NS2
"""What a scenario runs when it names no profile: the code the papers ran."""

ProfileTable = Mapping[RoutingProfile, Mapping[str, Any]]
P = TypeVar("P")


def check_table(cls: type[Any], table: ProfileTable) -> None:
    """Every profile has an entry and names only fields of ``cls`` (checked at import)."""
    names = {f.name for f in dataclasses.fields(cls)}
    for profile in RoutingProfile:
        if profile not in table:
            raise AssertionError(f"{cls.__name__}: no entry for profile {profile.value}")
        unknown = sorted(set(table[profile]) - names)
        if unknown:
            raise AssertionError(f"{cls.__name__} profile {profile.value}: unknown fields {unknown}")


def resolve_params(
    cls: type[P],
    table: ProfileTable,
    profile: RoutingProfile | str,
    explicit: Mapping[str, Any] | None,
    where: str = "params",
) -> P:
    """The parameters a core runs: the dataclass defaults, the profile's values on top, then the
    scenario's explicit ``params``. ``ParamError`` names ``where`` for an unknown profile, an
    unknown field or a bad value."""
    try:
        prof = RoutingProfile(profile)
    except ValueError:
        known = ", ".join(p.value for p in RoutingProfile)
        raise ParamError(f"{where}: unknown routing profile {profile!r}; known: {known}") from None
    values = {**table[prof], **dict(explicit or {})}
    return params_from_dict(cls, values, where)


def params_digest(params: object) -> str:
    """12 hex digits of every field's value: two runs with the same digest ran the same routing
    parameters and switches (a column of every results row)."""
    fields = dataclasses.asdict(params)  # type: ignore[call-overload]
    canon = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:12]


def routing_profile_summary(protocol: str, profile: str, explicit: Mapping[str, Any]) -> dict[str, Any]:
    """``summary.json`` ``routing_profile``: the profile, the digest of the parameters the cores
    ran and every field with its value and its source (``default``, ``profile`` or ``scenario``);
    for a protocol without profiles only ``{"profile": None}``."""
    from nodes.protocols import effective_params  # the protocol registry imports this module

    params = effective_params(protocol, profile, explicit)
    if params is None:
        return {"profile": None, "digest": None}
    module = importlib.import_module(f"nodes.protocols.{protocol}.params")
    table: ProfileTable = module.PROFILES
    preset = table[RoutingProfile(profile)]
    return {
        "profile": profile,
        "digest": params_digest(params),
        "params": {
            k: {
                "value": v,
                "source": "scenario" if k in explicit else "profile" if k in preset else "default",
            }
            for k, v in dataclasses.asdict(params).items()  # type: ignore[call-overload]
        },
    }
