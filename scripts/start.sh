#!/usr/bin/env bash
# `npm start`: the service for real (API + worker), on a fresh machine. Installs dependencies when
# missing (npm ci), generates the Prisma client (again: the schema may have changed since install),
# then hands over to scripts/start.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ ! -x node_modules/.bin/tsx ]]; then
  echo "start: installing dependencies" >&2
  # Exactly the committed lockfile; postinstall generates the Prisma client.
  npm ci --no-audit --no-fund >&2
fi
node node_modules/prisma/build/index.js generate >/dev/null
exec node_modules/.bin/tsx scripts/start.ts "$@"
