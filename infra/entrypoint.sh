#!/bin/sh
# Picks the process this container runs from its first argument; the rest are passed on.
#   api | skills | tools | agent-worker | sandbox-reaper   a service (services/<name>/src/main.ts)
#   migrate                                         apply the SQL migrations, then exit
#   toolmesh ...                                    the command-line client
#   reset-nats ...                                  delete the NATS streams of a subject root
#   nats-auth --dir <folder> ...                    make the NATS keys, creds and server config
set -eu
cd "$(dirname "$0")/.."
name="${1:-api}"
[ "$#" -gt 0 ] && shift
case "$name" in
  migrate) exec node scripts/migrate.ts "$@" ;;
  reset-nats) exec node scripts/reset-nats.ts "$@" ;;
  nats-auth) exec node scripts/nats-auth.ts "$@" ;;
  toolmesh) exec node packages/cli/src/main.ts "$@" ;;
  *)
    entry="services/$name/src/main.ts"
    if [ ! -f "$entry" ]; then
      echo "unknown process '$name': expected api, skills, tools, agent-worker, sandbox-reaper, migrate, toolmesh, reset-nats or nats-auth" >&2
      exit 2
    fi
    exec node "$entry" "$@"
    ;;
esac
