"""``mn_wifi.cli``."""

from testbed.mnwifi.cli import CLI, CLI_wifi

__all__ = ["CLI", "CLI_wifi"]
