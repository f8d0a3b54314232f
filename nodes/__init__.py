"""What runs inside an emulated station: the router daemon, its protocol cores and formats.

Layout (see ../shared/STYLE.md and docs/interfaces.md):
- ``nodes.core``: the sans-I/O substrate every protocol core uses (events, actions, interface
  queue, hooks, clock/scheduler, node runtime, virtual-time network for tests).
- ``nodes.formats``: scapy packet layers (the specification of every format).
- ``nodes.protocols``: routing protocol cores (static, dsr, aodv).
- ``nodes.extensions``: cross-layer extensions attached at named hooks.
- ``nodes.router``: the I/O shell (TUN, medium socket, radiotap mirror, timers).
"""
