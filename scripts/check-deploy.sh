#!/usr/bin/env bash
# `pnpm check:deploy`: validates what a deployment is built from, without a Docker engine:
# docker-compose.yml (without a profile, and with the gcs and observability profiles) by Debian's docker-compose, and
# infra/Dockerfile by a Dockerfile linter (dockerfile-utils, the one VS Code's Docker support
# uses). CI runs it; tests/deploy.test.ts checks what the stack must contain.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "check-deploy: docker-compose is not installed (pnpm setup installs it with apt)" >&2
  exit 1
fi

# The required secrets only need values for the file to be interpolated; these are not used.
export POSTGRES_PASSWORD=check-deploy TOOLMESH_ADMIN_KEY=check-deploy-admin-key-0123456789
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile gcs config -q
docker-compose -f docker-compose.yml --profile observability config -q
echo "check-deploy: docker-compose.yml ok"

pnpm exec dockerfile-utils lint infra/Dockerfile
sh -n infra/entrypoint.sh
echo "check-deploy: infra/Dockerfile ok"
