#!/usr/bin/env bash
# Medium benchmarks (issue 6): Bianchi saturation, receptions evaluated per second, real-time lag.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
"$PY" bench/medium/saturation.py
"$PY" bench/medium/receptions.py
"$PY" bench/medium/lag.py --rt-priority 10
