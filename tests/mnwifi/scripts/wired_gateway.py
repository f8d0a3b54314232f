#!/usr/bin/env python3
"""A wired host behind a gateway station (Mininet-WiFi example style): h1 - s1 - sta1 ~ sta2 ~ sta3.

s1 is an Open vSwitch switch; sta1 is the gateway; the stations are 120 m apart, DSR.
"""

import sys

from mininet.log import info, setLogLevel
from mininet.node import OVSKernelSwitch
from mn_wifi.link import adhoc, wmediumd
from mn_wifi.net import Mininet_wifi
from mn_wifi.wmediumdConnector import interference


def topology(args):
    net = Mininet_wifi(link=wmediumd, wmediumd_mode=interference)
    info("*** Creating nodes\n")
    h1 = net.addHost("h1", ip="10.1.0.1/24")
    s1 = net.addSwitch("s1", cls=OVSKernelSwitch, failMode="standalone")
    sta1 = net.addStation("sta1", position="10,10,0", range=150)
    net.addStation("sta2", position="130,10,0", range=150)
    sta3 = net.addStation("sta3", position="250,10,0", range=150)
    net.setPropagationModel(model="logDistance", exp=3)
    net.configureWifiNodes()
    info("*** Creating links\n")
    for sta in net.stations:
        net.addLink(sta, cls=adhoc, ssid="adhocNet", proto="dsr", mode="g", channel=5)
    net.addLink(h1, s1)
    net.addLink(sta1, s1)
    info("*** Starting network\n")
    net.build()
    s1.start([])
    info("*** h1 -> sta3\n")
    info(h1.cmd("ping -c4 -i0.3 -W2", sta3.IP()))
    info("*** sta3 -> h1\n")
    info(sta3.cmd("ping -c2 -i0.3 -W2", h1.IP()))
    net.stop()


if __name__ == "__main__":
    setLogLevel("info")
    topology(sys.argv)
