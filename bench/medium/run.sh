#!/usr/bin/env bash
# Medium benchmarks (issue 6): Bianchi saturation, receptions evaluated per second, real-time lag.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 bench/medium/saturation.py
python3 bench/medium/receptions.py
python3 bench/medium/lag.py --rt-priority 10
