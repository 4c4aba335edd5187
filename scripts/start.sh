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
# Install's other half, again for an installation older than the patches (scripts/patch-dependencies.mjs).
node scripts/patch-dependencies.mjs
# What generate says when it works is the same every run; it is shown only when it fails.
if ! generated="$(node node_modules/prisma/build/index.js generate 2>&1)"; then
  printf '%s\n' "$generated" >&2
  exit 1
fi
# node itself with tsx as its loader, not the tsx CLI (which runs node as a second process and
# relays signals to it): the launcher is this very process, so a signal sent to it is the one it
# stops on, and its parent is the shell npm started, which scripts/start.ts watches.
exec node --import tsx scripts/start.ts "$@"
