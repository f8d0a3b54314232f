"""ns-2 movement files (the output of CMU ``setdest`` and BonnMotion's NSFile): import and export.

The format (ns-2 manual, "Mobile Networking in ns", section 16.1.3)::

    $node_(0) set X_ 150.0
    $node_(0) set Y_ 93.98
    $node_(0) set Z_ 0.0
    $ns_ at 2.0 "$node_(0) setdest 90.44 44.89 1.37"

``setdest x y speed`` at time t starts a straight move from wherever the node is at t towards
(x, y) at ``speed`` m/s; a new ``setdest`` before arrival redirects the node from its position at
that moment. ns-2 nodes are numbered from 0, our stations from 1: ``$node_(k)`` is station k+1.
``$god_`` lines (shortest-path hints written by ``setdest``), comments and blank lines are skipped;
any other line is an error naming the file, the line and the reason.

Export writes floats with ``repr`` so that an import of the export reproduces every waypoint
exactly (times to within a rounding of ``distance / speed``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from topologies.errors import MovementFileError
from topologies.mobility import Trajectory, position_at

_NUM = r'([^\s"]+)'
_SET = re.compile(rf"^\$node_\((\d+)\)\s+set\s+([XYZ])_\s+{_NUM}$")
_SETDEST = re.compile(rf'^\$ns_\s+at\s+{_NUM}\s+"\$node_\((\d+)\)\s+setdest\s+{_NUM}\s+{_NUM}\s+{_NUM}\s*"$')
_GOD = re.compile(r'^(\$god_\s|\$ns_\s+at\s+\S+\s+"\$god_\s)')


def export_text(trajs: dict[int, Trajectory], comment: str = "") -> str:
    """An ns-2 movement file for ``trajs`` (station N becomes ``$node_(N-1)``)."""
    lines = ["# ns-2 movement file written by topologies.ns2: station N is $node_(N-1)"]
    if comment:
        lines += [f"# {c}" for c in comment.splitlines()]
    for sid in sorted(trajs):
        traj, k = trajs[sid], sid - 1
        if sid < 1:
            raise ValueError(f"station ids start at 1, got {sid}")
        _, x, y = traj[0]
        lines += [f"$node_({k}) set X_ {x!r}", f"$node_({k}) set Y_ {y!r}", f"$node_({k}) set Z_ 0.0"]
    for sid in sorted(trajs):
        traj, k = trajs[sid], sid - 1
        for (t0, x0, y0), (t1, x1, y1) in zip(traj, traj[1:], strict=False):
            d = math.hypot(x1 - x0, y1 - y0)
            if d == 0:
                continue  # a pause: nothing to say
            if t1 <= t0:
                raise ValueError(f"station {sid}: a jump at t = {t0} s cannot be written as setdest")
            lines.append(f'$ns_ at {t0!r} "$node_({k}) setdest {x1!r} {y1!r} {d / (t1 - t0)!r}"')
    return "\n".join(lines) + "\n"


def import_text(text: str, source: str = "<text>") -> dict[int, Trajectory]:
    """Parse an ns-2 movement file into trajectories keyed by station id (node + 1)."""
    start: dict[int, dict[str, float]] = {}
    start_line: dict[int, int] = {}
    moves: dict[int, list[tuple[float, float, float, float, int]]] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or _GOD.match(line):
            continue
        if m := _SET.match(line):
            node, axis = int(m[1]), m[2]
            start.setdefault(node, {})[axis] = _number(m[3], source, lineno, f"{axis}_")
            start_line.setdefault(node, lineno)
        elif m := _SETDEST.match(line):
            t = _number(m[1], source, lineno, "time")
            node = int(m[2])
            x = _number(m[3], source, lineno, "x")
            y = _number(m[4], source, lineno, "y")
            speed = _number(m[5], source, lineno, "speed")
            if t < 0:
                raise MovementFileError(source, lineno, f"negative time {t}")
            if speed < 0:
                raise MovementFileError(source, lineno, f"negative speed {speed}")
            moves.setdefault(node, []).append((t, x, y, speed, lineno))
        else:
            raise MovementFileError(
                source,
                lineno,
                f"not an ns-2 movement line (expected '$node_(i) set X_ v' or "
                f"'$ns_ at t \"$node_(i) setdest x y speed\"'): {line[:80]!r}",
            )
    out: dict[int, Trajectory] = {}
    for node in sorted(set(start) | set(moves)):
        pos = start.get(node, {})
        if "X" not in pos or "Y" not in pos:
            lineno = start_line.get(node) or moves[node][0][4]
            raise MovementFileError(source, lineno, f"$node_({node}) has no initial X_ and Y_")
        traj: Trajectory = [(0.0, pos["X"], pos["Y"])]
        for t, x, y, speed, _ in sorted(moves.get(node, []), key=lambda m: m[0]):
            _setdest(traj, t, x, y, speed)
        out[node + 1] = traj
    return out


def import_file(path: str | Path) -> dict[int, Trajectory]:
    """Read an ns-2 movement file; errors name the file and the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MovementFileError(str(path), 0, exc.strerror or str(exc)) from None
    return import_text(text, str(path))


def _number(text: str, source: str, lineno: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise MovementFileError(source, lineno, f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise MovementFileError(source, lineno, f"{what}: {text!r} is not a finite number")
    return value


def _setdest(traj: Trajectory, t: float, x: float, y: float, speed: float) -> None:
    """Apply ``setdest x y speed`` at time ``t`` to ``traj`` (commands in time order)."""
    t_last = traj[-1][0]
    if t < t_last:
        # Redirected before arriving: the previous leg ends where the node is at t.
        cx, cy = position_at(traj, t)
        traj.pop()
        if traj[-1][0] < t:
            traj.append((t, cx, cy))
        else:
            traj[-1] = (t, cx, cy)
    elif t > t_last:
        traj.append((t, traj[-1][1], traj[-1][2]))  # paused until now
    _, cx, cy = traj[-1]
    d = math.hypot(x - cx, y - cy)
    if speed == 0 or d == 0:
        return
    traj.append((t + d / speed, x, y))
