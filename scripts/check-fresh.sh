#!/usr/bin/env bash
# `pnpm check:fresh`: does the README's set-up work on a machine that has nothing yet?
#
# Builds a minimal Debian 12 root with debootstrap (cached), copies this checkout in (tracked and
# untracked-but-not-ignored files, as `git status` sees them), and inside it runs the README's
# commands: `bash scripts/setup.sh`, then `pnpm stack --once` (the stack with its own nats-server
# and Postgres, and the demo), then its test command, `pnpm verify`, from that checkout: as root
# it is /root/toolmesh, in a folder only root may enter (0700), where the tests must place their
# sandboxes where the sandbox user can reach them. It reports the time of each step. A machine that already has the
# tools proves nothing about a new user's: this one has only what debootstrap gives.
#
# The root is entered with its own mount and pid namespaces and pivot_root (not chroot: the
# kernel refuses user namespaces to a chrooted process, and bubblewrap needs them when the
# sandbox runs as an ordinary user). The stack runs in a network namespace of its own, so its
# ports cannot collide with this machine's NATS, Postgres or api.
#
#   --as root|sudo|both   who runs the README's commands: root, or a user `dev` with sudo
#                         rights (default: both)
#   --if-changed          skip when the set-up files are those of the last passing check
#   --rebuild             build the cached Debian root again
#   --keep                leave the root in place afterwards (its path is printed)
#   --no-tests            skip `pnpm verify` (set-up and stack only)
# Environment: TOOLMESH_FRESH_CACHE (default /var/cache/toolmesh/fresh), DEBIAN_MIRROR.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

as=both
if_changed=0
rebuild=0
keep=0
tests=1
while [ $# -gt 0 ]; do
  case "$1" in
    --as) as=${2:?--as needs root, sudo or both}; shift 2 ;;
    --as=*) as=${1#--as=}; shift ;;
    --if-changed) if_changed=1; shift ;;
    --rebuild) rebuild=1; shift ;;
    --keep) keep=1; shift ;;
    --no-tests) tests=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check:fresh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$as" in root | sudo | both) ;; *) echo "check:fresh: --as takes root, sudo or both" >&2; exit 2 ;; esac

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=TOOLMESH_FRESH_CACHE,DEBIAN_MIRROR,NODE_EXTRA_CA_CERTS,SSL_CERT_FILE \
    bash "$0" --as "$as" $([ $if_changed = 1 ] && echo --if-changed) \
    $([ $rebuild = 1 ] && echo --rebuild) $([ $keep = 1 ] && echo --keep) \
    $([ $tests = 0 ] && echo --no-tests)
fi

CACHE=${TOOLMESH_FRESH_CACHE:-/var/cache/toolmesh/fresh}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=$CACHE/bookworm-minbase.tar
mkdir -p "$CACHE"

say() { printf '[check:fresh] %s\n' "$*"; }
die() {
  printf '[check:fresh] FAILED: %s\n' "$*" >&2
  exit 1
}

# What decides whether the set-up can change: when these are as they were at the last pass,
# --if-changed has nothing to prove.
stamp=$(cd "$top" && cat scripts/setup.sh scripts/check-fresh.sh package.json pnpm-workspace.yaml \
  pnpm-lock.yaml .ci/run 2>/dev/null | sha256sum | cut -c1-16)
[ $tests = 1 ] || stamp=$stamp-no-tests
if [ $if_changed = 1 ] && [ -e "$CACHE/passed-$as-$stamp" ]; then
  say "set-up files unchanged since the last pass ($(cat "$CACHE/passed-$as-$stamp")); skipped"
  exit 0
fi

missing=()
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} with apt"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "could not install ${missing[*]}"
fi
for tool in debootstrap unshare pivot_root ip; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing"
done

if [ $rebuild = 1 ] || [ ! -s "$BASE" ]; then
  say "building a minimal Debian 12 root with debootstrap from $MIRROR"
  t0=$SECONDS
  build=$(mktemp -d "$CACHE/build.XXXXXX")
  debootstrap --variant=minbase bookworm "$build" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $CACHE/debootstrap.log"
  tar -C "$build" -cf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE"
  rm -rf "$build"
  say "Debian root built and cached in $BASE ($((SECONDS - t0)) s)"
fi

# A CA bundle the host's TLS needs (a proxy that re-signs traffic, say) goes into the root as
# this machine's fact, not the project's: a real fresh machine needs none of it.
host_ca=${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-}}
ca_vars=()
if [ -n "$host_ca" ] && [ -r "$host_ca" ]; then
  ca_vars=(NODE_EXTRA_CA_CERTS=/etc/host-ca.pem CURL_CA_BUNDLE=/etc/host-ca.pem
    SSL_CERT_FILE=/etc/host-ca.pem npm_config_cafile=/etc/host-ca.pem)
fi

# Runs a command inside <root> as <user>, with a login shell's environment.
#   enter <root> <user> <network: host|none> <command>
enter() {
  local root=$1 user=$2 net=$3 cmd=$4
  local home=/root
  [ "$user" = root ] || home=/home/$user
  local ns=(--mount --pid --fork)
  [ "$net" = none ] && ns+=(--net)
  unshare "${ns[@]}" bash -euo pipefail -c '
    root=$1 user=$2 home=$3 net=$4 cmd=$5; shift 5
    [ "$net" = none ] && ip link set lo up
    mount --make-rprivate /
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    mount -t tmpfs -o mode=0755 tmpfs "$root/run"
    cd "$root"
    mkdir -p .host
    pivot_root . .host
    umount -l /.host
    rmdir /.host
    cd /
    exec runuser -u "$user" -- env -i HOME="$home" USER="$user" LOGNAME="$user" TERM=dumb \
      LANG=C.UTF-8 "$@" bash -lc "cd ~/toolmesh && $cmd"
  ' enter "$root" "$user" "$home" "$net" "$cmd" "${ca_vars[@]}"
}

# Runs the README's set-up and stack as <who> in a new root; prints and records the times.
run_as() {
  local who=$1 user=root home=/root
  if [ "$who" = sudo ]; then user=dev home=/home/dev; fi
  local root
  root=$(mktemp -d "$CACHE/root-$who.XXXXXX")
  tar -C "$root" -xf "$BASE"
  chmod 0755 "$root" # it becomes /; mktemp made it (and the archived build folder) 0700
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  [ ${#ca_vars[@]} -eq 0 ] || cp "$host_ca" "$root/etc/host-ca.pem"
  # Packages must not start their servers in here: the stack starts its own, and a system
  # Postgres or NATS would try the ports of this machine's (the root shares its network
  # during set-up). A real machine starts them; nothing the README does depends on it.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  if [ "$who" = sudo ]; then
    say "[$who] preparing a user dev with sudo rights"
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c 'apt-get update -qq && apt-get install -y -qq sudo >/dev/null && useradd -m -s /bin/bash dev' \
      >"$root/prepare.log" 2>&1 || die "preparing the sudo user failed; see $root/prepare.log"
    {
      echo 'dev ALL=(ALL:ALL) NOPASSWD: ALL'
      [ ${#ca_vars[@]} -eq 0 ] ||
        echo 'Defaults env_keep += "NODE_EXTRA_CA_CERTS CURL_CA_BUNDLE SSL_CERT_FILE npm_config_cafile"'
    } >"$root/etc/sudoers.d/dev"
    chmod 0440 "$root/etc/sudoers.d/dev"
  fi
  mkdir -p "$root$home/toolmesh"
  (cd "$top" && git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$root$home/toolmesh" -xf -
  # A user's checkout is a clone: a repository whose commit is the tree copied in (the tests
  # clone it as a new user would).
  git -C "$root$home/toolmesh" init -q
  git -C "$root$home/toolmesh" add -A
  git -C "$root$home/toolmesh" -c user.name=check-fresh -c user.email=check-fresh@localhost \
    commit -qm "the checkout under test"
  [ "$user" = root ] || chroot "$root" chown -R "$user:$user" "$home/toolmesh"

  local log=$CACHE/last-$who.log t0 t_setup t_stack
  : >"$log"
  say "[$who] bash scripts/setup.sh (log: $log)"
  t0=$SECONDS
  enter "$root" "$user" host 'bash scripts/setup.sh' >>"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; die "[$who] bash scripts/setup.sh failed after $((SECONDS - t0)) s; root kept at $root"; }
  t_setup=$((SECONDS - t0))
  say "[$who] setup: ${t_setup} s"
  say "[$who] pnpm stack --once"
  t0=$SECONDS
  enter "$root" "$user" none 'pnpm stack --once' >>"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; die "[$who] pnpm stack --once failed after $((SECONDS - t0)) s"; }
  t_stack=$((SECONDS - t0))
  grep -q 'demo succeeded' "$log" || die "[$who] the stack exited 0 without 'demo succeeded'"
  say "[$who] stack --once: ${t_stack} s (demo succeeded)"
  local t_tests=skipped
  if [ $tests = 1 ]; then
    # The README's test command from the same checkout (/root/toolmesh is 0700 as root). The
    # tests start their own NATS and Postgres on free ports, as on any machine, so they share the
    # host's network (the docs test runs set-up in a clone of the checkout, as a user would).
    say "[$who] pnpm verify in $home/toolmesh"
    t0=$SECONDS
    enter "$root" "$user" host 'pnpm verify' >>"$log" 2>&1 ||
      { tail -n 60 "$log" >&2; die "[$who] pnpm verify failed after $((SECONDS - t0)) s; root kept at $root"; }
    t_tests="$((SECONDS - t0)) s"
    say "[$who] pnpm verify: ${t_tests}"
  fi
  printf '%s setup %s s, stack --once %s s, verify %s\n' "$who" "$t_setup" "$t_stack" "$t_tests" >>"$CACHE/times.$$"
  if [ $keep = 1 ]; then say "[$who] root kept at $root"; else rm -rf "$root"; fi
}

# Roots of earlier runs (a failed run keeps its root for a look) go before a new one is made.
[ $keep = 1 ] || rm -rf "$CACHE"/root-*
rm -f "$CACHE"/times.$$
case "$as" in
  root) run_as root ;;
  sudo) run_as sudo ;;
  both) run_as root; run_as sudo ;;
esac
say "times on a fresh Debian 12 root:"
sed 's/^/  /' "$CACHE/times.$$"
printf '%s: %s\n' "$(date -u +%FT%TZ)" "$(paste -sd';' "$CACHE/times.$$")" >"$CACHE/passed-$as-$stamp"
rm -f "$CACHE/times.$$"
