"""Mininet-WiFi's propagation models mapped onto the medium's (docs/mininet-wifi.md).

``setPropagationModel(model=..., exp=..., sL=..., variance=..., lF=..., nFloors=...)`` names one
of Mininet-WiFi's models (``mn_wifi/propagationModels.py``); wmediumd, which Mininet-WiFi's
interference mode hands the model to, computes the same formulas. Each maps to one of the
medium's models (medium/src/propagation.rs) on the ``wmediumd`` radio preset (2.412 GHz, 5 dBi
antennas, 15 dBm, noise -91 dBm, CCA -90 dBm: Mininet-WiFi's defaults), with Mininet-WiFi's
default parameters:

=====================  ======================  ==========================================
Mininet-WiFi           medium                  parameters
=====================  ======================  ==========================================
logDistance            log_distance            exp (3) -> path_loss_exponent; sL (1)
friis                  free_space              sL (1) -> system_loss
twoRayGround           two_ray_ground          sL; ns-2's formula (see below)
logNormalShadowing     log_normal_shadowing    exp, sL; variance (2) -> shadowing_sigma_db
ITU                    itu_indoor              nFloors, lF; N = 28, 38 beyond 16 m
=====================  ======================  ==========================================

Differences, all documented in docs/mininet-wifi.md: Mininet-WiFi rounds the path loss to whole
dB (``int(pl) + int(pldb)``), we compute in f64; its ``twoRayGround`` mixes dBm and linear units
(the received power does not fall with distance beyond a few metres), we use ns-2's two-ray
ground with Friis below the crossover; its ``logNormalShadowing`` draws one Gaussian per range
query (``gauss(0, variance)``: ``variance`` is used as the standard deviation), we draw one per
link, seeded; ``pL`` (a fixed ITU distance power loss) has no counterpart and is rejected.

``range=`` (``addStation``/``setRange``) is turned into a transmit power with Mininet-WiFi's
own rule (``GetPowerGivenRange``): the whole dBm at which the received power at ``range``
metres reaches the noise threshold (-91 dBm); below 0 it becomes 1 dBm, as there.
Pure functions; unit-tested in tests/unit/test_mnwifi_propagation.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from topologies.radio import SPEED_OF_LIGHT_MPS, LogDistancePreset

WMEDIUMD: Final = LogDistancePreset()
"""The ``wmediumd`` preset's numbers (topologies/radio.py): 2.412 GHz, 15 dBm, 5 dBi, exp 3."""

MODELS: Final[dict[str, str]] = {
    "logDistance": "log_distance",
    "friis": "free_space",
    "twoRayGround": "two_ray_ground",
    "logNormalShadowing": "log_normal_shadowing",
    "ITU": "itu_indoor",
}
"""Mininet-WiFi model name -> the medium's ``propagation``."""

DEFAULT_EXP: Final = 3.0  # propagationModel.exp
DEFAULT_SYSTEM_LOSS: Final = 1.0  # propagationModel.sL
DEFAULT_VARIANCE: Final = 2.0  # propagationModel.variance (used as a standard deviation)
NOISE_THRESHOLD_DBM: Final = -91.0  # propagationModel.noise_threshold
CCA_THRESHOLD_DBM: Final = -90.0  # propagationModel.cca_threshold
ANTENNA_HEIGHT_M: Final = 1.0  # Mininet-WiFi's antennaHeight
ITU_N_NEAR: Final = 28.0  # ITU power loss coefficient up to 16 m (Mininet-WiFi, wmediumd)
ITU_N_FAR: Final = 38.0  # beyond ITU_BREAK_M
ITU_BREAK_M: Final = 16.0
MIN_DISTANCE_M: Final = 0.1  # Mininet-WiFi's d = 0.1 for d = 0
ACCEPTED_PARAMS: Final = frozenset(
    {"model", "exp", "sL", "variance", "lF", "nFloors", "pL", "noise_threshold", "cca_threshold"}
)


class PropagationError(ValueError):
    """A model or parameter the medium cannot reproduce."""


@dataclass(frozen=True, slots=True)
class PropagationSpec:
    """One ``setPropagationModel`` call, validated."""

    model: str = "logDistance"
    exp: float = DEFAULT_EXP
    system_loss: float = DEFAULT_SYSTEM_LOSS
    variance: float = DEFAULT_VARIANCE
    floor_loss_db: float = 0.0
    floors: int = 0
    noise_threshold_dbm: float = NOISE_THRESHOLD_DBM
    cca_threshold_dbm: float = CCA_THRESHOLD_DBM
    frequency_hz: float = WMEDIUMD.frequency_hz
    gain_dbi: float = WMEDIUMD.antenna_gain_dbi
    given: dict[str, float | str] = field(default_factory=dict)

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, object], frequency_hz: float | None = None) -> PropagationSpec:
        """From ``setPropagationModel``'s keyword arguments; unknown names are errors."""
        unknown = sorted(set(kwargs) - ACCEPTED_PARAMS)
        if unknown:
            raise PropagationError(
                f"setPropagationModel: unknown parameter(s) {', '.join(unknown)} "
                f"(accepted: {', '.join(sorted(ACCEPTED_PARAMS))})"
            )
        model = str(kwargs.get("model", "logDistance"))
        if model not in MODELS:
            raise PropagationError(
                f"setPropagationModel: model {model!r} is not supported here (supported: {', '.join(MODELS)})"
            )
        if float(_num(kwargs, "pL", 0.0)) != 0.0:
            raise PropagationError(
                "setPropagationModel: pL (a fixed ITU distance power loss coefficient) is not "
                "supported: the medium's ITU model uses N = 28, and 38 beyond 16 m"
            )
        spec = cls(
            model=model,
            exp=_num(kwargs, "exp", DEFAULT_EXP),
            system_loss=_num(kwargs, "sL", DEFAULT_SYSTEM_LOSS),
            variance=_num(kwargs, "variance", DEFAULT_VARIANCE),
            floor_loss_db=_num(kwargs, "lF", 0.0),
            floors=int(_num(kwargs, "nFloors", 0)),
            noise_threshold_dbm=_num(kwargs, "noise_threshold", NOISE_THRESHOLD_DBM),
            cca_threshold_dbm=_num(kwargs, "cca_threshold", CCA_THRESHOLD_DBM),
            frequency_hz=frequency_hz or WMEDIUMD.frequency_hz,
            given={k: v for k, v in kwargs.items() if isinstance(v, int | float | str)},
        )
        if spec.exp <= 0:
            raise PropagationError(f"setPropagationModel: exp must be > 0, got {spec.exp}")
        if spec.system_loss < 1:
            raise PropagationError(f"setPropagationModel: sL must be >= 1, got {spec.system_loss}")
        if spec.variance < 0:
            raise PropagationError(f"setPropagationModel: variance must be >= 0, got {spec.variance}")
        if spec.floors < 0:
            raise PropagationError(f"setPropagationModel: nFloors must be >= 0, got {spec.floors}")
        return spec

    def radio_overrides(self) -> dict[str, object]:
        """``radio.overrides`` on the ``wmediumd`` preset (docs/medium.md, parameters)."""
        out: dict[str, object] = {
            "propagation": MODELS[self.model],
            "system_loss": self.system_loss,
            "frequency_hz": self.frequency_hz,
            "noise_floor_dbm": self.noise_threshold_dbm,
            "cs_threshold_dbm": self.cca_threshold_dbm,
            "rx_threshold_dbm": self.cca_threshold_dbm,
        }
        if self.model in ("logDistance", "logNormalShadowing"):
            out["path_loss_exponent"] = self.exp
        if self.model == "logNormalShadowing":
            out["shadowing_sigma_db"] = self.variance
        if self.model == "ITU":
            out["itu_floors"] = self.floors
            out["itu_floor_loss_db"] = self.floor_loss_db
        return out

    # ---------------------------------------------------------------- the formulas (f64)
    @property
    def wavelength_m(self) -> float:
        return SPEED_OF_LIGHT_MPS / self.frequency_hz

    def friis_loss_db(self, d: float) -> float:
        """Free-space path loss with system loss, dB (Mininet-WiFi's ``pathLoss``)."""
        return 10 * math.log10((4 * math.pi * d) ** 2 * self.system_loss / self.wavelength_m**2)

    def path_loss_db(self, d: float) -> float:
        """Path loss at ``d`` metres without shadowing, as the medium computes it."""
        d = max(d, MIN_DISTANCE_M)
        if self.model == "friis":
            return self.friis_loss_db(d)
        if self.model == "twoRayGround":
            h = ANTENNA_HEIGHT_M
            crossover = 4 * math.pi * h * h / self.wavelength_m
            if d < crossover:
                return self.friis_loss_db(d)
            return 10 * math.log10(d**4 * self.system_loss / (h * h) ** 2)
        if self.model == "ITU":
            n = ITU_N_FAR if d > ITU_BREAK_M else ITU_N_NEAR
            f_mhz = self.frequency_hz / 1e6
            return 20 * math.log10(f_mhz) + n * math.log10(d) + self.floor_loss_db * self.floors - 28
        return self.friis_loss_db(1.0) + 10 * self.exp * math.log10(d)

    def rx_dbm(self, tx_power_dbm: float, d: float) -> float:
        return tx_power_dbm + 2 * self.gain_dbi - self.path_loss_db(d)

    def range_m(self, tx_power_dbm: float) -> float:
        """Where the received power falls to the noise threshold (``GetSignalRange``), metres."""
        lo, hi = MIN_DISTANCE_M, 1e6
        if self.rx_dbm(tx_power_dbm, lo) < self.noise_threshold_dbm:
            return 0.0
        for _ in range(200):  # the loss is monotonic in d: bisection
            mid = math.sqrt(lo * hi)
            if self.rx_dbm(tx_power_dbm, mid) >= self.noise_threshold_dbm:
                lo = mid
            else:
                hi = mid
        return lo

    def tx_power_for_range(self, range_m: float) -> int:
        """Mininet-WiFi's ``GetPowerGivenRange`` (then ``int()``): the transmit power, whole dBm,
        at which the received power at ``range_m`` equals the noise threshold; 1 dBm where that
        is below 0. As there: rounded up for logDistance, truncated for friis, ITU and
        logNormalShadowing, and ITU uses N = 28 at every distance. For twoRayGround, whose
        Mininet-WiFi formula mixes dBm and linear units, the medium's two-ray loss, rounded up."""
        d = max(range_m, MIN_DISTANCE_M)
        if self.model == "ITU":
            f_mhz = self.frequency_hz / 1e6
            loss = ITU_N_NEAR * math.log10(d) + 20 * math.log10(f_mhz) + self.floor_loss_db * self.floors - 28
        else:
            loss = self.path_loss_db(d)
        need = self.noise_threshold_dbm + loss - 2 * self.gain_dbi
        if need < 0:
            return 1
        if self.model in ("logDistance", "twoRayGround"):
            return math.ceil(round(need, 9))
        return int(need)


def _num(kwargs: dict[str, object], key: str, default: float) -> float:
    value = kwargs.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PropagationError(f"setPropagationModel: {key} must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise PropagationError(f"setPropagationModel: {key} must be a number, got {value!r}") from None


def channel_frequency_hz(channel: int) -> float:
    """802.11 channel centre frequency: 2.4 GHz band (1-13: 2407 + 5 ch MHz, 14: 2484), else 5 GHz."""
    if 1 <= channel <= 13:
        return (2407 + 5 * channel) * 1e6
    if channel == 14:
        return 2484e6
    if 32 <= channel <= 177:
        return (5000 + 5 * channel) * 1e6
    raise PropagationError(f"channel {channel} is not an 802.11 channel (1-14, 32-177)")
