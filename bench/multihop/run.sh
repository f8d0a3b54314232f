#!/usr/bin/env bash
# Multi-hop benchmarks on the real testbed (issue 11): AODV and DSR throughput over static-route
# throughput on the 4-hop chain without a window cap, 3 seeds x 60 s (bench/multihop/chain_vs_static.py),
# then AODV under the rfc routing profile (RFC 3561's rules where ns-2 differs; the first runs
# use the default, ns2: docs/aodv.md "Profiles") against the same static runs. Root; ~13 min.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/multihop: needs root (network namespaces); skipped" >&2
  exit 0
fi
"$PY" bench/multihop/chain_vs_static.py
"$PY" bench/multihop/chain_vs_static.py --protocols aodv --suffix _rfc \
  --set 'routing.profile="rfc"' --static-from results/bench/chain_aodv_vs_static.json
