"""Packet and message formats.

Per STYLE.md a format is specified by scapy layers; the data path uses ``struct`` codecs that are
tested byte for byte against those layers.

- ``nodes.formats.medium``: the medium <-> router wire protocol (docs/interfaces.md section 2):
  struct codec + scapy layers (built lazily, so the router never imports scapy).
- ``nodes.formats.radiotap``: the radiotap + 802.11 + LLC/SNAP mirror frames a station writes to
  its ``staN-wlan0`` TAP so that tcpdump/tshark decode what it sends and receives.
"""
