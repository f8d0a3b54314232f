"""``mininet.log``."""

from testbed.mnwifi.log import debug, error, info, lg, output, setLogLevel, warn, warning

__all__ = ["debug", "error", "info", "lg", "output", "setLogLevel", "warn", "warning"]
