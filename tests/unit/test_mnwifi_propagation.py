"""Mininet-WiFi propagation models -> the medium's (testbed/mnwifi/propagation.py).

Expected numbers are worked out by hand from Mininet-WiFi's formulas (mn_wifi/propagationModels.py)
with its defaults: 2.412 GHz, antenna gain 5 dBi, noise threshold -91 dBm. The free-space loss
at 1 m on 2412 MHz is 20 log10(4 pi f / c) = 40.095329 dB.
"""

from __future__ import annotations

import math

import pytest

from testbed.mnwifi.propagation import PropagationError, PropagationSpec, channel_frequency_hz

FSPL_1M = 40.095329


def spec(**kw: object) -> PropagationSpec:
    return PropagationSpec.from_kwargs(dict(kw))


@pytest.mark.parametrize(
    "kwargs,overrides",
    [
        ({}, {"propagation": "log_distance", "path_loss_exponent": 3.0, "system_loss": 1.0}),
        ({"model": "logDistance", "exp": 4.5}, {"propagation": "log_distance", "path_loss_exponent": 4.5}),
        ({"model": "friis", "sL": 2}, {"propagation": "free_space", "system_loss": 2.0}),
        ({"model": "twoRayGround"}, {"propagation": "two_ray_ground"}),
        (
            {"model": "logNormalShadowing", "exp": 3.5, "variance": 4},
            {"propagation": "log_normal_shadowing", "path_loss_exponent": 3.5, "shadowing_sigma_db": 4.0},
        ),
        (
            {"model": "ITU", "nFloors": 2, "lF": 5},
            {"propagation": "itu_indoor", "itu_floors": 2, "itu_floor_loss_db": 5.0},
        ),
    ],
)
def test_model_names_map_to_medium_overrides(kwargs: dict[str, object], overrides: dict[str, object]) -> None:
    got = spec(**kwargs).radio_overrides()
    for k, v in overrides.items():
        assert got[k] == v, k
    # Mininet-WiFi's thresholds become the medium's
    assert got["noise_floor_dbm"] == -91.0 and got["cs_threshold_dbm"] == -90.0


def test_exponent_only_for_log_models() -> None:
    assert "path_loss_exponent" not in spec(model="friis").radio_overrides()
    assert "shadowing_sigma_db" not in spec(model="logDistance").radio_overrides()


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"model": "young"}, "supported: logDistance, friis, twoRayGround, logNormalShadowing, ITU"),
        ({"model": "ITU", "pL": 30}, "pL"),
        ({"exp": 0}, "exp must be > 0"),
        ({"sL": 0.5}, "sL must be >= 1"),
        ({"variance": -1}, "variance must be >= 0"),
        ({"exp": "three"}, "exp must be a number"),
        ({"foo": 1}, "unknown parameter(s) foo"),
    ],
)
def test_rejected(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(PropagationError, match=None) as exc:
        spec(**kwargs)
    assert needle in str(exc.value)


def test_log_distance_loss_and_range_match_mininet_wifi() -> None:
    s = spec(model="logDistance", exp=3)
    assert s.path_loss_db(100) == pytest.approx(FSPL_1M + 60, abs=1e-3)
    # GetSignalRange.logDistance: 10 ** ((91 - PL0 + 15 + 2 * 5) / (10 * 3))
    assert s.range_m(15) == pytest.approx(10 ** ((91 - FSPL_1M + 25) / 30), rel=1e-6)  # 338.7 m


def test_friis_and_itu_ranges() -> None:
    # GetSignalRange.friis: distance where 25 dBm - FSPL(d) = -91
    assert spec(model="friis").range_m(15) == pytest.approx(10 ** ((116 - FSPL_1M) / 20), rel=1e-6)
    # ITU beyond 16 m: 20 log10(2412) + 38 log10 d - 28 = 116
    itu = spec(model="ITU")
    assert itu.range_m(15) == pytest.approx(10 ** ((116 - 20 * math.log10(2412) + 28) / 38), rel=1e-6)


def test_two_ray_is_ns2_with_crossover() -> None:
    s = spec(model="twoRayGround")
    crossover = 4 * math.pi / (299_792_458 / 2.412e9)  # h = 1 m: 101.1 m
    assert s.path_loss_db(crossover * 0.5) == pytest.approx(s.friis_loss_db(crossover * 0.5))
    assert s.path_loss_db(1000) == pytest.approx(120.0)  # 40 log10(1000), ht = hr = 1 m


@pytest.mark.parametrize(
    "kwargs,range_m,want",
    [
        # logDistance: ceil(30 log10 150 + 40.09 - 91 - 10) = ceil(4.37) = 5
        ({"model": "logDistance", "exp": 3}, 150, 5),
        # exp 4: ceil(40 log10 40 + 40.09 - 101) = ceil(3.17) = 4
        ({"model": "logDistance", "exp": 4}, 40, 4),
        # below 0 dBm Mininet-WiFi sets 1 dBm: 30 log10 40 + 40.09 - 101 = -12.85
        ({"model": "logDistance", "exp": 3}, 40, 1),
        # friis truncates: 20 log10 3000 + 40.09 - 101 = 8.63 -> 8
        ({"model": "friis"}, 3000, 8),
        # ITU with N = 28 at any distance: 28 log10 100 + 67.65 - 28 - 101 = -5.35 -> 1
        ({"model": "ITU"}, 100, 1),
        # ITU 1000 m: 84 + 67.647 - 129 = 22.65 -> 22
        ({"model": "ITU"}, 1000, 22),
    ],
)
def test_tx_power_for_range_is_mininet_wifis_rule(
    kwargs: dict[str, object], range_m: float, want: int
) -> None:
    assert spec(**kwargs).tx_power_for_range(range_m) == want


def test_power_from_range_reaches_about_that_range() -> None:
    s = spec(model="logDistance", exp=3)
    p = s.tx_power_for_range(150)
    # rounded up to a whole dBm: the range at that power is at least 150 m, less than 1 dB further
    assert 150 <= s.range_m(p) < 150 * 10 ** (1 / 30)


@pytest.mark.parametrize("ch,mhz", [(1, 2412), (6, 2437), (13, 2472), (14, 2484), (36, 5180), (149, 5745)])
def test_channel_frequency(ch: int, mhz: int) -> None:
    assert channel_frequency_hz(ch) == mhz * 1e6


def test_bad_channel() -> None:
    with pytest.raises(PropagationError, match="not an 802.11 channel"):
        channel_frequency_hz(20)
