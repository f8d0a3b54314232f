#!/usr/bin/env bash
# `make test-fresh`: the README's quickstart on a clean Debian 12 (docs/setup.md).
#
# Builds a minimal Debian 12 root file system with debootstrap, puts a clean clone of this
# checkout's HEAD (committed work only) in /root/manet-testbed there, and runs the commands of
# README.md's quickstart block in it as root, in order: the setup ones with the host's network,
# then, from the first `make run` on, in a network namespace of their own (loopback only).
#
# Isolation: everything, debootstrap included, runs in its own mount and PID namespaces
# (unshare). /proc, /sys (with /sys/fs/bpf and /sys/fs/cgroup), /dev and /run are mounted there
# so that network namespaces, TUN and BPF work. When this script ends or is killed, the PID
# namespace's processes die and its mounts and network namespaces go with it; the root file
# system (under $MANET_FRESH_WORK) is deleted, and a leftover of a killed run by the next run.
#
# Cached between runs (in $MANET_FRESH_CACHE): debootstrap's tarball of the base system's .debs
# only, refreshed after $MANET_FRESH_MAX_AGE_DAYS days. What the quickstart installs is fetched
# anew each time.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
SUITE=bookworm
VARIANT=minbase
CACHE=${MANET_FRESH_CACHE:-/var/cache/manet-fresh}
WORK=${MANET_FRESH_WORK:-/var/tmp/manet-fresh}
MAX_AGE_DAYS=${MANET_FRESH_MAX_AGE_DAYS:-30}
TIMEOUT_S=${MANET_FRESH_TIMEOUT_S:-3600}
CLONE=/root/manet-testbed   # inside the root file system
# The environment the quickstart runs in: a root login's, plus the host's network settings if
# set (proxies, package index, pip's CA bundle: see site_cas).
PASS_ENV=(http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL PIP_CERT)

say() { echo "test-fresh: $*"; }
die() { echo "test-fresh: $*" >&2; exit 1; }

# The commands of README.md's quickstart block (the first ```sh block under "## Quickstart"),
# comments and blank lines removed.
quickstart() {
  awk '/^## Quickstart/ {q = 1; next}
       q && /^```sh/ {b = 1; next}
       b && /^```/ {exit}
       b {sub(/[ \t]*#.*/, ""); if (length($0)) print}' "$REPO/README.md"
}

# ---------------------------------------------------------------- inside the namespaces
# in_namespaces ROOT MIRROR TARBALL LOGDIR: in new PID and mount namespaces.
in_namespaces() {
  local root=$1 mirror=$2 tarball=$3 logs=$4
  ROOT_FS=$root LOGS=$logs
  say "debootstrap $SUITE ($VARIANT) from $tarball into $root"
  local t0=$SECONDS
  debootstrap --variant="$VARIANT" --unpack-tarball="$tarball" "$SUITE" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
    || { tail -n 30 "$root.debootstrap.log" >&2; die "debootstrap failed (log above: $root.debootstrap.log)"; }
  say "debootstrap: $((SECONDS - t0)) s"
  sources >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  site_cas "$root/usr/local/share/ca-certificates"
  git clone -q "$REPO" "$root$CLONE"
  say "clean clone of $(git -C "$root$CLONE" rev-parse --short HEAD) ($(git -C "$REPO" rev-parse --abbrev-ref HEAD)) in $CLONE"

  # The root a mount point, as / is on a real system (ip netns exec makes / a slave mount).
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount_sys "$root"
  mount --rbind /dev "$root/dev"
  mount --make-rslave "$root/dev"
  mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"

  local env=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive
             PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  local v
  for v in "${PASS_ENV[@]}"; do [ -n "${!v:-}" ] && env+=("$v=${!v}"); done
  local cmd isolated=0 timings=() n=0 log
  while IFS= read -r cmd; do
    n=$((n + 1))
    log=$logs/$n.log
    if [ "$isolated" = 0 ] && [[ "$cmd" == "make run"* ]]; then
      isolated=1
      say "from here on in a network namespace of its own (loopback only)"
    fi
    say "# $cmd (output: $log)"
    t0=$SECONDS
    if [ "$isolated" = 0 ]; then
      chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -ec "cd $CLONE && $cmd" </dev/null >"$log" 2>&1 || failed "$cmd" "$log" $t0
    else
      unshare --net --mount -- bash "$REPO/scripts/test-fresh.sh" --isolated "$root" "$cmd" "${env[@]}" </dev/null >"$log" 2>&1 \
        || failed "$cmd" "$log" $t0
    fi
    tail -n 12 "$log" | sed 's/^/  | /'
    timings+=("$cmd: $((SECONDS - t0)) s")
  done < <(quickstart)
  keep_results
  if [ "${MANET_FRESH_PROVISION:-1}" = 1 ]; then
    # The Ansible role on the same fresh system, as a host of its own (local connection): a
    # second checkout in /opt/manet-testbed, its venv, the medium built with Debian's cargo;
    # run twice, the second must change nothing.
    cat >"$root/root/fresh-hosts.yml" <<'YAML'
testbed_hosts:
  hosts:
    localhost: {ansible_connection: local, ansible_python_interpreter: /usr/bin/python3, ansible_become: false}
YAML
    local play="cd $CLONE/playbooks && ../.venv/bin/ansible-playbook -i /root/fresh-hosts.yml provision.yml"
    local check="test \"\$(cat /opt/manet-testbed/.venv/pyvenv.cfg | grep ^home)\" = 'home = /usr/bin' && /opt/manet-testbed/medium/target/release/manet-medium --help 2>&1 | grep -q usage"
    cmd="$play && $check && $play | tee /dev/stderr | grep -Eq 'localhost +: ok=[0-9]+ +changed=0 '"
    log=$logs/provision.log
    say "# provision.yml on the fresh system, twice (output: $log)"
    t0=$SECONDS
    chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -ec "$cmd" </dev/null >"$log" 2>&1 || failed "provision.yml" "$log" $t0
    grep -E "^localhost +:" "$log" | sed 's/^/  | /'
    timings+=("provision.yml twice: $((SECONDS - t0)) s")
  fi
  say "times: $(IFS=';'; echo "${timings[*]}" | sed 's/;/; /g')"
}

# The runs' results (results/ of the clone) go to the log folder.
keep_results() {
  if [ -d "$ROOT_FS$CLONE/results" ]; then
    cp -a "$ROOT_FS$CLONE/results" "$LOGS/results" 2>/dev/null || true
  fi
}

failed() {
  tail -n 80 "$2" | sed 's/^/  | /' >&2
  keep_results
  die "'$1' failed in the fresh root after $((SECONDS - $3)) s (last lines above; all of it: $2)"
}

# isolated ROOT CMD ENV...: one command in the root, in a fresh network namespace (unshare --net
# --mount): loopback up, /sys (and bpf, cgroup2 under it) mounted again for this namespace.
isolated() {
  local root=$1 cmd=$2
  shift 2
  ip link set lo up
  umount -R "$root/sys"
  mount_sys "$root"
  chroot "$root" /usr/bin/env -i "$@" /bin/bash -ec "cd $CLONE && $cmd"
}

# site_cas DIR: the host's site CA certificates (those of its bundle that no file of Debian's
# ca-certificates holds: a TLS-inspecting proxy's, say) as DIR/manet-fresh-site-N.crt, where
# the fresh root's ca-certificates, once the quickstart installs it, adds them to its bundle, as
# on any Debian host behind that proxy. Debian's own certificates come from the fresh root's
# package.
site_cas() {
  local bundle=/etc/ssl/certs/ca-certificates.crt
  [ -r "$bundle" ] && [ -d /usr/share/ca-certificates ] || return 0
  mkdir -p "$1"
  # shellcheck disable=SC2046
  awk -v bundle="$bundle" -v out="$1/manet-fresh-site-" '
    /-----BEGIN CERTIFICATE-----/ {inb = 1; cur = ""}
    inb {cur = cur $0 "\n"}
    /-----END CERTIFICATE-----/ {
      inb = 0
      if (FILENAME != bundle) known[cur] = 1
      else if (!(cur in known)) {n++; printf "%s", cur > (out n ".crt"); close(out n ".crt")}
    }
    END {if (n) print "test-fresh: the host'"'"'s site CA certificates (" n ") go to the fresh root"}
  ' $(find /usr/share/ca-certificates -name '*.crt') "$bundle"
}

mount_sys() {
  mount -t sysfs sysfs "$1/sys"
  mount -t bpf bpf "$1/sys/fs/bpf"
  mount -t cgroup2 cgroup2 "$1/sys/fs/cgroup"
}

# The apt sources of the fresh root: the host's Debian suites, as a stock install has them.
sources() {
  echo "deb $MIRROR $SUITE main"
  [ -n "$MIRROR_UPDATES" ] && echo "deb $MIRROR_UPDATES $SUITE-updates main"
  [ -n "$MIRROR_SECURITY" ] && echo "deb $MIRROR_SECURITY $SUITE-security main"
  true
}

# The URI the host's apt uses for SUITE/main ("" if none), from apt-cache policy.
host_mirror() {
  apt-cache policy 2>/dev/null | awk -v s="$1/main" -v a="$(dpkg --print-architecture)" \
    '$3 == s && $4 == a && $5 == "Packages" {print $2; exit}'
}

# ---------------------------------------------------------------- entry points
if [ "${1:-}" = "--print-commands" ]; then
  quickstart
  exit 0
fi
if [ "${1:-}" = "--isolated" ]; then
  shift
  isolated "$@"
  exit
fi
if [ "${1:-}" = "--in-namespaces" ]; then
  shift
  MIRROR=$2 MIRROR_UPDATES=$4 MIRROR_SECURITY=$5
  in_namespaces "$1" "$2" "$3" "$6"
  exit
fi

# ---------------------------------------------------------------- on the host
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, namespaces): sudo make test-fresh"
mapfile -t cmds < <(quickstart)
printf '%s\n' "${cmds[@]}" | grep -qx "make setup" && printf '%s\n' "${cmds[@]}" | grep -qx "make run" \
  || die "README.md's quickstart block (\`\`\`sh under '## Quickstart') should hold 'make setup' and 'make run'; it holds: ${cmds[*]:-nothing}"
for tool in unshare setpriv chroot git findmnt; do
  have=$(command -v "$tool" || true)
  [ -n "$have" ] || die "$tool not found: apt-get install util-linux coreutils git"
done
if ! command -v debootstrap >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "debootstrap not found and apt-get unavailable: install debootstrap (Debian's package)"
  say "installing Debian's debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null \
    || die "apt-get install debootstrap failed"
fi
[ -r /usr/share/keyrings/debian-archive-keyring.gpg ] || die "Debian's archive keyring is missing: apt-get install debian-archive-keyring"

MIRROR=${MANET_FRESH_MIRROR:-$(host_mirror "$SUITE")}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
MIRROR_UPDATES=$(host_mirror "$SUITE-updates")
MIRROR_SECURITY=$(host_mirror "$SUITE-security")
say "mirror: $MIRROR (updates: ${MIRROR_UPDATES:-none}, security: ${MIRROR_SECURITY:-none})"

# Leftovers of killed runs: a root file system whose owner is gone. Nothing of ours is mounted
# on the host (mounts live in the run's mount namespace); rm stays on one file system anyway.
mkdir -p "$WORK" "$CACHE"
for d in "$WORK"/run.*; do
  [ -d "$d" ] || continue
  pid=${d##*.}
  kill -0 "$pid" 2>/dev/null && continue
  if findmnt -rn -o TARGET | grep -q "^$d\(/\|$\)"; then
    say "not removing $d: something is mounted under it (findmnt | grep $d)"
    continue
  fi
  say "removing the leftover $d of a killed run"
  rm -rf --one-file-system "$d"
done

run_dir=$WORK/run.$$
root=$run_dir/root
cleanup() {
  if [ -n "${MANET_FRESH_KEEP:-}" ]; then
    say "MANET_FRESH_KEEP: root file system left in $root (nothing is mounted there)"
    return
  fi
  if findmnt -rn -o TARGET | grep -q "^$run_dir\(/\|$\)"; then
    echo "test-fresh: $run_dir still has mounts on the host: left in place" >&2
    return
  fi
  rm -rf --one-file-system "$run_dir"
}
trap cleanup EXIT
mkdir -p "$root"
# Each command's output, kept after the root file system is gone (results/ is not tracked).
logs=$REPO/results/test-fresh/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$logs"

arch=$(dpkg --print-architecture)
tarball=$CACHE/debootstrap-$SUITE-$VARIANT-$arch.tgz
if [ -n "$(find "$tarball" -mtime -"$MAX_AGE_DAYS" 2>/dev/null)" ]; then
  say "cached base system: $tarball"
else
  say "downloading the base system's packages into $tarball (cached for $MAX_AGE_DAYS days)"
  t0=$SECONDS
  # In a mount namespace too: debootstrap mounts nothing here, but a kill leaves nothing anyway.
  setpriv --pdeathsig KILL unshare --mount --fork --kill-child -- \
    debootstrap --variant="$VARIANT" --make-tarball="$tarball.tmp" "$SUITE" "$run_dir/dl" "$MIRROR" >"$run_dir/dl.log" 2>&1 \
    || { tail -n 30 "$run_dir/dl.log" >&2; die "debootstrap --make-tarball failed from $MIRROR"; }
  mv "$tarball.tmp" "$tarball"
  say "downloaded in $((SECONDS - t0)) s"
fi

t0=$SECONDS
# pdeathsig: unshare dies with this script; --kill-child: its PID namespace's init (and so every
# process of the namespace) dies with unshare; the mount namespace goes with its last process.
setpriv --pdeathsig KILL unshare --mount --pid --fork --kill-child --mount-proc=/proc -- \
  timeout -s KILL "$TIMEOUT_S" bash "$REPO/scripts/test-fresh.sh" --in-namespaces "$root" "$MIRROR" "$tarball" \
  "$MIRROR_UPDATES" "$MIRROR_SECURITY" "$logs" \
  || die "failed after $((SECONDS - t0)) s (the messages above say where)"
say "ok in $((SECONDS - t0)) s on a fresh Debian $SUITE: $(printf "'%s' " "${cmds[@]}")"
