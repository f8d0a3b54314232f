#!/usr/bin/env bash
# make bench: bring-up/teardown of 10, 50, 100 stations and idle CPU of 100 (results/bench/*.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
exec "$PY" bench/foundation/bringup.py "$@"
