"""Radio presets as far as scenario files need them: the nominal range used for "auto" static routes.

The medium (issue 6, item 1) owns the propagation models; this module only restates each preset's
parameters so that a scenario can say how far a station reaches *without* a running medium. Ranges
are derived from the parameters, never written as a second literal:

- ``ns2-wavelan``: ns-2's two-ray ground model (the papers' setting). Beyond the crossover distance
  ``4 pi ht hr / lambda`` (86 m at 914 MHz) ``Pr = Pt Gt Gr ht^2 hr^2 / d^4``, so the distance at
  which ``Pr`` falls to a threshold is ``(Pt Gt Gr ht^2 hr^2 / threshold) ** (1/4)``: 250 m for
  RXThresh 3.652e-10 W and 550 m for CSThresh 1.559e-11 W.
- ``wmediumd``: Mininet-WiFi's log-distance defaults, ``Pr = Pt + Gt + Gr - PL0 - 10 n log10(d)``
  with ``PL0`` the free-space loss at 1 m; the range is where ``Pr`` falls to the CCA threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

SPEED_OF_LIGHT_MPS: Final = 299_792_458.0


@dataclass(frozen=True, slots=True)
class TwoRayGroundPreset:
    """ns-2 two-ray ground with WaveLAN 914 MHz parameters (ns-2 ``Phy/WirelessPhy`` defaults)."""

    frequency_hz: float = 914e6
    tx_power_w: float = 0.28183815
    antenna_height_m: float = 1.5
    gain_tx: float = 1.0
    gain_rx: float = 1.0
    rx_thresh_w: float = 3.652e-10
    cs_thresh_w: float = 1.559e-11

    @property
    def wavelength_m(self) -> float:
        return SPEED_OF_LIGHT_MPS / self.frequency_hz

    @property
    def crossover_m(self) -> float:
        return 4 * math.pi * self.antenna_height_m**2 / self.wavelength_m

    def distance_for_power_m(self, threshold_w: float) -> float:
        """Distance at which the received power equals ``threshold_w`` (two-ray or Friis part)."""
        h4 = self.antenna_height_m**4
        d = float((self.tx_power_w * self.gain_tx * self.gain_rx * h4 / threshold_w) ** 0.25)
        if d >= self.crossover_m:
            return d
        # Friis below the crossover: Pr = Pt Gt Gr lambda^2 / (4 pi d)^2.
        lam = self.wavelength_m
        return math.sqrt(self.tx_power_w * self.gain_tx * self.gain_rx * lam**2 / threshold_w) / (4 * math.pi)

    @property
    def range_m(self) -> float:
        return self.distance_for_power_m(self.rx_thresh_w)

    @property
    def cs_range_m(self) -> float:
        return self.distance_for_power_m(self.cs_thresh_w)


@dataclass(frozen=True, slots=True)
class LogDistancePreset:
    """Mininet-WiFi / wmediumd defaults: log-distance, exponent 3, 2.412 GHz, 15 dBm ad hoc."""

    frequency_hz: float = 2.412e9
    tx_power_dbm: float = 15.0
    antenna_gain_dbi: float = 5.0
    exponent: float = 3.0
    reference_m: float = 1.0
    cca_threshold_dbm: float = -90.0
    noise_dbm: float = -91.0

    @property
    def pl0_db(self) -> float:
        lam = SPEED_OF_LIGHT_MPS / self.frequency_hz
        return 20 * math.log10(4 * math.pi * self.reference_m / lam)

    def distance_for_power_m(self, threshold_dbm: float) -> float:
        budget = self.tx_power_dbm + 2 * self.antenna_gain_dbi - self.pl0_db - threshold_dbm
        return float(self.reference_m * 10 ** (budget / (10 * self.exponent)))

    @property
    def range_m(self) -> float:
        return self.distance_for_power_m(self.cca_threshold_dbm)

    @property
    def cs_range_m(self) -> float:
        return self.range_m


RadioPreset = TwoRayGroundPreset | LogDistancePreset

PRESETS: Final[dict[str, RadioPreset]] = {
    "ns2-wavelan": TwoRayGroundPreset(),
    "wmediumd": LogDistancePreset(),
}
