#!/usr/bin/env bash
# make bench: sweep throughput at --parallel auto against one run at a time, with the equivalence
# of their results (results/bench/sweep_capacity.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 bench/sweep/sweep_capacity.py "$@"
