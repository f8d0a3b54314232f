"""testbed.mnwifi without namespaces: the import hook, and the scenario a script's calls describe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testbed.mnwifi import motion
from testbed.mnwifi.link import adhoc
from testbed.mnwifi.net import Mininet_wifi, MnWifiError
from testbed.mnwifi.scenario import build_scenario, release_movements, scenario_data
from topologies.mobility import position_at
from topologies.scenario import BonnMotionMobility

ROOT = Path(__file__).resolve().parents[2]


def run_py(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )


def test_hook_only_inside_the_command() -> None:
    # importing the package does not install anything: mn_wifi is not importable (not installed here)
    res = run_py("import testbed.mnwifi, testbed.mnwifi.net, sys\nimport mn_wifi")
    assert res.returncode != 0 and "No module named 'mn_wifi'" in res.stderr
    res = run_py(
        "from testbed.mnwifi.__main__ import install\ninstall()\n"
        "import mn_wifi.net, mininet.log\nfrom mn_wifi.net import Mininet_wifi\n"
        "print(Mininet_wifi.__module__, mininet.log.setLogLevel.__module__)"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["testbed.mnwifi.net", "testbed.mnwifi.log"]


def test_a_real_mininet_wifi_beside_is_not_shadowed(tmp_path: Path) -> None:
    real = tmp_path / "mn_wifi"
    real.mkdir()
    (real / "__init__.py").write_text("REAL = True\n")
    code = "import testbed.mnwifi.net\nimport mn_wifi\nprint(mn_wifi.REAL)"
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
    )
    assert res.stdout.strip() == "True", res.stderr
    code = "from testbed.mnwifi.__main__ import install\ninstall()\nimport mn_wifi\nprint(hasattr(mn_wifi, 'REAL'))"
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
    )
    assert res.stdout.strip() == "False", res.stderr  # inside the command: ours


def test_missing_module_is_a_clear_error() -> None:
    res = run_py("from testbed.mnwifi.__main__ import install\ninstall()\nimport mn_wifi.replaying")
    assert "mn_wifi.replaying is not provided by the testbed" in res.stderr


def line(n: int = 3, proto: str | None = "dsr", **sta: object) -> Mininet_wifi:
    net = Mininet_wifi(link=object, wmediumd_mode=object)
    for i in range(1, n + 1):
        net.addStation(f"sta{i}", position=f"{10 + 100 * (i - 1)},10,0", **sta)  # type: ignore[arg-type]
    for st in net.stations:
        net.addLink(st, cls=adhoc, ssid="adhocNet", mode="g", channel=6, proto=proto)
    return net


def test_scenario_of_an_adhoc_line() -> None:
    net = line(range=150)
    data = scenario_data(net)
    assert data["stations"]["positions"] == [[10.0, 10.0], [110.0, 10.0], [210.0, 10.0]]
    assert data["stations"]["tx_power_dbm"] == {1: 5.0, 2: 5.0, 3: 5.0}  # Mininet-WiFi's rule for 150 m
    assert data["routing"] == {"protocol": "dsr"}
    assert data["radio"]["preset"] == "wmediumd"
    assert data["radio"]["overrides"]["frequency_hz"] == 2437e6  # channel 6
    assert [i["call"] for i in net.ignored.items] == ["Mininet_wifi"] + [
        f"addLink(sta{i}, cls=adhoc)" for i in (1, 2, 3)
    ]


def test_another_channel_is_recorded_not_applied() -> None:
    net = Mininet_wifi()
    a, b = net.addStation("sta1", position="1,1,0"), net.addStation("sta2", position="2,1,0")
    net.addLink(a, cls=adhoc, channel=1)
    net.addLink(b, cls=adhoc, channel=11)
    assert scenario_data(net)["radio"]["overrides"]["frequency_hz"] == 2412e6
    assert net.ignored.items[-1] == {"call": "addLink(sta2, cls=adhoc)", "params": {"channel": "11"}}


def test_no_proto_is_single_hop_static() -> None:
    data = scenario_data(line(proto=None))
    assert data["routing"] == {
        "protocol": "static",
        "routes": {1: {2: 2, 3: 3}, 2: {1: 1, 3: 3}, 3: {1: 1, 2: 2}},
    }


@pytest.mark.parametrize(
    "call,needle",
    [
        (lambda n: n.addStation("sta4", ip="10.0.0.9/8"), "the 4. station has address 10.0.0.4"),
        (lambda n: n.addStation("sta7"), "it is the 4. station, so here it is sta4"),
        (lambda n: n.addStation("car1", foo=1), "unsupported parameter(s) foo"),
        (lambda n: n.addAccessPoint("ap1"), "access points (infrastructure mode) are not supported"),
        (lambda n: n.addLink(n.stations[0], cls=object), "only ad hoc links"),
        (lambda n: n.setPropagationModel(model="young"), "model 'young' is not supported"),
        (lambda n: n.setMobilityModel(model="GaussMarkov"), "supported: RandomWayPoint, RandomDirection"),
        (lambda n: n.addHost("h1", ip="10.0.0.50/8"), "wired hosts need their own subnet"),
        (lambda n: n.addStation("car1", position="-5,3,0"), "x and y must be >= 0"),
    ],
)
def test_rejected_calls(call: object, needle: str) -> None:
    net = line()
    with pytest.raises(MnWifiError) as exc:
        call(net)  # type: ignore[operator]
    assert needle in str(exc.value)


@pytest.mark.parametrize("proto", ["olsr", "batman_adv", "babel"])
def test_mininet_wifi_routing_daemons_are_rejected(proto: str) -> None:
    with pytest.raises(MnWifiError, match="the routers support static, dsr, aodv"):
        line(proto=proto)


def test_mixed_protocols_rejected() -> None:
    net = Mininet_wifi()
    a, b = net.addStation("sta1", position="1,1,0"), net.addStation("sta2", position="2,1,0")
    net.addLink(a, cls=adhoc, proto="aodv")
    with pytest.raises(MnWifiError, match="differs from proto='aodv'"):
        net.addLink(b, cls=adhoc, proto="dsr")


def test_station_without_adhoc_link() -> None:
    net = Mininet_wifi()
    net.addStation("sta1", position="1,1,0")
    with pytest.raises(MnWifiError, match="have no ad hoc interface"):
        scenario_data(net)


def test_mobility_moves_only_stations_without_position(tmp_path: Path) -> None:
    net = Mininet_wifi()
    fixed = net.addStation("sta1", position="50,50,0")
    net.addStation("sta2", min_x=10, max_x=40, min_y=10, max_y=40, min_v=2, max_v=2)
    for st in net.stations:
        net.addLink(st, cls=adhoc)
    net.setMobilityModel(time=0, model="RandomWayPoint", max_x=100, max_y=100, seed=5)
    sc = build_scenario(net)
    try:
        assert isinstance(sc.mobility, BonnMotionMobility)
        from topologies.layout import trajectories

        trajs = trajectories(sc)
        assert len(trajs[fixed.id]) == 1 and trajs[fixed.id][0][1:] == (50.0, 50.0)
        moving = trajs[2]
        assert len(moving) > 3
        for t in range(0, 600, 7):  # inside its own bounds, at its own speed
            x, y = position_at(moving, float(t))
            assert 10 - 1e-6 <= x <= 40 + 1e-6 and 10 - 1e-6 <= y <= 40 + 1e-6
        (t0, x0, y0), (t1, x1, y1) = moving[0], moving[1]
        assert ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 / (t1 - t0) == pytest.approx(2.0, rel=1e-3)
    finally:
        release_movements(sc, tmp_path)
    assert (tmp_path / "mnwifi.movements").exists() and not Path(sc.mobility.file).exists()


def test_scripted_mobility_is_a_straight_leg() -> None:
    net = Mininet_wifi()
    sta = net.addStation("sta1", position="0,0,0")
    net.addStation("sta2", position="5,0,0")
    for st in net.stations:
        net.addLink(st, cls=adhoc)
    net.startMobility(time=0)
    net.mobility(sta, "start", time=2, position="10,10,0")
    net.mobility(sta, "stop", time=12, position="110,10,0")
    net.stopMobility(time=12)
    from testbed.mnwifi.scenario import trajectories

    trajs = trajectories(net, (200.0, 200.0))
    assert trajs is not None
    assert trajs[1] == [(0.0, 0.0, 0.0), (2.0, 10.0, 10.0), (12.0, 110.0, 10.0)]
    assert position_at(trajs[1], 7.0) == (60.0, 10.0)


def test_random_direction_stays_in_the_field() -> None:
    traj = motion.random_direction((5.0, 5.0), (20.0, 10.0), 1.0, 3.0, 300.0, seed=3, station=1)
    assert traj[-1][0] >= 300.0
    assert all(0 <= x <= 20 and 0 <= y <= 10 for _, x, y in traj)
    # every leg ends on the border
    assert all(x in (0.0, 20.0) or y in (0.0, 10.0) for _, x, y in traj[1:])


def test_wired_calls_make_the_wired_block() -> None:
    net = line()
    h1 = net.addHost("h1", ip="10.1.0.1/24")
    s1 = net.addSwitch("s1", failMode="standalone")
    net.addLink(h1, s1)
    net.addLink(net.stations[0], s1)
    data = scenario_data(net)
    assert data["wired"] == {
        "subnet": "10.1.0.0/24",
        "switches": ["s1"],
        "hosts": [{"name": "h1", "ip": "10.1.0.1"}],
        "links": [["h1", "s1"]],
        "gateways": [{"station": 1, "switch": "s1"}],
    }
    with pytest.raises(MnWifiError, match="one gateway station per wired segment"):
        net.addLink(net.stations[1], s1)


def test_medium_config_carries_each_stations_power_and_model(tmp_path: Path) -> None:
    from testbed.medium import medium_config

    net = line(range=150)
    net.setPropagationModel(model="friis", sL=2)
    sc = build_scenario(net)
    cfg = medium_config(sc, "abc123", 1, tmp_path, tmp_path)
    # friis, sL 2, range 150 m at channel 6: -91 + 20 log10(4 pi 150 / lambda) + 10 log10 2 - 10 = -14.3 < 0 -> 1 dBm
    assert [s["tx_power_dbm"] for s in cfg["stations"]] == [1.0, 1.0, 1.0]
    assert cfg["radio"]["preset"] == "wmediumd"
    assert (
        cfg["radio"]["overrides"]["propagation"] == "free_space"
        and cfg["radio"]["overrides"]["system_loss"] == 2.0
    )
