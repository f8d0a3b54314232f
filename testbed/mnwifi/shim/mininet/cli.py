"""``mininet.cli``."""

from testbed.mnwifi.cli import CLI

__all__ = ["CLI"]
