#!/usr/bin/env bash
# make bench: sweep throughput at --parallel auto against one run at a time, with the equivalence
# of their results (results/bench/sweep_capacity.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
exec "$PY" bench/sweep/sweep_capacity.py "$@"
