#!/usr/bin/env bash
# Router CPU per forwarded data packet -> results/bench/router_cpu_per_packet.json
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 bench/router/cpu_per_packet.py "$@"
