"""Mininet's package name, served by the testbed (testbed/mnwifi, docs/mininet-wifi.md)."""
