"""topologies/radio.py: the Python owner of the radio presets' range model (docs/medium.md).

The cross-language check is ``medium/tests/radio_ranges.rs`` (cargo test), which reads the fixture
this module checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from topologies.radio import NS2_WAVELAN, SPEED_OF_LIGHT_MPS, WMEDIUMD, RadioModel, radio_model, range_fixture

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "radio_ranges.json"


def rx_dbm(m: RadioModel, d: float) -> float:
    """The forward model written independently of RadioModel.distance_for_dbm (ns-2's formulas)."""
    lam = m.speed_of_light_mps / m.frequency_hz
    pt_w = 10 ** ((m.tx_power_dbm - 30) / 10)
    g = 10 ** ((m.tx_gain_dbi + m.rx_gain_dbi) / 10)
    if m.propagation in ("log_distance", "log_normal_shadowing"):
        return (
            m.tx_power_dbm
            + m.tx_gain_dbi
            + m.rx_gain_dbi
            - m.pl0_db
            - 10 * m.path_loss_exponent * math.log10(d)
        )
    friis = pt_w * g * lam**2 / ((4 * math.pi * d) ** 2 * m.system_loss)
    if m.propagation == "two_ray_ground" and d >= 4 * math.pi * m.antenna_height_m**2 / lam:
        pr = pt_w * g * m.antenna_height_m**4 / (d**4 * m.system_loss)
    else:
        pr = friis
    return 10 * math.log10(pr) + 30


def test_the_fixture_is_what_python_computes() -> None:
    # If this fails, rewrite it: python3 -m topologies.radio > tests/fixtures/radio_ranges.json,
    # then run cargo test in medium/ (the medium must reach the same ranges).
    stored, computed = json.loads(FIXTURE.read_text()), range_fixture()
    assert [(c["preset"], c["overrides"]) for c in stored] == [
        (c["preset"], c["overrides"]) for c in computed
    ]
    for s, c in zip(stored, computed, strict=True):
        assert (s["range_m"], s["cs_range_m"]) == pytest.approx((c["range_m"], c["cs_range_m"]), rel=1e-12)


@pytest.mark.parametrize("case", range_fixture(), ids=lambda c: f"{c['preset']}-{sorted(c['overrides'])}")
def test_each_range_is_where_the_forward_model_meets_the_threshold(case: dict[str, object]) -> None:
    m = radio_model(str(case["preset"]), case["overrides"])  # type: ignore[arg-type]
    for d, threshold in ((m.range_m, m.rx_threshold_dbm), (m.cs_range_m, m.cs_threshold_dbm)):
        assert rx_dbm(m, d) == pytest.approx(threshold, abs=1e-9)
        assert rx_dbm(m, d * 0.999) > threshold > rx_dbm(m, d * 1.001)


def test_the_presets_papers_numbers() -> None:
    assert NS2_WAVELAN.speed_of_light_mps == WMEDIUMD.speed_of_light_mps == SPEED_OF_LIGHT_MPS == 299_792_458
    assert NS2_WAVELAN.range_m == pytest.approx(250, abs=0.05)
    assert NS2_WAVELAN.cs_range_m == pytest.approx(550, abs=0.05)
    assert NS2_WAVELAN.crossover_m == pytest.approx(86.20, abs=0.01)
    assert WMEDIUMD.range_m == pytest.approx(313.9, abs=0.1)


def test_overrides_outside_the_range_model_are_ignored_and_bad_ones_rejected() -> None:
    assert radio_model("ns2-wavelan", {"rts_threshold": 3000, "cw_min": 15}) == NS2_WAVELAN
    with pytest.raises(ValueError, match="propagation 'moon'"):
        radio_model("ns2-wavelan", {"propagation": "moon"})
    with pytest.raises(ValueError, match="itu_indoor"):
        _ = radio_model("wmediumd", {"propagation": "itu_indoor"}).range_m
