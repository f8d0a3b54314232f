"""``mn_wifi.wmediumdConnector``: the wmediumd modes, accepted and recorded (our medium always
models interference)."""


class interference:  # noqa: N801 - Mininet-WiFi's name
    """wmediumd's interference mode: the testbed's medium always sums interfering signals."""


class error_prob:  # noqa: N801
    """wmediumd's error-probability mode: recorded; the medium's error model decides."""


class snr:  # noqa: N801
    """wmediumd's SNR mode: recorded; the medium's error model decides."""
