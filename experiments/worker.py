"""One sweep run in its own process: ``python -m experiments.worker REQUEST.json RESULT.json``.

The sweep starts one of these per run (``experiments.sweep.subprocess_run``) so that every run
has a fresh interpreter, its own signal handling and its own crash. It calls
``testbed.run.run_scenario`` and writes ``{"run_dir": ...}`` or ``{"error": ...}`` to RESULT.json
(never parsed out of a log). SIGTERM and SIGHUP become ``SystemExit`` so that the testbed's
teardown runs, as in ``python -m testbed.run``.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType

from experiments.rundirs import write_json_atomic


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m experiments.worker REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    result = Path(args[1])
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGHUP, _raise_exit)
    from testbed.run import run_scenario
    from topologies.errors import ScenarioError

    try:
        run_dir = run_scenario(
            request["scenario"],
            request["seed"],
            request["experiment"],
            request["out_root"],
            request["overrides"],
        )
    except ScenarioError as exc:
        write_json_atomic(result, {"error": f"scenario: {exc}"})
        return 2
    except KeyboardInterrupt:
        write_json_atomic(result, {"error": "interrupted"})
        return 130
    except Exception as exc:  # noqa: BLE001 - reported to the sweep, which records it in the index
        traceback.print_exc()
        write_json_atomic(result, {"error": f"{type(exc).__name__}: {exc}"})
        return 1
    write_json_atomic(result, {"run_dir": str(Path(run_dir).resolve())})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
