"""Link classes of Mininet-WiFi's API as markers (docs/mininet-wifi.md).

``Mininet_wifi(link=wmediumd)`` and ``addLink(sta, cls=adhoc)`` name classes; here they only
say what the script meant: the medium is always ours, and ``adhoc`` joins the ad hoc network.
"""

from __future__ import annotations


class wmediumd:  # noqa: N801 - Mininet-WiFi's names
    """The wireless medium: always the testbed's medium (CSMA/CA, interference, propagation)."""


class adhoc:  # noqa: N801
    """An ad hoc (IBSS) interface: the station joins the one shared medium."""


class mesh:  # noqa: N801
    """802.11s mesh: rejected by ``addLink`` (not supported here)."""


class TCLink:
    """Mininet's traffic-controlled link: its parameters are recorded only."""


class Intf:
    pass
