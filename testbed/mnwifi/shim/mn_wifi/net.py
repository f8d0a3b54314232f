"""``mn_wifi.net``."""

from testbed.mnwifi.net import Mininet_wifi, MnWifiError

__all__ = ["Mininet_wifi", "MnWifiError"]
