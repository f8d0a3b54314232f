"""``mininet.link``."""

from testbed.mnwifi.link import Intf, TCLink

Link = TCLink

__all__ = ["Intf", "Link", "TCLink"]
