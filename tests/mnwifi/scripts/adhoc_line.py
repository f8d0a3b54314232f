#!/usr/bin/env python3
"""Ad hoc line of 3 stations (Mininet-WiFi example style): sta1 - sta2 - sta3, 120 m apart.

Each station reaches only its neighbours, so sta1 reaches sta3 through sta2 with the routing
protocol given as the first argument (default: dsr).
"""

import sys

from mininet.log import info, setLogLevel
from mn_wifi.cli import CLI
from mn_wifi.link import adhoc, wmediumd
from mn_wifi.net import Mininet_wifi
from mn_wifi.wmediumdConnector import interference


def topology(args):
    proto = args[1] if len(args) > 1 else "dsr"
    net = Mininet_wifi(link=wmediumd, wmediumd_mode=interference)

    info("*** Creating nodes\n")
    sta1 = net.addStation("sta1", position="10,10,0", range=150)
    sta2 = net.addStation("sta2", position="130,10,0", range=150)
    sta3 = net.addStation("sta3", position="250,10,0", range=150)

    net.setPropagationModel(model="logDistance", exp=3)

    info("*** Configuring wifi nodes\n")
    net.configureWifiNodes()

    info("*** Creating links\n")
    for sta in (sta1, sta2, sta3):
        net.addLink(
            sta,
            cls=adhoc,
            intf=f"{sta.name}-wlan0",
            ssid="adhocNet",
            proto=proto,
            mode="g",
            channel=5,
            ht_cap="HT40+",
        )

    info("*** Starting network\n")
    net.build()

    info("*** Ping sta1 -> sta3\n")
    info(sta1.cmd("ping -c5 -i0.3 -W2 10.0.0.3"))
    info("*** TCP sta1 -> sta3\n")
    sta3.cmd("iperf3 -s -1 &")
    sta1.cmd("sleep 0.5")
    info(sta1.cmd("iperf3 -c 10.0.0.3 -t 2 -C reno"))
    if "-c" in args:
        CLI(net)

    info("*** Stopping network\n")
    net.stop()


if __name__ == "__main__":
    setLogLevel("info")
    topology(sys.argv)
