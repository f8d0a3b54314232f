"""``mininet.node``: classes scripts pass as ``cls=`` or ``controller=`` (recorded)."""

from testbed.mnwifi.net import Controller, Host, Node, Switch


class OVSSwitch(Switch):
    """Open vSwitch: every switch here is one (userspace datapath), or a Linux bridge."""


OVSKernelSwitch = OVSBridge = UserSwitch = OVSSwitch
RemoteController = DefaultController = OVSController = Controller

__all__ = [
    "Controller", "DefaultController", "Host", "Node", "OVSBridge", "OVSController", "OVSKernelSwitch",
    "OVSSwitch", "RemoteController", "Switch", "UserSwitch",
]  # fmt: skip
