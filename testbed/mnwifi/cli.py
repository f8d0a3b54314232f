"""``CLI(net)``: Mininet's command line over the testbed, reading commands from standard input.

``sta1 ping -c1 sta2`` (node names as whole arguments become addresses), ``pingall``, ``nodes``,
``net``, ``links``, ``position sta1``, ``py EXPR``, ``exit``/``quit``/end of input. One
subprocess per command; its output is printed as it comes.
"""

from __future__ import annotations

import math
import shlex
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from testbed.cli import Shell

if TYPE_CHECKING:
    from testbed.mnwifi.net import Mininet_wifi


PLOT_PUMP_S = 0.1
"""How long the live plot's GUI loop runs between two checks for input, seconds."""


class CLI(Shell):
    prompt = "mininet-wifi> "

    def __init__(self, net: Mininet_wifi, script: str | None = None, **kwargs: Any) -> None:
        super().__init__(stdin=sys.stdin, stdout=sys.stdout)
        self.net = net
        if not sys.stdin.isatty():
            self.use_rawinput = False
            self.prompt = ""
        net.build()
        self.run()

    def run(self) -> None:
        plotter = self.net.plotter
        if plotter is not None and plotter.live:
            self.run_with_plot(plotter)
            return
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                print()

    def run_with_plot(self, plotter: Any) -> None:
        """Read commands while the live plot window keeps redrawing (it needs the GUI loop)."""
        import select

        while True:
            sys.stdout.write(self.prompt)
            sys.stdout.flush()
            line = ""
            try:
                while True:
                    ready, _, _ = select.select([sys.stdin], [], [], 0.0)
                    if ready:
                        line = sys.stdin.readline()
                        break
                    plotter.pump(PLOT_PUMP_S)
            except KeyboardInterrupt:
                print()
                continue
            if not line:  # end of input
                return
            if self.onecmd(line.rstrip("\n")):
                return

    def names(self) -> dict[str, str]:
        return {n.name: n.IP() for n in [*self.net.stations, *self.net.hosts]}

    def default(self, line: str) -> None:
        try:
            parts = shlex.split(line)
        except ValueError as exc:
            print(f"*** {exc}")
            return
        if not parts:
            return
        node = next((n for n in [*self.net.stations, *self.net.hosts] if n.name == parts[0]), None)
        if node is None:
            print(f"*** Unknown command: {line}")
            return
        addr = self.names()
        argv = [addr.get(a, a) for a in parts[1:]]
        if not argv:
            print(f"*** Enter a command for node: {node.name} <cmd>")
            return
        live = node._live("cmd")
        sys.stdout.flush()
        proc = subprocess.Popen(
            live.exec_argv(" ".join(shlex.quote(a) for a in argv)), stdin=subprocess.DEVNULL
        )
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait()

    def do_pingall(self, arg: str) -> None:
        """pingall: every node pings every other once."""
        self.net.pingAll()

    def do_nodes(self, arg: str) -> None:
        """nodes: list the nodes."""
        print("available nodes are: \n" + " ".join(n.name for n in self.net.nodes()))

    def do_net(self, arg: str) -> None:
        """net: the nodes and their links."""
        for st in self.net.stations:
            print(f"{st.name} {st.wintfs[0]}:adhoc")
        for a, b in self.net.wired_links:
            print(f"{a} <-> {b}")
        for sid, sw in self.net.gateways:
            print(f"sta{sid}-eth1 <-> {sw}")

    def do_links(self, arg: str) -> None:
        """links: stations each within the other's range now."""
        from testbed.mnwifi.plot import links

        pos = self.net.positions()
        names = {st.id: st.name for st in self.net.stations}
        for i, j in links(pos, self.net.ranges()):
            print(f"{names[i]} <-> {names[j]} {math.dist(pos[i][:2], pos[j][:2]):.1f} m")

    def do_position(self, arg: str) -> None:
        """position NODE: where a station is now."""
        pos = self.net.positions()
        for st in self.net.stations:
            if st.name == arg.strip():
                x, y, z = pos.get(st.id, st.position)
                print(f"{x:.2f},{y:.2f},{z:.2f}")
                return
        print(f"*** no station {arg.strip()!r}")

    def do_py(self, arg: str) -> None:
        """py EXPR: evaluate a Python expression with the nodes and net in scope."""
        scope: dict[str, Any] = {n.name: n for n in self.net.nodes()}
        scope["net"] = self.net
        try:
            result = eval(arg, scope)  # noqa: S307 - Mininet's py command, on the user's own terminal
        except Exception as exc:
            print(f"*** {type(exc).__name__}: {exc}")
            return
        if result is not None:
            print(result)

    def do_exit(self, arg: str) -> bool:
        """exit: leave the CLI."""
        return True

    do_quit = do_exit
    do_EOF = do_exit


CLI_wifi = CLI
