"""Names of everything a run creates (docs/interfaces.md section 1).

Every namespace, interface, firewall table and state directory of a run carries the prefix
``mt<runid>``, so that cleanup finds ours by name and never touches anyone else's.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Final

RUN_ROOT: Final = Path("/run/manet")
NETNS_DIR: Final = Path("/run/netns")
RUN_ID_RE: Final = re.compile(r"^[0-9a-f]{6}$")
#: a namespace of ours: ``mt`` + 6 hex + ``-`` + anything.
OUR_NETNS_RE: Final = re.compile(r"^mt([0-9a-f]{6})-")


def new_run_id() -> str:
    """Six lowercase hex digits not used by a live run directory or namespace on this machine."""
    while True:
        run_id = secrets.token_hex(3)
        if not (RUN_ROOT / run_id).exists() and not any(NETNS_DIR.glob(f"mt{run_id}-*")):
            return run_id


def prefix(run_id: str) -> str:
    return f"mt{run_id}"


def netns_name(run_id: str, station: int) -> str:
    return f"mt{run_id}-sta{station}"


def station_ip(station: int) -> str:
    return f"10.0.{station >> 8}.{station & 255}"


def station_mac(station: int) -> str:
    return f"02:00:00:00:{station >> 8:02x}:{station & 255:02x}"


def wlan_name(station: int) -> str:
    return f"sta{station}-wlan0"


def run_dir(run_id: str) -> Path:
    return RUN_ROOT / run_id


def run_id_of_netns(name: str) -> str | None:
    """The run id of one of our namespaces, or None when the name is not ours."""
    m = OUR_NETNS_RE.match(name)
    return m.group(1) if m else None
