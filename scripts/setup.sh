#!/usr/bin/env bash
# One-shot setup on Debian: system packages the stack and tests use, Node 24 LTS, pnpm, and the
# workspace's dependencies from the lockfile. Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# nats-server and PostgreSQL run the local stack and the tests when no NATS_URL/DATABASE_URL
# is given; python3/make/g++ let native dependencies build if a prebuilt one is missing.
need=()
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || need+=(nats-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v make >/dev/null 2>&1 || need+=(make)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v curl >/dev/null 2>&1 || need+=(curl)
# The local sandbox: sandbox-runtime drives bubblewrap, bridges its proxies with socat and scans
# for protected files with ripgrep; the example image skill draws with Debian's Pillow.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v socat >/dev/null 2>&1 || need+=(socat)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
dpkg -s python3-pil >/dev/null 2>&1 || need+=(python3-pil)
# `pnpm check:deploy` validates docker-compose.yml with Debian's docker-compose (no engine needed).
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]} with apt"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(node_major)" -lt 24 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    log "installing nodejs and npm with apt to bootstrap Node 24"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
  fi
  log "installing Node 24 LTS from the npm registry"
  # --force: the node package replaces the distribution's /usr/bin/node link.
  as_root npm install -g --force node@24 >/dev/null
  hash -r
fi
log "node $(node -v)"

if ! command -v pnpm >/dev/null 2>&1; then
  log "installing pnpm"
  as_root npm install -g pnpm >/dev/null
  hash -r
fi
log "pnpm $(pnpm -v)"

pnpm install --frozen-lockfile
log "done"
