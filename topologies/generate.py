"""Write scenario files and movement files from the command line.

    python -m topologies.generate chain --n 5 --spacing 200 > chain.yaml
    python -m topologies.generate grid --rows 3 --cols 3 --spacing 200 > grid.yaml
    python -m topologies.generate random --n 20 --x 1000 --y 750 --speed 10 --protocol dsr > r.yaml
    python -m topologies.generate setdest topologies/chain5-dsr-mobile.yaml --seed 1 > moves.tcl
    python -m topologies.generate bonnmotion topologies/chain5-dsr-mobile.yaml --seed 1 > x.movements

Every generated scenario is validated before it is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from topologies import bonnmotion, ns2
from topologies.errors import ScenarioError
from topologies.layout import trajectories
from topologies.scenario import PROTOCOLS, load_scenario, scenario_from_dict


def _base(name: str, n: int, duration_s: float, protocol: str, cc: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "",
        "duration_s": duration_s,
        "seed": 1,
        "field": {"x_m": 1000.0, "y_m": 1000.0},
        "stations": {"count": n},
        "radio": {"preset": "ns2-wavelan"},
        "mobility": {"model": "static"},
        "traffic": {"tcp": [{"src": 1, "dst": n, "start_s": 1, "cc": cc}]},
        "routing": {"protocol": protocol},
    }


def chain(
    n: int, spacing_m: float, duration_s: float = 30, protocol: str = "static", cc: str = "reno"
) -> dict[str, Any]:
    """``n`` static stations on a line ``spacing_m`` apart, one TCP flow from the first to the last."""
    sc = _base(f"chain{n}", n, duration_s, protocol, cc)
    sc["description"] = f"{n}-station chain, {spacing_m:g} m spacing"
    margin = 50.0
    sc["field"] = {"x_m": (n - 1) * spacing_m + 2 * margin, "y_m": 2 * margin}
    sc["stations"]["placement"] = {"kind": "line", "spacing_m": spacing_m, "origin": [margin, margin]}
    return sc


def grid(
    rows: int, cols: int, spacing_m: float, duration_s: float = 30, protocol: str = "static", cc: str = "reno"
) -> dict[str, Any]:
    """A ``rows`` x ``cols`` static grid, one TCP flow between opposite corners."""
    n = rows * cols
    sc = _base(f"grid{n}", n, duration_s, protocol, cc)
    sc["description"] = f"{rows}x{cols} grid, {spacing_m:g} m spacing"
    margin = 50.0
    sc["field"] = {"x_m": (cols - 1) * spacing_m + 2 * margin, "y_m": (rows - 1) * spacing_m + 2 * margin}
    sc["stations"]["placement"] = {
        "kind": "grid",
        "cols": cols,
        "spacing_m": spacing_m,
        "origin": [margin, margin],
    }
    return sc


def random_scenario(
    n: int,
    x_m: float,
    y_m: float,
    speed_mps: float,
    duration_s: float = 60,
    protocol: str = "dsr",
    cc: str = "reno",
    pause_s: float = 0,
) -> dict[str, Any]:
    """``n`` stations placed at random; random waypoint at ``speed_mps`` +- 1 m/s (static if 0)."""
    sc = _base(f"random{n}", n, duration_s, protocol, cc)
    sc["description"] = f"{n} stations in {x_m:g}x{y_m:g} m, random waypoint {speed_mps:g} +- 1 m/s"
    sc["field"] = {"x_m": x_m, "y_m": y_m}
    sc["stations"]["placement"] = {"kind": "random"}
    if speed_mps > 0:
        sc["mobility"] = {
            "model": "random_waypoint",
            "min_speed_mps": max(speed_mps - 1, 0.0),
            "max_speed_mps": speed_mps + 1,
            "pause_s": pause_s,
        }
    return sc


def dump(data: dict[str, Any]) -> str:
    """YAML text for a scenario dict, after validating it."""
    scenario_from_dict(data, "<generated>")
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m topologies.generate", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser, protocol: str, duration: float) -> None:
        p.add_argument("--duration", type=float, default=duration, help="seconds (default %(default)s)")
        p.add_argument("--protocol", choices=PROTOCOLS, default=protocol)
        p.add_argument("--cc", default="reno", help="TCP congestion control (default reno)")
        p.add_argument("--name", help="scenario name (default from the shape)")

    p = sub.add_parser("chain", help="stations on a line")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--spacing", type=float, default=200.0, help="metres (default 200)")
    common(p, "static", 30)
    p = sub.add_parser("grid", help="stations on a grid")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--cols", type=int, required=True)
    p.add_argument("--spacing", type=float, default=200.0)
    common(p, "static", 30)
    p = sub.add_parser("random", help="random placement, random waypoint")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--x", type=float, required=True, help="field width, metres")
    p.add_argument("--y", type=float, required=True, help="field height, metres")
    p.add_argument("--speed", type=float, default=0.0, help="m/s, +-1 (0: static)")
    p.add_argument("--pause", type=float, default=0.0, help="seconds")
    common(p, "dsr", 60)
    for cmd, what in (("setdest", "an ns-2 movement file"), ("bonnmotion", "BonnMotion movements")):
        p = sub.add_parser(cmd, help=f"write a scenario's trajectories as {what}")
        p.add_argument("scenario")
        p.add_argument("--seed", type=int, help="default: the scenario's seed")

    args = parser.parse_args(argv)
    try:
        if args.cmd in ("setdest", "bonnmotion"):
            sc = load_scenario(args.scenario)
            seed = sc.seed if args.seed is None else args.seed
            trajs = trajectories(sc, seed)
            if args.cmd == "setdest":
                sys.stdout.write(ns2.export_text(trajs, f"scenario {sc.name}, seed {seed}"))
            else:
                sys.stdout.write(bonnmotion.export_text(trajs))
            return 0
        if args.cmd == "chain":
            data = chain(args.n, args.spacing, args.duration, args.protocol, args.cc)
        elif args.cmd == "grid":
            data = grid(args.rows, args.cols, args.spacing, args.duration, args.protocol, args.cc)
        else:
            data = random_scenario(
                args.n, args.x, args.y, args.speed, args.duration, args.protocol, args.cc, args.pause
            )
        if args.name:
            data["name"] = args.name
        sys.stdout.write(dump(data))
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
