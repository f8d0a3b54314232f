"""Mirror frames for the station's ``staN-wlan0`` TAP: radiotap + 802.11 data + LLC/SNAP + IP.

The router writes a copy of every frame it transmits or receives to a TAP whose link type is
radiotap (ARPHRD_IEEE80211_RADIOTAP = 803), so ``tcpdump -ni staN-wlan0`` and tshark decode the
air traffic of a station down to IP/TCP/DSR/AODV. Layouts:

- radiotap header (https://www.radiotap.org): ``it_version`` 0, ``it_pad`` 0, ``it_len``,
  ``it_present``; fields in bit order, each aligned to its natural size.

  - RX (16 bytes): Flags (bit 1, u8), Rate (bit 2, u8, 500 kb/s units), Channel (bit 3,
    u16 MHz + u16 flags), dBm Antenna Signal (bit 5, s8), dBm Antenna Noise (bit 6, s8).
  - TX (18 bytes): Flags, Rate, Channel, dBm TX power (bit 10, s8), one pad byte,
    TX Flags (bit 15, u16; 0x0008 NOACK on broadcast frames).

  The medium is 914 MHz WaveLAN (ns-2), which is not an 802.11 channel: the mirror states
  2412 MHz (channel 1, 2 GHz + CCK flags) unless configured otherwise, and 2 Mb/s.
- 802.11 data frame header (IEEE 802.11-2020 9.3.2.1), ToDS = FromDS = 0 as in an IBSS:
  addr1 = receiver (RA = DA), addr2 = transmitter (TA = SA), addr3 = BSSID
  ``02:00:00:00:00:00`` (no station has id 0); sequence control counts per transmitter.
  No FCS (radiotap Flags bit 0x10 clear).
- LLC/SNAP ``AA AA 03 00 00 00 08 00`` (RFC 1042) then the IP packet.

Kernel note: a frame written to a TAP is "received" by the kernel, which runs ``eth_type_trans``
on it regardless of the link type, so bytes 12-13 are taken as an EtherType. In both layouts those
bytes are the channel flags (``a0 00``, i.e. 0xA000), an unknown EtherType: the kernel shows the
frame to packet sockets (tcpdump) and then drops it. Keep it that way when changing the layouts
(a TX layout of 12 bytes would put the 802.11 frame control ``08 00`` there, i.e. IPv4).

Headers are precomputed per (transmitter, receiver) pair; building a frame is one
``Struct.pack`` and one concatenation (about 1 us).
"""

from __future__ import annotations

import math
import struct

from nodes.core.addr import BROADCAST, station_mac

ARPHRD_IEEE80211_RADIOTAP: int = 803
DEFAULT_FREQ_MHZ: int = 2412
DEFAULT_RATE_500KBPS: int = 4
"""2 Mb/s, the WaveLAN data rate of ns-2 and of the papers."""
BSSID: bytes = b"\x02\x00\x00\x00\x00\x00"
LLC_SNAP_IP: bytes = b"\xaa\xaa\x03\x00\x00\x00\x08\x00"

# radiotap present bits
PRESENT_FLAGS = 1 << 1
PRESENT_RATE = 1 << 2
PRESENT_CHANNEL = 1 << 3
PRESENT_DBM_ANTSIGNAL = 1 << 5
PRESENT_DBM_ANTNOISE = 1 << 6
PRESENT_DBM_TX_POWER = 1 << 10
PRESENT_TX_FLAGS = 1 << 15

RX_PRESENT = PRESENT_FLAGS | PRESENT_RATE | PRESENT_CHANNEL | PRESENT_DBM_ANTSIGNAL | PRESENT_DBM_ANTNOISE
TX_PRESENT = PRESENT_FLAGS | PRESENT_RATE | PRESENT_CHANNEL | PRESENT_DBM_TX_POWER | PRESENT_TX_FLAGS
RX_RADIOTAP_LEN = 16
TX_RADIOTAP_LEN = 18

CHAN_CCK = 0x0020
CHAN_OFDM = 0x0040
CHAN_2GHZ = 0x0080
CHAN_5GHZ = 0x0100
TX_FLAG_NOACK = 0x0008

FC_DATA = b"\x08\x00"
"""Frame control: type data, subtype 0, no flags (ToDS = FromDS = 0)."""

# one pack per frame: radiotap prefix (14 bytes) | per-frame radiotap fields | 802.11 | SNAP
_RX = struct.Struct("<14sbb22sH8s")
_TX = struct.Struct("<14sbxH22sH8s")
RX_HEADER_LEN = _RX.size  # 16 + 24 + 8
TX_HEADER_LEN = _TX.size  # 18 + 24 + 8


def channel_flags(freq_mhz: int) -> int:
    return CHAN_2GHZ | CHAN_CCK if freq_mhz < 3000 else CHAN_5GHZ | CHAN_OFDM


def _radiotap_prefix(present: int, length: int, freq_mhz: int, rate: int) -> bytes:
    """The first 14 bytes: header, Flags, Rate, Channel."""
    return struct.pack("<BBHIBBHH", 0, 0, length, present, 0, rate, freq_mhz, channel_flags(freq_mhz))


def _dbm(x: float) -> int:
    """A dBm value as radiotap's s8, rounded half away from zero, clamped (NaN: -128)."""
    if -128.0 <= x <= 127.0:  # False for NaN
        return int(x - 0.5) if x < 0 else int(x + 0.5)
    return 127 if x > 127.0 else -128


def dot11_prefix(ra: bytes, ta: bytes, bssid: bytes = BSSID) -> bytes:
    """Frame control, duration 0, addr1..addr3 (22 bytes; sequence control follows)."""
    return FC_DATA + b"\x00\x00" + ra + ta + bssid


class Mirror:
    """Builds the mirror frames of one station (``station`` transmits TX frames)."""

    __slots__ = (
        "station",
        "freq_mhz",
        "rate",
        "default_tx_power_dbm",
        "_rx_rt",
        "_tx_rt",
        "_rx_d11",
        "_tx_d11",
        "_tx_seq",
        "_rx_seq",
    )

    def __init__(
        self,
        station: int,
        freq_mhz: int = DEFAULT_FREQ_MHZ,
        rate_500kbps: int = DEFAULT_RATE_500KBPS,
        default_tx_power_dbm: float = math.nan,
    ) -> None:
        self.station = station
        self.freq_mhz = freq_mhz
        self.rate = rate_500kbps
        self.default_tx_power_dbm = default_tx_power_dbm
        self._rx_rt = _radiotap_prefix(RX_PRESENT, RX_RADIOTAP_LEN, freq_mhz, rate_500kbps)
        self._tx_rt = _radiotap_prefix(TX_PRESENT, TX_RADIOTAP_LEN, freq_mhz, rate_500kbps)
        self._rx_d11: dict[tuple[int, int], bytes] = {}
        self._tx_d11: dict[int, bytes] = {}
        self._tx_seq = 0
        self._rx_seq: dict[int, int] = {}

    def rx_frame(self, src: int, dst: int, rssi_dbm: float, noise_dbm: float, payload: bytes) -> bytes:
        """The frame ``src`` sent to ``dst`` (this station, broadcast, or overheard), as received."""
        key = (src, dst)
        d11 = self._rx_d11.get(key)
        if d11 is None:
            d11 = self._rx_d11[key] = dot11_prefix(station_mac(dst), station_mac(src))
        seq = self._rx_seq.get(src, 0)
        self._rx_seq[src] = (seq + 1) & 0xFFF
        sig = int(rssi_dbm - 0.5) if -127.5 < rssi_dbm < 0.0 else _dbm(rssi_dbm)
        noise = int(noise_dbm - 0.5) if -127.5 < noise_dbm < 0.0 else _dbm(noise_dbm)
        return _RX.pack(self._rx_rt, sig, noise, d11, seq << 4, LLC_SNAP_IP) + payload

    def tx_frame(self, dst: int, tx_power_dbm: float | None, payload: bytes) -> bytes:
        """The frame this station sends to ``dst`` (a station id or BROADCAST)."""
        d11 = self._tx_d11.get(dst)
        if d11 is None:
            d11 = self._tx_d11[dst] = dot11_prefix(station_mac(dst), station_mac(self.station))
        seq = self._tx_seq
        self._tx_seq = (seq + 1) & 0xFFF
        power = self.default_tx_power_dbm if tx_power_dbm is None else tx_power_dbm
        flags = TX_FLAG_NOACK if dst == BROADCAST else 0
        return _TX.pack(self._tx_rt, _dbm(power), flags, d11, seq << 4, LLC_SNAP_IP) + payload
