#!/usr/bin/env bash
# `cargo "$@"` for the medium (make setup, make medium, make test, the benchmarks).
#
# Debian 12's cargo (1.65) predates the sparse crates.io index (stable in cargo 1.68): by default
# it clones the git index from github.com, which is slow (hundreds of MB) and fails where only
# crates.io is reachable. For cargo 1.60 to 1.67 this turns on 1.65's `sparse-registry`, the
# feature that 1.68 made stable unchanged (RUSTC_BOOTSTRAP=1 lets a stable cargo accept it).
# Newer cargo is left as it is. docs/setup.md.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found on PATH: run 'make setup' (it installs Debian's cargo), or install Rust >= 1.63 (https://rustup.rs)" >&2
  exit 127
fi
version=$(cargo --version | awk '{print $2}')  # "1.65.0"
IFS=. read -r major minor _ <<<"$version"
if [ "$major" = 1 ] && [ "$minor" -ge 60 ] && [ "$minor" -lt 68 ]; then
  export CARGO_UNSTABLE_SPARSE_REGISTRY=true RUSTC_BOOTSTRAP=1
fi
exec cargo "$@"
