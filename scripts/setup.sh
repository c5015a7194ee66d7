#!/usr/bin/env bash
# One-shot setup on Debian 12: system packages the stack and tests use, Node 24 LTS, npm, pnpm,
# and the workspace's dependencies from the lockfile. Safe to run again; it skips what is there.
# Run it as root, or as a user with sudo rights (system changes go through sudo; the workspace's
# node_modules stay the user's).
#
# Node comes from the npm registry's `node-linux-<arch>` package (the official binary), laid out
# the way Node's own tarball is: /usr/local/bin/node is a real file, not a link into a package
# folder. npm derives its global prefix from node's real path, so this keeps `npm install -g`
# (ours for pnpm, and the user's later ones) landing in /usr/local/bin, which every shell has on
# PATH. Installing the `node` package with `npm -g --force` instead moves npm's prefix into that
# package's folder, and whatever npm installs next is on nobody's PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_MAJOR=24
NPM_MAJOR=11
PNPM_MAJOR=12
REGISTRY=${npm_config_registry:-https://registry.npmjs.org}
REGISTRY=${REGISTRY%/}

log() { printf '[setup] %s\n' "$*"; }
die() {
  printf '[setup] error: %s\n' "$*" >&2
  exit 1
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  die "run this as root, or as a user with sudo rights (sudo is not installed)"
fi

# --- Debian packages ------------------------------------------------------------------------
# nats-server and PostgreSQL run the local stack and the tests when no NATS_URL/DATABASE_URL is
# given; python3/make/g++ let native dependencies build if a prebuilt one is missing; curl and
# ca-certificates fetch Node; xz-utils unpacks it.
need=()
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || need+=(nats-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v make >/dev/null 2>&1 || need+=(make)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v curl >/dev/null 2>&1 || need+=(curl)
# The docs' shell examples read the stack's key with jq (KEY=$(jq -r .apiKey .data/stack.json)).
command -v jq >/dev/null 2>&1 || need+=(jq)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
command -v git >/dev/null 2>&1 || need+=(git)
command -v runuser >/dev/null 2>&1 || need+=(util-linux)
# The local sandbox: sandbox-runtime drives bubblewrap, bridges its proxies with socat and scans
# for protected files with ripgrep; run_service's port forwarders enter a sandbox's network through
# a python3 helper; the example image skill draws with Debian's Pillow.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v socat >/dev/null 2>&1 || need+=(socat)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
dpkg -s python3-pil >/dev/null 2>&1 || need+=(python3-pil)
# Skill dependency environments: a venv and pip inside the build sandbox (system Python).
dpkg -s python3-venv >/dev/null 2>&1 || need+=(python3-venv)
dpkg -s python3-pip >/dev/null 2>&1 || need+=(python3-pip)
# `pnpm check:deploy` validates docker-compose.yml with Debian's docker-compose (no engine needed).
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
# The console's browser tests and `pnpm bench console` drive Debian's Chromium with
# playwright-core (no browser is downloaded).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} with apt"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
fi

# Servers Debian keeps off a user's PATH (/usr/sbin, /usr/lib/postgresql/<n>/bin): linked into
# /usr/local/bin so that `nats-server` and `initdb` answer from any shell.
link_tool() {
  local name=$1 target=$2
  [ -x "$target" ] || return 0
  if [ ! -e "/usr/local/bin/$name" ]; then as_root ln -sf "$target" "/usr/local/bin/$name"; fi
}
link_tool nats-server /usr/sbin/nats-server
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -n "$pg_bin" ]; then
  for t in initdb pg_ctl postgres; do link_tool "$t" "$pg_bin/$t"; done
fi

# --- Node, npm and pnpm from the npm registry -------------------------------------------------
case "$(dpkg --print-architecture)" in
  amd64) node_arch=x64 ;;
  arm64) node_arch=arm64 ;;
  *) die "no Node ${NODE_MAJOR} build for $(dpkg --print-architecture) in the npm registry" ;;
esac

# Prints "<version> <tarball url> <integrity>" of the newest <package> release of <major>.
resolve() {
  curl -fsSL -H 'accept: application/vnd.npm.install-v1+json' "$REGISTRY/$1" | python3 -c '
import json, sys
major = sys.argv[1]
doc = json.load(sys.stdin)
def key(v): return tuple(int(p) for p in v.split("."))
vs = [v for v in doc["versions"] if v.split(".")[0] == major and all(p.isdigit() for p in v.split("."))]
if not vs: sys.exit("no release of major " + major)
v = max(vs, key=key)
d = doc["versions"][v]["dist"]
print(v, d["tarball"], d["integrity"])' "$2"
}

# Downloads a tarball and checks it against the registry's sha512 integrity.
fetch() {
  local url=$1 integrity=$2 out=$3
  curl -fsSL "$url" -o "$out"
  python3 - "$out" "$integrity" <<'EOF' || die "checksum mismatch for $url"
import base64, hashlib, sys
path, integrity = sys.argv[1], sys.argv[2]
algo, _, digest = integrity.partition("-")
h = hashlib.new(algo)
with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
sys.exit(0 if base64.b64encode(h.digest()).decode() == digest else 1)
EOF
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

local_node_major() {
  [ -x /usr/local/bin/node ] && /usr/local/bin/node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}
if [ "$(local_node_major)" != "$NODE_MAJOR" ]; then
  read -r node_version node_url node_integrity < <(resolve "node-linux-$node_arch" "$NODE_MAJOR")
  log "installing Node $node_version into /usr/local"
  fetch "$node_url" "$node_integrity" "$tmp/node.tgz"
  mkdir -p "$tmp/node" && tar -xzf "$tmp/node.tgz" -C "$tmp/node"
  as_root install -d /usr/local/bin /usr/local/include
  as_root install -m 0755 "$tmp/node/package/bin/node" /usr/local/bin/node
  as_root rm -rf /usr/local/include/node
  as_root cp -r "$tmp/node/package/include/node" /usr/local/include/node
fi
hash -r
[ "$(node -p 'process.versions.node.split(".")[0]')" = "$NODE_MAJOR" ] ||
  die "$(command -v node) is Node $(node -v), not ${NODE_MAJOR}: put /usr/local/bin before $(dirname "$(command -v node)") on PATH"
log "node $(node -v) ($(command -v node))"

npm_major() {
  [ -x /usr/local/bin/npm ] && /usr/local/bin/npm -v 2>/dev/null | cut -d. -f1 || echo 0
}
if [ "$(npm_major)" != "$NPM_MAJOR" ]; then
  read -r npm_version npm_url npm_integrity < <(resolve npm "$NPM_MAJOR")
  log "installing npm $npm_version into /usr/local"
  fetch "$npm_url" "$npm_integrity" "$tmp/npm.tgz"
  mkdir -p "$tmp/npm" && tar -xzf "$tmp/npm.tgz" -C "$tmp/npm"
  as_root install -d /usr/local/lib/node_modules
  as_root rm -rf /usr/local/lib/node_modules/npm
  as_root cp -r "$tmp/npm/package" /usr/local/lib/node_modules/npm
  as_root ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
  as_root ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
fi
hash -r

pnpm_major() { command -v pnpm >/dev/null 2>&1 && pnpm -v 2>/dev/null | cut -d. -f1 || echo 0; }
if [ "$(pnpm_major)" != "$PNPM_MAJOR" ]; then
  log "installing pnpm ${PNPM_MAJOR} with npm"
  # The prefix is said outright: a user's npmrc may name another one.
  # --allow-scripts: npm 11 holds back install scripts it was not told of, and pnpm's puts its
  # native binary in place (without it pnpm runs through Node and says so on every start).
  as_root /usr/local/bin/npm install -g --prefix /usr/local --no-fund --no-audit --allow-scripts=pnpm \
    "pnpm@$PNPM_MAJOR" >/dev/null
  hash -r
fi
log "pnpm $(pnpm -v) ($(command -v pnpm))"

# --- The workspace ----------------------------------------------------------------------------
pnpm install --frozen-lockfile
# The console's static files (packages/console/dist), which the api serves at /console. The
# root postinstall builds them too, but pnpm skips it when node_modules is already up to date.
pnpm build:console

# --- The toolmesh command -------------------------------------------------------------------
# A launcher of this checkout's CLI in /usr/local/bin (root) or ~/.local/bin (a user), or in
# TOOLMESH_BIN_DIR (a throwaway clone's tests keep the machine's own launcher as it is).
bash scripts/install-cli.sh

# --- Every promised tool answers from a new login shell's PATH ---------------------------------
missing=()
tools=(node pnpm npm nats-server initdb bwrap socat rg docker-compose python3 chromium curl jq)
if [ -n "${TOOLMESH_BIN_DIR:-}" ]; then
  "$TOOLMESH_BIN_DIR/toolmesh" --help >/dev/null || missing+=("toolmesh (in $TOOLMESH_BIN_DIR)")
else
  tools+=(toolmesh)
fi
for tool in "${tools[@]}"; do
  env -i HOME="$HOME" USER="$(id -un)" TERM=dumb bash -lc "command -v $tool" >/dev/null 2>&1 ||
    missing+=("$tool")
done
fresh_node=$(env -i HOME="$HOME" TERM=dumb bash -lc 'node -p "process.versions.node"' 2>/dev/null || true)
case "$fresh_node" in
  "$NODE_MAJOR".*) ;;
  *) missing+=("node ${NODE_MAJOR} (a new shell finds ${fresh_node:-no node})") ;;
esac
if [ ${#missing[@]} -gt 0 ]; then
  die "a new shell does not find: ${missing[*]}"
fi
log "done: node, pnpm, npm, nats-server, initdb, bwrap, socat, rg, docker-compose, chromium, curl, jq and toolmesh answer from a new shell"
