#!/usr/bin/env bash
# Router benchmarks -> results/bench/router_cpu_per_packet.json (+ router_startup_cpu.json and
# router_idle_cpu.json as root).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"  # the project's Python (make setup)
"$PY" bench/router/cpu_per_packet.py
if [ "$(id -u)" = 0 ]; then
  "$PY" bench/router/startup_idle.py -n 100 --idle-s 10
fi
