#!/usr/bin/env bash
# End-to-end benchmarks on the real testbed (issue 6): single-hop iperf3 TCP throughput against
# the 802.11 DCF analytic figure (bench/e2e/single_hop_tcp.py, docs/benchmarks-e2e.md). Root.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/e2e: needs root (network namespaces); skipped" >&2
  exit 0
fi
"$PY" bench/e2e/single_hop_tcp.py --runs 3 --duration 30
