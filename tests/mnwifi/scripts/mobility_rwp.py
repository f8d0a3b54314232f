#!/usr/bin/env python3
"""10 mobile stations, random waypoint, AODV, with the graph plotted (Mininet-WiFi example style).

Without a display the graph is saved to plotgraph.png in the run's results. Runs for the number
of seconds given as the first argument (default 6), then pings every pair.
"""

import sys
import time

from mininet.log import info, setLogLevel
from mn_wifi.link import adhoc, wmediumd
from mn_wifi.net import Mininet_wifi
from mn_wifi.wmediumdConnector import interference


def topology(args):
    seconds = float(args[1]) if len(args) > 1 else 6.0
    net = Mininet_wifi(link=wmediumd, wmediumd_mode=interference)

    info("*** Creating nodes\n")
    for i in range(1, 11):
        net.addStation(f"sta{i}", range=60, min_x=0, max_x=120, min_y=0, max_y=120, min_v=1, max_v=3)

    net.setPropagationModel(model="logDistance", exp=4)

    info("*** Configuring wifi nodes\n")
    net.configureWifiNodes()

    for sta in net.stations:
        net.addLink(
            sta, cls=adhoc, intf=f"{sta.name}-wlan0", ssid="adhocNet", proto="aodv", mode="g", channel=1
        )

    net.plotGraph(max_x=120, max_y=120)
    net.setMobilityModel(time=0, model="RandomWayPoint", max_x=120, max_y=120, seed=20)

    info("*** Starting network\n")
    net.build()
    start = net.stations[0].current_position()
    time.sleep(seconds)
    info(f"*** sta1 moved from {start[:2]} to {net.stations[0].current_position()[:2]}\n")
    net.pingAll()

    info("*** Stopping network\n")
    net.stop()


if __name__ == "__main__":
    setLogLevel("info")
    topology(sys.argv)
