"""A Mininet-style interactive CLI on a running testbed (``python -m testbed.cli SCENARIO``).

Commands (one subprocess each, exit code shown; station names in arguments become addresses):

    sta1 ping -c3 sta5           run a command in sta1's namespace (or a wired host's: h1 ping sta5)
    sta3 tcpdump -ni sta3-wlan0 -c 10
    stations                     ids, namespaces, addresses, positions
    links                        pairs in range (medium positions, nominal range)
    move sta3 400 50             move a station (medium control socket)
    counters                     the medium's counters
    traffic                      run the scenario's flows now (same as python -m testbed.run)
    quit                         tear everything down
"""

from __future__ import annotations

import argparse
import cmd
import json
import math
import re
import shlex
import signal
import subprocess
import sys
from typing import Any

from testbed.medium import MediumError
from testbed.run import BringUpError, Testbed, _raise_exit, print_table
from testbed.station import Station
from topologies.scenario import ScenarioError

STA_RE = re.compile(r"^sta(\d+)$")


class Shell(cmd.Cmd):
    """What every testbed shell shares: ``quit``/``exit``/end of input leave, an empty line
    does nothing (``cmd.Cmd`` would repeat the last command)."""

    def do_quit(self, arg: str) -> bool:
        """quit: leave."""
        return True

    do_exit = do_quit
    do_EOF = do_quit

    def emptyline(self) -> bool:
        return False


class TestbedCli(Shell):
    intro = "MANET testbed CLI. Type help or ?. `sta1 ping -c3 sta5`, `stations`, `links`, `quit`."
    prompt = "manet> "

    def __init__(self, tb: Testbed) -> None:
        super().__init__()
        self.tb = tb

    # ------------------------------------------------------------------ helpers
    def substitute(self, args: list[str]) -> list[str]:
        """``staN`` as a whole argument becomes its address (Mininet's habit)."""
        out = []
        for a in args:
            m = STA_RE.match(a)
            if m and int(m.group(1)) in self.tb.stations:
                out.append(self.tb.stations[int(m.group(1))].ip)
            else:
                out.append(self.tb.hosts[a].ip if a in self.tb.hosts else a)
        return out

    def positions(self) -> dict[int, tuple[float, float]]:
        try:
            rep = self.tb.medium("positions")
        except (OSError, MediumError) as exc:
            print(f"medium: {exc}")
            return {}
        raw: Any = rep.get("positions", {})
        out: dict[int, tuple[float, float]] = {}
        if isinstance(raw, dict):
            for k, v in raw.items():
                out[int(k)] = (
                    (float(v[0]), float(v[1])) if isinstance(v, list) else (float(v["x"]), float(v["y"]))
                )
        elif isinstance(raw, list):
            for item in raw:
                out[int(item.get("station", item.get("id")))] = (float(item["x"]), float(item["y"]))
        return out

    # ------------------------------------------------------------------ commands
    def default(self, line: str) -> None:
        try:
            parts = shlex.split(line)
        except ValueError as exc:
            print(f"*** {exc}")
            return
        if not parts:
            return
        m = STA_RE.match(parts[0])
        st: Station
        if parts[0] in self.tb.hosts:  # a wired host (scenario ``wired``)
            st = self.tb.hosts[parts[0]]
        elif not m or int(m.group(1)) not in self.tb.stations:
            print(f"*** unknown command or station: {parts[0]!r} (try help)")
            return
        else:
            st = self.tb.stations[int(m.group(1))]
        argv = self.substitute(parts[1:])
        if not argv:
            print(f"usage: {st.name} COMMAND [ARGS]")
            return
        # foreground, output streamed to the terminal; Ctrl-C stops the command, not the CLI
        proc = subprocess.Popen(st.exec_argv(argv))
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            rc = proc.wait()
        print(f"[exit {rc}]")

    def do_stations(self, arg: str) -> None:
        """stations: id, namespace, address and position of every station."""
        pos = self.positions()
        for sid, st in sorted(self.tb.stations.items()):
            p = pos.get(sid)
            where = f"({p[0]:.1f}, {p[1]:.1f})" if p else "?"
            print(f"{st.name:>7}  {st.netns:<20} {st.ip:<12} {where}")
        for h in self.tb.hosts.values():
            print(f"{h.name:>7}  {h.netns:<20} {h.ip:<12} (wired)")

    def do_links(self, arg: str) -> None:
        """links: pairs of stations within the nominal radio range at their current positions."""
        pos = self.positions()
        r = self.tb.scenario.nominal_range_m()
        ids = sorted(pos)
        n = 0
        for i in ids:
            for j in ids:
                if i < j and math.dist(pos[i], pos[j]) <= r:
                    print(f"sta{i} <-> sta{j}  {math.dist(pos[i], pos[j]):.1f} m")
                    n += 1
        print(f"{n} links (range {r:.0f} m)")

    def do_move(self, arg: str) -> None:
        """move staN X Y: move a station (metres)."""
        parts = arg.split()
        m = STA_RE.match(parts[0]) if parts else None
        if len(parts) != 3 or not m:
            print("usage: move staN X Y")
            return
        try:
            print(self.tb.medium("move", station=int(m.group(1)), x=float(parts[1]), y=float(parts[2])))
        except (OSError, MediumError, ValueError) as exc:
            print(f"*** {exc}")

    def do_counters(self, arg: str) -> None:
        """counters: the medium's counters."""
        try:
            print(json.dumps(self.tb.medium("counters"), indent=1))
        except (OSError, MediumError) as exc:
            print(f"*** {exc}")

    def do_traffic(self, arg: str) -> None:
        """traffic: run the scenario's flows now (blocks for the scenario's duration)."""
        print_table(self.tb.run())

    def do_quit(self, arg: str) -> bool:
        """quit: tear the testbed down and leave."""
        return True

    do_exit = do_quit
    do_EOF = do_quit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m testbed.cli", description="Interactive CLI on a running testbed."
    )
    ap.add_argument("scenario")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--experiment", default="cli")
    ap.add_argument("--out", default="results")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    try:
        tb = Testbed(args.scenario, seed=args.seed, experiment=args.experiment, out_root=args.out)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with tb:
            cli = TestbedCli(tb)
            while True:
                try:
                    cli.cmdloop()
                    break
                except KeyboardInterrupt:
                    print()
                    cli.intro = ""
    except (BringUpError, MediumError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
