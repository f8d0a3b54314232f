#!/usr/bin/env python3
"""Each propagation model in turn (Mininet-WiFi example style): sta1 and sta2 10 m apart, sta3
20 km away. Prints one line per model: whether sta2 and sta3 answer sta1's pings.

Arguments: the models to try (default: all five).
"""

import sys

from mininet.log import info, setLogLevel
from mn_wifi.link import adhoc, wmediumd
from mn_wifi.net import Mininet_wifi
from mn_wifi.wmediumdConnector import interference

MODELS = ["logDistance", "friis", "twoRayGround", "logNormalShadowing", "ITU"]
PARAMS = {"logDistance": {"exp": 3}, "logNormalShadowing": {"exp": 3, "variance": 2}, "ITU": {"nFloors": 0}}


def run(model):
    net = Mininet_wifi(link=wmediumd, wmediumd_mode=interference)
    sta1 = net.addStation("sta1", position="10,10,0")
    net.addStation("sta2", position="20,10,0")
    net.addStation("sta3", position="20010,10,0")
    net.setPropagationModel(model=model, **PARAMS.get(model, {}))
    net.configureWifiNodes()
    for sta in net.stations:
        net.addLink(sta, cls=adhoc, ssid="adhocNet", mode="g", channel=1)
    net.build()
    near = "0% packet loss" in sta1.cmd("ping -c3 -i0.3 -W1 10.0.0.2")
    far = " 0 received" in sta1.cmd("ping -c2 -i0.3 -W1 10.0.0.3")
    net.stop()
    info(f"MODEL {model} near={'ok' if near else 'FAIL'} far={'unreachable' if far else 'REACHED'}\n")


if __name__ == "__main__":
    setLogLevel("info")
    for model in sys.argv[1:] or MODELS:
        run(model)
