"""Radio presets as far as scenario files need them: the nominal range used for ``routes: auto``.

The medium (issue 6, item 1) owns the propagation models and every PHY/MAC parameter
(``medium/src/params.rs``, docs/medium.md); this module is their one Python owner. It restates the
parameters that decide a range (with the medium's field names, so that ``radio.overrides`` apply
here as they do in the medium) and derives the ranges from them, never as a second literal:

- ``two_ray_ground`` (``ns2-wavelan``, the papers' setting): ns-2's two-ray ground model. Beyond
  the crossover distance ``4 pi ht hr / lambda`` (86.2 m at 914 MHz)
  ``Pr = Pt Gt Gr ht^2 hr^2 / (d^4 L)``, so the distance at which ``Pr`` falls to a threshold is
  ``(Pt Gt Gr ht^2 hr^2 / (threshold L)) ** (1/4)``: 250 m for RXThresh 3.652e-10 W and 550 m for
  CSThresh 1.559e-11 W. Below the crossover, Friis.
- ``free_space``: Friis, ``Pr = Pt Gt Gr lambda^2 / ((4 pi d)^2 L)``.
- ``log_distance`` (``wmediumd``, Mininet-WiFi's defaults): ``Pr = Pt + Gt + Gr - PL0 -
  10 n log10(d / d0)`` with ``PL0`` the free-space loss at ``d0`` unless given; the range is where
  ``Pr`` falls to the threshold. ``log_normal_shadowing``: the same median (the shadowing term is
  zero-mean).

Every model uses the physical speed of light, as the medium does. ``tests/fixtures/radio_ranges.json``
holds ranges computed here for a set of presets and overrides; ``medium/tests/radio_ranges.rs``
checks that the medium's models reach the same ranges, and ``tests/unit/test_radio.py`` that the
file is what this module computes (``python3 -m topologies.radio > tests/fixtures/radio_ranges.json``
rewrites it).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

SPEED_OF_LIGHT_MPS: Final = 299_792_458.0
"""c in vacuum, m/s (ns-2 rounds it to 3e8; the range at 250 m is the same, see docs/medium.md)."""

# ns-2 WaveLAN 914 MHz (ns-default.tcl, Phy/WirelessPhy and Antenna/OmniAntenna defaults; the CMU
# Monarch values the DSR/AODV papers use). Also the defaults of nodes/extensions/neighbour_table.py.
NS2_FREQUENCY_HZ: Final = 914e6
NS2_TX_POWER_W: Final = 0.28183815
"""Pt_ (24.5 dBm)."""
NS2_RX_THRESH_W: Final = 3.652e-10
"""RXThresh_: decode range 250 m."""
NS2_CS_THRESH_W: Final = 1.559e-11
"""CSThresh_: carrier-sense range 550 m."""
NS2_ANTENNA_HEIGHT_M: Final = 1.5
"""Antenna/OmniAntenna Z_ of both stations."""
NS2_SYSTEM_LOSS: Final = 1.0
"""L_."""

PROPAGATION_KINDS: Final = (
    "free_space",
    "log_distance",
    "log_normal_shadowing",
    "two_ray_ground",
    "itu_indoor",
)
"""The medium's ``propagation`` values (``PropagationKind``)."""


def w_to_dbm(w: float) -> float:
    return 10 * math.log10(w) + 30


def dbm_to_w(dbm: float) -> float:
    return float(10 ** ((dbm - 30) / 10))


@dataclass(frozen=True, slots=True)
class RadioModel:
    """The parameters of ``medium/src/params.rs`` ``RadioParams`` that decide a station's range
    (same names, units and meanings); the others (MAC timing, error model) do not matter here."""

    propagation: str
    frequency_hz: float
    system_loss: float
    antenna_height_m: float
    tx_gain_dbi: float
    rx_gain_dbi: float
    path_loss_exponent: float
    reference_distance_m: float
    reference_loss_db: float | None
    speed_of_light_mps: float
    tx_power_dbm: float
    rx_threshold_dbm: float
    cs_threshold_dbm: float

    def __post_init__(self) -> None:
        if self.propagation not in PROPAGATION_KINDS:
            raise ValueError(f"propagation {self.propagation!r} is not one of {', '.join(PROPAGATION_KINDS)}")
        for name in (
            "frequency_hz",
            "system_loss",
            "antenna_height_m",
            "reference_distance_m",
            "speed_of_light_mps",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if not self.path_loss_exponent > 0:
            raise ValueError("path_loss_exponent must be > 0")

    @property
    def wavelength_m(self) -> float:
        return self.speed_of_light_mps / self.frequency_hz

    @property
    def crossover_m(self) -> float:
        """Two-ray ground: ``4 pi ht hr / lambda``."""
        return 4 * math.pi * self.antenna_height_m**2 / self.wavelength_m

    @property
    def pl0_db(self) -> float:
        """Log-distance path loss at ``reference_distance_m`` (free space there unless given)."""
        if self.reference_loss_db is not None:
            return self.reference_loss_db
        return 20 * math.log10(4 * math.pi * self.reference_distance_m / self.wavelength_m) + 10 * math.log10(
            self.system_loss
        )

    def distance_for_dbm(self, threshold_dbm: float, tx_power_dbm: float | None = None) -> float:
        """Distance at which the (median) received power falls to ``threshold_dbm``, m."""
        pt_dbm = self.tx_power_dbm if tx_power_dbm is None else tx_power_dbm
        # Linear gain the path may lose: Pt Gt Gr / (threshold L).
        budget_db = pt_dbm + self.tx_gain_dbi + self.rx_gain_dbi - threshold_dbm
        if self.propagation in ("log_distance", "log_normal_shadowing"):
            return float(
                self.reference_distance_m * 10 ** ((budget_db - self.pl0_db) / (10 * self.path_loss_exponent))
            )
        if self.propagation == "itu_indoor":
            raise ValueError("no nominal range for propagation itu_indoor: set radio.nominal_range_m")
        ratio = 10 ** (budget_db / 10) / self.system_loss
        friis = self.wavelength_m / (4 * math.pi) * math.sqrt(ratio)
        if self.propagation == "free_space":
            return friis
        two_ray = float((ratio * self.antenna_height_m**4) ** 0.25)
        # ns-2 TwoRayGround: Friis below the crossover, two-ray at and beyond it.
        return two_ray if two_ray >= self.crossover_m else friis

    @property
    def range_m(self) -> float:
        """Decode range: where the received power falls to ``rx_threshold_dbm``."""
        return self.distance_for_dbm(self.rx_threshold_dbm)

    @property
    def cs_range_m(self) -> float:
        """Carrier-sense range: where the received power falls to ``cs_threshold_dbm``."""
        return self.distance_for_dbm(self.cs_threshold_dbm)

    def with_overrides(self, overrides: Mapping[str, Any]) -> RadioModel:
        """This model with the range-relevant entries of ``radio.overrides`` applied (the medium
        checks every name; the others do not change a range)."""
        fields = {f.name for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            if key not in fields:
                continue
            if key == "propagation":
                if not isinstance(value, str):
                    raise ValueError(f"propagation must be a string, not {value!r}")
            elif not (value is None and key == "reference_loss_db"):
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"{key} must be a number, not {value!r}")
                value = float(value)
            changes[key] = value
        return dataclasses.replace(self, **changes)


NS2_WAVELAN: Final = RadioModel(
    propagation="two_ray_ground",
    frequency_hz=NS2_FREQUENCY_HZ,
    system_loss=NS2_SYSTEM_LOSS,
    antenna_height_m=NS2_ANTENNA_HEIGHT_M,
    tx_gain_dbi=0.0,
    rx_gain_dbi=0.0,
    path_loss_exponent=2.0,
    reference_distance_m=1.0,
    reference_loss_db=None,
    speed_of_light_mps=SPEED_OF_LIGHT_MPS,
    tx_power_dbm=w_to_dbm(NS2_TX_POWER_W),
    rx_threshold_dbm=w_to_dbm(NS2_RX_THRESH_W),
    cs_threshold_dbm=w_to_dbm(NS2_CS_THRESH_W),
)

WMEDIUMD: Final = RadioModel(
    propagation="log_distance",
    frequency_hz=2.412e9,
    system_loss=1.0,
    antenna_height_m=1.0,
    tx_gain_dbi=5.0,
    rx_gain_dbi=5.0,
    path_loss_exponent=3.0,
    reference_distance_m=1.0,
    reference_loss_db=None,
    speed_of_light_mps=SPEED_OF_LIGHT_MPS,
    tx_power_dbm=15.0,
    rx_threshold_dbm=-90.0,
    cs_threshold_dbm=-90.0,
)
"""Mininet-WiFi / wmediumd: log-distance, exponent 3, 2.412 GHz, 5 dBi, 15 dBm ad hoc, CCA -90 dBm."""

PRESETS: Final[dict[str, RadioModel]] = {"ns2-wavelan": NS2_WAVELAN, "wmediumd": WMEDIUMD}


def radio_model(preset: str, overrides: Mapping[str, Any] | None = None) -> RadioModel:
    """The range model of a scenario's ``radio`` section (``preset`` and ``overrides``)."""
    model = PRESETS[preset]
    return model.with_overrides(overrides) if overrides else model


FIXTURE_CASES: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("ns2-wavelan", {}),
    ("ns2-wavelan", {"tx_power_dbm": 30.0}),
    ("ns2-wavelan", {"rx_threshold_dbm": -70.0, "cs_threshold_dbm": -85.0}),
    ("ns2-wavelan", {"rx_threshold_dbm": -45.0}),
    ("ns2-wavelan", {"antenna_height_m": 0.5, "system_loss": 2.0}),
    ("ns2-wavelan", {"frequency_hz": 2.4e9, "rx_threshold_dbm": -50.0}),
    ("ns2-wavelan", {"propagation": "free_space", "rx_threshold_dbm": -75.0}),
    ("wmediumd", {}),
    ("wmediumd", {"path_loss_exponent": 3.5, "tx_power_dbm": 20.0, "rx_threshold_dbm": -85.0}),
    (
        "wmediumd",
        {"propagation": "log_normal_shadowing", "shadowing_sigma_db": 4.0, "reference_loss_db": 46.0},
    ),
)
"""Presets and overrides whose ranges both languages must agree on (tests/fixtures/radio_ranges.json)."""


def range_fixture() -> list[dict[str, Any]]:
    """``[{preset, overrides, range_m, cs_range_m}, ...]`` for :data:`FIXTURE_CASES`."""
    out: list[dict[str, Any]] = []
    for preset, overrides in FIXTURE_CASES:
        m = radio_model(preset, overrides)
        out.append(
            {"preset": preset, "overrides": overrides, "range_m": m.range_m, "cs_range_m": m.cs_range_m}
        )
    return out


if __name__ == "__main__":
    print(json.dumps(range_fixture(), indent=2))
