#!/usr/bin/env bash
# Multi-host sweeps (issue 17): the scheduler's overhead per run, and the sweep rate with 1, 2 and
# 3 hosts of the host bed over real SSH (bench/multihost/scaling.py, docs/benchmarks.md). Root.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then
  echo "bench/multihost: needs root (network namespaces, sshd); skipped" >&2
  exit 0
fi
python3 bench/multihost/scaling.py
