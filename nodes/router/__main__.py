"""``python -m nodes.router --config FILE [--netns NAME]``: one station router, standalone."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from nodes.router.main import EXIT_CONFIG, run
from nodes.router.netdev import enter_netns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nodes.router", description=__doc__)
    ap.add_argument("--config", required=True, help="router config JSON (docs/interfaces.md section 4)")
    ap.add_argument("--netns", help="enter /run/netns/NAME (or a netns path) first")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        with open(args.config) as f:
            config = json.load(f)
    except (OSError, ValueError) as exc:
        logging.getLogger("nodes.router").error("cannot read %s: %s", args.config, exc)
        return EXIT_CONFIG
    if args.netns:
        enter_netns(args.netns)
    return run(config)


if __name__ == "__main__":
    sys.exit(main())
