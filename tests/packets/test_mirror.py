"""Mirror frames (nodes.formats.radiotap) against scapy's RadioTap/Dot11/LLC/SNAP and tshark."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scapy.layers.dot11 import Dot11, RadioTap
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import LLC, SNAP
from scapy.packet import raw
from scapy.utils import wrpcap

from nodes.core.addr import BROADCAST
from nodes.formats import radiotap as rt

IP_TCP = raw(
    IP(src="10.0.0.1", dst="10.0.0.3", ttl=63) / TCP(sport=40000, dport=5201, flags="PA") / (b"x" * 100)
)
IP_UDP = raw(IP(src="10.0.0.2", dst="255.255.255.255") / UDP(sport=654, dport=654) / (b"\x01" * 24))


def dot11(ra: str, ta: str, seq: int) -> Dot11:
    return Dot11(type=2, subtype=0, FCfield=0, addr1=ra, addr2=ta, addr3="02:00:00:00:00:00", SC=seq << 4)


def snap() -> LLC:
    return LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=0x0800)


def test_rx_frame_matches_scapy() -> None:
    m = rt.Mirror(2)
    cases = [(-61.4, -95.0, -61, -95), (-80.6, -99.5, -81, -100), (-20.0, -92.2, -20, -92)]
    for seq, (sig, noise, want_sig, want_noise) in enumerate(cases):
        frame = m.rx_frame(1, 2, sig, noise, IP_TCP)
        ref = (
            RadioTap(
                present="Flags+Rate+Channel+dBm_AntSignal+dBm_AntNoise",
                Flags=0,
                Rate=2,
                ChannelFrequency=2412,
                ChannelFlags="CCK+2GHz",
                dBm_AntSignal=want_sig,
                dBm_AntNoise=want_noise,
            )
            / dot11("02:00:00:00:00:02", "02:00:00:00:00:01", seq)
            / snap()
            / IP(IP_TCP)
        )
        assert frame == raw(ref)
        back = RadioTap(frame)
        assert back.dBm_AntSignal == want_sig
        assert back[Dot11].addr2 == "02:00:00:00:00:01"
        assert raw(back[IP]) == IP_TCP


def test_rx_broadcast_and_overheard_addresses() -> None:
    m = rt.Mirror(5)
    b = RadioTap(m.rx_frame(4, BROADCAST, -70.0, -95.0, IP_UDP))
    assert (b[Dot11].addr1, b[Dot11].addr2) == ("ff:ff:ff:ff:ff:ff", "02:00:00:00:00:04")
    o = RadioTap(m.rx_frame(4, 6, -70.0, -95.0, IP_UDP))
    assert (o[Dot11].addr1, o[Dot11].addr2) == ("02:00:00:00:00:06", "02:00:00:00:00:04")


def test_tx_frame_literal_radiotap_then_scapy_dot11() -> None:
    # scapy 2.6 has no dBm_TX_Power field (it would mis-align TXFlags), so the radiotap part is
    # checked against literal bytes and the rest against scapy.
    m = rt.Mirror(2, default_tx_power_dbm=15.0)
    frame = m.tx_frame(3, None, IP_TCP)
    assert frame[:18] == bytes.fromhex(
        "00"
        "00"
        "1200"
        "0e840000"  # version, pad, len 18, present Flags|Rate|Channel|TXPower|TXFlags
        "00"
        "04"
        "6c09"
        "a000"  # flags, 2 Mb/s, 2412 MHz, CCK|2GHz
        "0f"
        "00"
        "0000"  # 15 dBm, pad, TX flags
    )
    assert frame[18:] == raw(dot11("02:00:00:00:00:03", "02:00:00:00:00:02", 0) / snap() / IP(IP_TCP))
    bcast = m.tx_frame(BROADCAST, -3.2, IP_UDP)
    assert bcast[14:18] == bytes.fromhex("fd000800")  # -3 dBm, NOACK
    assert bcast[18:] == raw(dot11("ff:ff:ff:ff:ff:ff", "02:00:00:00:00:02", 1) / snap() / IP(IP_UDP))
    assert RadioTap(frame).len == 18


def test_kernel_ethertype_bytes_are_not_a_known_protocol() -> None:
    # bytes 12-13 are read as an EtherType by the kernel (see nodes/formats/radiotap.py)
    m = rt.Mirror(2)
    for frame in (
        m.rx_frame(1, 2, -60, -95, IP_TCP),
        m.tx_frame(BROADCAST, None, IP_TCP),
        rt.Mirror(2, freq_mhz=5180).tx_frame(1, 0.0, IP_TCP),
    ):
        ethertype = int.from_bytes(frame[12:14], "big")
        assert ethertype >= 0x600 and ethertype not in (0x0800, 0x0806, 0x86DD, 0x8100)


@pytest.mark.parametrize(
    "x,want",
    [(-60.4, -60), (-60.5, -61), (0.0, 0), (200.0, 127), (-500.0, -128), (float("nan"), -128), (12.5, 13)],
)
def test_dbm_rounding(x: float, want: int) -> None:
    assert rt._dbm(x) == want
    if -127.5 < x < 0:
        frame = rt.Mirror(1).rx_frame(2, 1, x, x, b"")
        assert int.from_bytes(frame[14:15], "big", signed=True) == want


def test_sequence_numbers_wrap() -> None:
    m = rt.Mirror(1)
    for _ in range(4096):
        m.tx_frame(2, None, b"")
    assert m.tx_frame(2, None, b"")[18 + 22 : 18 + 24] == b"\x00\x00"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_decodes_mirror_pcap(tmp_path: Path) -> None:
    m = rt.Mirror(2, default_tx_power_dbm=15.0)
    frames = [
        m.rx_frame(1, 2, -61.0, -95.0, IP_TCP),
        m.tx_frame(3, None, IP_TCP),
        m.tx_frame(BROADCAST, 10.0, IP_UDP),
    ]
    pcap = tmp_path / "mirror.pcap"
    wrpcap(str(pcap), [RadioTap(f) for f in frames], linktype=127)
    fields = [
        "radiotap.dbm_antsignal",
        "radiotap.dbm_antnoise",
        "radiotap.txpower",
        "wlan.ra",
        "wlan.ta",
        "ip.src",
        "ip.dst",
        "tcp.dstport",
        "udp.dstport",
        "_ws.expert.message",
    ]
    out = subprocess.run(
        [
            "tshark",
            "-n",
            "-r",
            str(pcap),
            "-T",
            "fields",
            "-E",
            "separator=|",
            *sum([["-e", f] for f in fields], []),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in out]
    assert len(rows) == 3
    assert rows[0]["radiotap.dbm_antsignal"] == "-61" and rows[0]["radiotap.dbm_antnoise"] == "-95"
    assert rows[0]["wlan.ta"] == "02:00:00:00:00:01" and rows[0]["tcp.dstport"] == "5201"
    assert rows[1]["radiotap.txpower"] == "15" and rows[1]["wlan.ra"] == "02:00:00:00:00:03"
    assert (rows[1]["ip.src"], rows[1]["ip.dst"]) == ("10.0.0.1", "10.0.0.3")
    assert rows[2]["wlan.ra"] == "ff:ff:ff:ff:ff:ff" and rows[2]["udp.dstport"] == "654"
    # (tshark's TCP analysis calls the forwarded copy of a segment a "suspected retransmission": a
    # relay's capture holds every segment twice, as received and as sent, like a real one would)
    assert not any("alformed" in r["_ws.expert.message"] for r in rows), rows
