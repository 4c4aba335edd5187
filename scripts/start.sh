#!/usr/bin/env bash
# `npm start`: the service for real (API + worker), on a fresh machine. Installs dependencies when
# missing, generates the Prisma client, then hands over to scripts/start.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ ! -x node_modules/.bin/tsx ]]; then
  echo "start: installing dependencies" >&2
  # Not `npm ci`: the registries reachable here lack some optional platform builds (e.g.
  # @swc/core for darwin), which npm leaves out of the lockfile and `npm ci` then refuses.
  # `npm install` installs exactly the locked versions and tolerates them.
  npm install --no-audit --no-fund >&2
fi
node node_modules/prisma/build/index.js generate >/dev/null
exec node_modules/.bin/tsx scripts/start.ts "$@"
