#!/usr/bin/env bash
# `make setup`: install what the MANET testbed needs, idempotently (docs/setup.md).
#   1. Debian packages: APT_PKGS, the venv's and TLS's packages, and Debian's cargo (Rust 1.63)
#      when no cargo is on the PATH.
#   2. The project's virtual environment .venv, made by Debian's own /usr/bin/python3 -m venv,
#      with requirements.txt installed in it. No other Python is modified (Debian's python3 is
#      externally managed, PEP 668); every make target, script and test runs .venv/bin/python.
#   3. The Rust medium (Rust >= 1.63), the router's native fast path, the tcpctl BPF objects.
# A step that fails says what was missing and how to get it. A second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PKGS=(iperf3 tcpdump tshark iputils-ping bpftool clang gcc make llvm libbpf-dev libelf-dev zlib1g-dev iproute2 nftables iptables
          procps psmisc openssh-server sshpass util-linux ethtool openvswitch-switch
          chromium)  # chromium: headless browser test of testbed.timeline's page
# openvswitch-switch: the runs' switches (testbed/wired.py). Each run starts its own ovsdb-server and
# ovs-vswitchd with its own database and sockets under /run/manet/<runid>/ovs, in its own network
# namespace; a system OVS that the package's service may start is never contacted or changed.
# What setup itself needs on top: Debian's Python with venv, CA certificates for pip and cargo,
# python3-apt and python3-packaging for the playbooks' apt and pip modules on this host
# (docs/ansible.md; the SSH host bed's hosts share this machine's file system, so provision.yml
# finds them installed there and needs no network).
SETUP_PKGS=(python3 python3-venv ca-certificates python3-apt python3-packaging)
SYSTEM_PYTHON=/usr/bin/python3   # Debian's, whatever else is first on the PATH (pyenv, conda)
VENV=.venv
PY_MIN=3.11
RUST_MIN=1.63

say() { echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
# version_ge A B: is dotted version A >= B?
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# ---- 1. Debian packages
# apt_install PKG...: install those of the packages that are not installed.
apt_install() {
  local missing=() p
  if have dpkg-query; then
    local installed
    # (dpkg-query fails when one of them is unknown; what it printed still counts)
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null | awk '$2 == "installed" {print $1}' || true)
    for p in "$@"; do grep -qxF "$p" <<<"$installed" || missing+=("$p"); done
  else
    missing=("$@")
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! have apt-get || ! have dpkg-query; then
    die "apt-get unavailable: install these Debian packages (or your system's equivalents) by hand, then run 'make setup' again: ${missing[*]}"
  fi
  if [ "$(id -u)" -ne 0 ]; then
    die "Debian packages missing: ${missing[*]}. Run 'make setup' as root, or 'sudo apt-get install ${missing[*]}' first."
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq || die "apt-get update failed: check /etc/apt/sources.list* and the network"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for some of: ${missing[*]} (see apt's message above)"
}

rust_pkgs=()
if ! have cargo; then
  if ! have apt-get; then
    die "cargo not found and apt-get unavailable: install Rust >= $RUST_MIN (https://rustup.rs), put cargo on the PATH and run 'make setup' again"
  fi
  hint=""
  [ -x "$HOME/.cargo/bin/cargo" ] && hint=" ($HOME/.cargo/bin is not on the PATH)"
  say "cargo not found on the PATH$hint: using Debian's cargo (Rust 1.63)"
  rust_pkgs=(cargo)
fi
apt_install "${APT_PKGS[@]}" "${SETUP_PKGS[@]}" "${rust_pkgs[@]}"

# ---- 2. The project's virtual environment
[ -x "$SYSTEM_PYTHON" ] || die "$SYSTEM_PYTHON not found: apt-get install python3 python3-venv"
sys_ver=$("$SYSTEM_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
version_ge "$sys_ver" "$PY_MIN" || die "$SYSTEM_PYTHON is Python $sys_ver; the testbed needs Python >= $PY_MIN (Debian 12 or newer)"
"$SYSTEM_PYTHON" -c 'import ensurepip, venv' 2>/dev/null \
  || die "$SYSTEM_PYTHON cannot make a virtual environment (no ensurepip): apt-get install python3-venv"

# A usable .venv: made from Debian's python3 (pyvenv.cfg's home) and still starting.
venv_ok() {
  [ -x "$VENV/bin/python" ] && grep -qxF "home = $(dirname "$SYSTEM_PYTHON")" "$VENV/pyvenv.cfg" 2>/dev/null \
    && "$VENV/bin/python" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null
}
if ! venv_ok; then
  if [ -e "$VENV" ]; then
    say "$VENV was not made by $SYSTEM_PYTHON or no longer starts: making it again"
  fi
  say "making $VENV with $SYSTEM_PYTHON -m venv (Python $sys_ver)"
  "$SYSTEM_PYTHON" -m venv --clear "$VENV" || die "$SYSTEM_PYTHON -m venv $VENV failed (see above): apt-get install python3-venv"
fi
# requirements.txt is installed when it (or the venv's Python) changed since the last install.
stamp="$VENV/.requirements.sha256"
want=$( { sha256sum requirements.txt; "$VENV/bin/python" -VV; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing requirements.txt into $VENV (pip, from PyPI)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt \
    || die "pip install -r requirements.txt into $VENV failed (see above): PyPI (https://pypi.org) must be reachable, or set PIP_INDEX_URL to a mirror"
  echo "$want" >"$stamp"
fi

# ---- 3. The medium (Rust), the router's fast path (C), the tcpctl BPF objects
rustc_ver=$(rustc --version 2>/dev/null | awk '{print $2}') || true
if [ -n "$rustc_ver" ] && ! version_ge "${rustc_ver%%-*}" "$RUST_MIN"; then
  die "rustc $rustc_ver is older than $RUST_MIN: install Rust >= $RUST_MIN (Debian 12's cargo, or https://rustup.rs)"
fi
(cd medium && bash ../scripts/cargo.sh build --release -q) \
  || die "building the medium failed (see above): cd medium && cargo build --release (Rust >= $RUST_MIN, crates.io reachable)"
make -s -C nodes/router/native \
  || die "building the router's fast path failed (see above): needs gcc and make (docs/router.md)"
make -s -C nodes/tcpctl/bpf \
  || die "building the tcpctl BPF objects failed (see above): needs clang, llvm, bpftool, libbpf-dev and a kernel with BTF (/sys/kernel/btf/vmlinux)"
say "ok (Python: $VENV/bin/python, $("$VENV/bin/python" -V); $(cargo --version))"
