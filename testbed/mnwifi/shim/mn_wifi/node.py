"""``mn_wifi.node``: node classes; access points are not supported (ad hoc networks only)."""

from testbed.mnwifi.net import Station


class OVSKernelAP:
    """Access points are rejected by ``addAccessPoint``; the class exists so imports work."""


OVSAP = UserAP = OVSKernelAP
Car = Station

__all__ = ["OVSAP", "Car", "OVSKernelAP", "Station", "UserAP"]
