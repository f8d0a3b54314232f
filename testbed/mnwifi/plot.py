"""``plotGraph``: stations, their ranges and the links between them, drawn with matplotlib.

Where a display is available (``DISPLAY`` set and an interactive backend) the figure is a live
window, redrawn by a matplotlib timer whenever the GUI event loop runs (``plt.pause``, the end of
the script). Headless, the same picture is saved to ``plotgraph.png`` in the run's results when
the network is built, every ``REFRESH_S`` while stations move, on ``setPosition`` and at stop.
A link is drawn between two stations whose distance is within both of their ranges.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from testbed.mnwifi.net import Mininet_wifi

REFRESH_S: Final = 1.0
"""Redraw period while anything moves, seconds."""


def live_display() -> bool:
    """True when a window can be shown (a display and an interactive matplotlib backend)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return False
    import matplotlib

    return matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo", "template")


def links(pos: dict[int, tuple[float, float, float]], ranges: dict[int, float]) -> list[tuple[int, int]]:
    """Pairs of stations each within the other's range."""
    ids = sorted(pos)
    out = []
    for i in ids:
        for j in ids:
            if i < j and math.dist(pos[i][:2], pos[j][:2]) <= min(ranges.get(i, 0.0), ranges.get(j, 0.0)):
                out.append((i, j))
    return out


class Plotter:
    def __init__(self, net: Mininet_wifi, png: Path) -> None:
        self.net = net
        self.png = png
        self.live = live_display()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fig: Any = None
        self.ax: Any = None
        self.saves = 0

    def start(self) -> None:
        import matplotlib

        if not self.live:
            matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt

        self.fig, self.ax = plt.subplots(figsize=(7, 7 * self._aspect()))
        self.update()
        if self.live:
            plt.ion()
            plt.show(block=False)
            self._timer = self.fig.canvas.new_timer(interval=int(REFRESH_S * 1000))
            self._timer.add_callback(self.update)
            self._timer.start()
        else:
            from testbed.mnwifi.log import info

            info(f"*** plotGraph: no display; the graph is saved to {self.png}\n")
            if self.net.mob is not None or self.net.scripted:
                self._thread = threading.Thread(target=self._refresh, name="plotgraph", daemon=True)
                self._thread.start()

    def _aspect(self) -> float:
        mx, my = self.net.plot_bounds or (100.0, 100.0)
        return max(0.3, min(2.0, my / mx if mx > 0 else 1.0))

    def _refresh(self) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                self.update()
            except Exception:  # the network may be stopping under us
                return

    def draw(self) -> None:
        """Draw the current state on the axes (no I/O)."""
        from matplotlib.patches import Circle

        net = self.net
        pos = net.positions()
        ranges = net.ranges()
        ax = self.ax
        ax.clear()
        mx, my = net.plot_bounds or (100.0, 100.0)
        ax.set_xlim(0, mx)
        ax.set_ylim(0, my)
        ax.set_aspect("equal")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        for i, j in links(pos, ranges):
            ax.plot([pos[i][0], pos[j][0]], [pos[i][1], pos[j][1]], color="tab:blue", lw=1)
        for st in net.stations:
            x, y, _ = pos.get(st.id, st.position)
            ax.add_patch(Circle((x, y), ranges.get(st.id, 0.0), fill=True, alpha=0.08, color="tab:green"))
            ax.plot([x], [y], "o", color="black", ms=4)
            ax.annotate(st.name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        t = net.tb.now_s() if net.tb is not None else 0.0
        ax.set_title(f"{len(net.stations)} stations, t = {t:.1f} s")

    def update(self) -> None:
        with self._lock:
            if self.fig is None:
                return
            self.draw()
            if self.live:
                self.fig.canvas.draw_idle()
            else:
                self.fig.savefig(self.png, dpi=90)
                self.saves += 1

    def pump(self, seconds: float) -> None:
        """Let a live window redraw and handle events for ``seconds`` (the CLI calls this while it
        waits for input); headless, just wait."""
        if self.live and self.fig is not None:
            import matplotlib.pyplot as plt

            plt.pause(seconds)
        else:
            self._stop.wait(seconds)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        try:
            self.update()
        except Exception:
            pass
