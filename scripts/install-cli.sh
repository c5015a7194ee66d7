#!/usr/bin/env bash
# Puts `toolmesh` on PATH: a small launcher that runs this checkout's CLI
# (packages/cli/src/main.ts) with the Node found now (setup.sh's Node 24), whatever folder it is
# run from and whichever node comes first on PATH later. Written into the folder given, else
# /usr/local/bin as root, else ~/.local/bin (Debian's ~/.profile puts that on PATH when it
# exists), or TOOLMESH_BIN_DIR. Safe to run again: it rewrites the launcher only when it changed.
#   bash scripts/install-cli.sh [bin-folder]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
node_bin=${TOOLMESH_NODE:-$(command -v node)} || {
  echo "[setup] error: no node on PATH" >&2
  exit 1
}
node_bin=$(cd "$(dirname "$node_bin")" && pwd -P)/$(basename "$node_bin")
if [ $# -ge 1 ]; then
  bin=$1
elif [ -n "${TOOLMESH_BIN_DIR:-}" ]; then
  bin=$TOOLMESH_BIN_DIR
elif [ "$(id -u)" -eq 0 ]; then
  bin=/usr/local/bin
else
  bin=$HOME/.local/bin
fi
mkdir -p "$bin"

# Single-quoted for sh: a path with spaces or quotes stays one word.
sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
launcher="$bin/toolmesh"
content="#!/bin/sh
# toolmesh: the CLI of the checkout $root (written by scripts/setup.sh)
exec $(sq "$node_bin") $(sq "$root/packages/cli/src/main.ts") \"\$@\""
if [ -L "$launcher" ] || { [ -e "$launcher" ] && [ "$(cat "$launcher")" != "$content" ]; }; then
  rm -f "$launcher"
fi
if [ ! -e "$launcher" ]; then
  printf '%s\n' "$content" >"$launcher.tmp"
  chmod 0755 "$launcher.tmp"
  mv -f "$launcher.tmp" "$launcher"
fi
printf '[setup] toolmesh -> %s (runs %s with %s)\n' "$launcher" "$root/packages/cli/src/main.ts" "$node_bin"
case ":$PATH:" in
  *":$bin:"*) ;;
  *) printf '[setup] %s is not on this shell'"'"'s PATH yet: open a new login shell, or export PATH="%s:$PATH"\n' "$bin" "$bin" ;;
esac
