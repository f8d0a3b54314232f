#!/usr/bin/env bash
# `make bench`: run every benchmark (each writes results/bench/<name>.json), then collect the
# numbers into docs/benchmarks.md. A benchmark that fails is reported and the others still run.
set -uo pipefail
cd "$(dirname "$0")/.."
# The project's Python (make setup); each bench/*/run.sh uses $PY too.
export PY="${PY:-.venv/bin/python}"
mkdir -p results/bench
status=0
for b in bench/*/run.sh; do
  [ -x "$b" ] || continue
  echo "== $b"
  if ! "$b"; then echo "benchmark failed: $b"; status=1; fi
done
"$PY" bench/collect.py || status=1
exit $status
