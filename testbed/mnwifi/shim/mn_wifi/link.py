"""``mn_wifi.link``."""

from testbed.mnwifi.link import TCLink, adhoc, mesh, wmediumd

__all__ = ["TCLink", "adhoc", "mesh", "wmediumd"]
