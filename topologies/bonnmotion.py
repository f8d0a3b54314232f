"""BonnMotion's native movement format (``<scenario>.movements``, often gzipped): import and export.

One line per node, in node order, each a flat list of waypoints ``t1 x1 y1 t2 x2 y2 ...``
(``t x y z`` per waypoint for 3-D scenarios, ``dims=3``; z is dropped). The node moves linearly
between consecutive waypoints, which is exactly our trajectory model. Line k (counting non-blank
lines from 0) is BonnMotion node k, our station k+1. Errors name the file, the line and the reason.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

from topologies.errors import MovementFileError
from topologies.mobility import Trajectory


def import_text(text: str, source: str = "<text>", dims: int = 2) -> dict[int, Trajectory]:
    """Parse BonnMotion movements into trajectories keyed by station id (node + 1)."""
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    width = dims + 1
    out: dict[int, Trajectory] = {}
    node = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) % width:
            raise MovementFileError(
                source,
                lineno,
                f"{len(fields)} numbers is not a multiple of {width} (t x y{' z' if dims == 3 else ''})",
            )
        values: list[float] = []
        for i, text_value in enumerate(fields):
            try:
                v = float(text_value)
            except ValueError:
                raise MovementFileError(
                    source, lineno, f"item {i + 1}: {text_value!r} is not a number"
                ) from None
            if not math.isfinite(v):
                raise MovementFileError(source, lineno, f"item {i + 1}: {text_value!r} is not finite")
            values.append(v)
        traj: Trajectory = []
        for w in range(0, len(values), width):
            t, x, y = values[w], values[w + 1], values[w + 2]
            if traj and t < traj[-1][0]:
                raise MovementFileError(
                    source,
                    lineno,
                    f"waypoint {w // width + 1}: time {t:g} s is before the previous {traj[-1][0]:g} s",
                )
            if t < 0:
                raise MovementFileError(source, lineno, f"waypoint {w // width + 1}: negative time {t:g}")
            traj.append((t, x, y))
        out[node + 1] = traj
        node += 1
    return out


def import_file(path: str | Path, dims: int = 2) -> dict[int, Trajectory]:
    """Read a ``.movements`` or ``.movements.gz`` file."""
    p = Path(path)
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = p.read_text(encoding="utf-8")
    except (OSError, EOFError) as exc:
        raise MovementFileError(str(path), 0, str(exc)) from None
    return import_text(text, str(path), dims)


def export_text(trajs: dict[int, Trajectory]) -> str:
    """BonnMotion movements for stations 1..max(trajs); a missing station is an error."""
    lines: list[str] = []
    for sid in range(1, max(trajs, default=0) + 1):
        if sid not in trajs:
            raise ValueError(f"BonnMotion numbers nodes densely; station {sid} is missing")
        lines.append(" ".join(f"{t!r} {x!r} {y!r}" for t, x, y in trajs[sid]))
    return "\n".join(lines) + "\n"
