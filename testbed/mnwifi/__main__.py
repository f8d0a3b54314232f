"""``python3 -m testbed.mnwifi [--out DIR] [--experiment NAME] script.py [args]``.

Runs the script as ``__main__`` with ``sys.argv = [script, *args]`` and an import hook that
serves ``mn_wifi.*`` and ``mininet.*`` from ``testbed/mnwifi/shim``. A module Mininet-WiFi has but
we do not provide is a clear ImportError. Networks the script built and did not stop are stopped
at the end (also on an exception, Ctrl-C or SIGTERM), so a run never outlives the command.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import os
import runpy
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

SHIM = Path(__file__).resolve().parent / "shim"
SERVED = ("mn_wifi", "mininet")


class ShimFinder(importlib.abc.MetaPathFinder):
    """Serve ``mn_wifi``/``mininet`` (and their submodules) from ``SHIM``, ahead of sys.path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in SERVED:
            return None
        search = [str(SHIM)] if "." not in fullname else list(path or [])
        spec = importlib.machinery.PathFinder.find_spec(fullname, search)
        if spec is None:
            provided = sorted(f"{top}.{p.stem}" for p in (SHIM / top).glob("*.py") if p.stem != "__init__")
            raise ImportError(
                f"{fullname} is not provided by the testbed's Mininet-WiFi API "
                f"(provided: {', '.join(provided)}; see docs/mininet-wifi.md)",
                name=fullname,
            )
        return spec


def install() -> ShimFinder:
    """Put the finder first on ``sys.meta_path`` and forget any ``mn_wifi``/``mininet`` imported."""
    for name in list(sys.modules):
        if name.partition(".")[0] in SERVED:
            del sys.modules[name]
    finder = ShimFinder()
    sys.meta_path.insert(0, finder)
    return finder


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m testbed.mnwifi",
        description="Run a Mininet-WiFi script on the testbed (docs/mininet-wifi.md).",
    )
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--experiment", default="mnwifi", help="experiment name (default: mnwifi)")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    script = Path(args.script)
    if os.geteuid() != 0:
        print(
            "error: the testbed needs root (network namespaces, the medium's real-time priority)",
            file=sys.stderr,
        )
        return 2
    if not script.is_file():
        print(f"error: {script}: no such file", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    from testbed.medium import MediumError
    from testbed.mnwifi import net as mnnet
    from testbed.run import BringUpError
    from testbed.wired import WiredError
    from topologies.scenario import ScenarioError

    mnnet.DEFAULTS.update(out_root=args.out, experiment=args.experiment, name=script.stem)
    install()
    sys.argv = [str(script), *args.args]
    sys.path.insert(0, str(script.resolve().parent))
    code = 0
    try:
        runpy.run_path(str(script), run_name="__main__")
    except (mnnet.MnWifiError, ScenarioError) as exc:
        print(f"error: {script.name}: {exc}", file=sys.stderr)
        code = 2
    except (BringUpError, MediumError, WiredError) as exc:
        print(f"error: {script.name}: {exc}", file=sys.stderr)
        code = 1
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    finally:
        for net in mnnet.current_networks():
            net.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
