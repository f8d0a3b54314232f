#!/usr/bin/env bash
# Idempotent installer for the MANET testbed: Debian packages, Python packages, the Rust medium.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PKGS=(iperf3 tcpdump tshark iputils-ping bpftool clang gcc make llvm libbpf-dev libelf-dev zlib1g-dev iproute2 nftables iptables
          procps psmisc openssh-server sshpass util-linux ethtool openvswitch-switch)
# openvswitch-switch: the runs' switches (testbed/wired.py). Each run starts its own ovsdb-server and
# ovs-vswitchd with its own database and sockets under /run/manet/<runid>/ovs, in its own network
# namespace; a system OVS that the package's service may start is never contacted or changed.
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
python3 -m pip install -q --disable-pip-version-check -r requirements.txt
if [ -f medium/Cargo.toml ]; then
  (cd medium && cargo build --release -q)
fi
make -s -C nodes/router/native  # the router's native fast path (docs/router.md)
if [ -f nodes/tcpctl/bpf/Makefile ]; then
  make -s -C nodes/tcpctl/bpf
fi
echo "setup: ok"
