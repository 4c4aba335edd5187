#!/usr/bin/env bash
# Makes a real PostgreSQL server available to the tests and prints its admin URL on stdout:
#   postgres://postgres:postgres@127.0.0.1:5432/postgres
# - TEST_PG_ADMIN_URL set and reachable: nothing to do, that URL is printed.
# - Otherwise, on Debian: installs the server (apt, root only) when missing, creates and starts a
#   cluster on 127.0.0.1:5432, and gives the `postgres` role the password `postgres`.
# Idempotent and quick when the cluster already runs. Progress goes to stderr.
set -euo pipefail

PG_HOST=127.0.0.1
PG_PORT=5432
PG_PASSWORD=postgres
ADMIN_URL="postgres://postgres:${PG_PASSWORD}@${PG_HOST}:${PG_PORT}/postgres"
CLUSTER_NAME=main

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

say() { echo "ensure-postgres: $*" >&2; }
die() {
  echo "ensure-postgres: ERROR: $*" >&2
  exit 1
}

# psql when the client is installed, else the repo's own `pg` driver: TEST_PG_ADMIN_URL may point
# at a server elsewhere on a machine without any PostgreSQL package.
can_connect() { # <url>
  if command -v psql >/dev/null 2>&1; then
    PGCONNECT_TIMEOUT=5 psql "$1" -XAtqc 'select 1' >/dev/null 2>&1
  elif command -v node >/dev/null 2>&1 && [[ -d "$repo_root/node_modules/pg" ]]; then
    (cd "$repo_root" && node --input-type=module -e '
      import pg from "pg";
      const client = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 5000 });
      try { await client.connect(); await client.query("select 1"); await client.end(); }
      catch { process.exit(1); }' "$1") >/dev/null 2>&1
  else
    return 1
  fi
}

if [[ -n "${TEST_PG_ADMIN_URL:-}" ]]; then
  if can_connect "$TEST_PG_ADMIN_URL"; then
    echo "$TEST_PG_ADMIN_URL"
    exit 0
  fi
  say "TEST_PG_ADMIN_URL is set but no connection could be made with it; setting up the local server instead"
fi

# Fast path: the local server already runs and accepts the password.
if can_connect "$ADMIN_URL"; then
  echo "$ADMIN_URL"
  exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
  die "no PostgreSQL accepts $ADMIN_URL, and setting one up (apt-get, pg_ctlcluster, changing the postgres role's password) needs root.
  Run: sudo bash scripts/ensure-postgres.sh
  or point the tests at an existing server: export TEST_PG_ADMIN_URL=postgres://USER:PASSWORD@HOST:PORT/postgres (a role that may create databases)"
fi

installed_versions() {
  local bin
  for bin in /usr/lib/postgresql/*/bin/postgres; do
    [[ -x "$bin" ]] && basename "$(dirname "$(dirname "$bin")")"
  done | sort -n
}

if [[ -z "$(installed_versions)" ]] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 ||
    die "PostgreSQL server binaries are missing and this is not a Debian/Ubuntu system (no apt-get); install PostgreSQL or set TEST_PG_ADMIN_URL"
  say "installing PostgreSQL with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2 || die "apt-get update failed"
  apt-get install -y postgresql >&2 || die "apt-get install -y postgresql failed"
  [[ -n "$(installed_versions)" ]] || die "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/postgres appeared"
fi

# Use the cluster that already owns port 5432 if there is one, else <newest version>/main.
# pg_lsclusters -h prints: version cluster port status owner data-directory log-file
version=""
cluster=""
while read -r v c p _; do
  if [[ "$p" == "$PG_PORT" ]]; then
    version="$v"
    cluster="$c"
    break
  fi
done < <(pg_lsclusters -h 2>/dev/null || true)

if [[ -z "$version" ]]; then
  version="$(installed_versions | tail -n 1)"
  cluster="$CLUSTER_NAME"
  if [[ -z "$(pg_lsclusters -h "$version" "$cluster" 2>/dev/null || true)" ]]; then
    say "creating cluster $version/$cluster on port $PG_PORT"
    pg_createcluster --port "$PG_PORT" "$version" "$cluster" >&2 || die "pg_createcluster $version $cluster failed"
  else
    # It exists on another port (5432 was taken when it was created): move it, as the URL promises 5432.
    say "moving cluster $version/$cluster to port $PG_PORT"
    pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" stop >/dev/null 2>&1 || true
    pg_conftool "$version" "$cluster" set port "$PG_PORT" >&2
  fi
fi

cluster_status() { pg_lsclusters -h "$version" "$cluster" | awk '{print $4}'; }

if [[ "$(cluster_status)" != online* ]]; then
  say "starting cluster $version/$cluster"
  # --skip-systemctl-redirect: containers and CI runners have no systemd to hand the start to.
  if ! pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start >&2; then
    log_file="$(pg_lsclusters -h "$version" "$cluster" | awk '{print $7}')"
    [[ -n "$log_file" && -f "$log_file" ]] && tail -n 20 "$log_file" >&2
    die "could not start cluster $version/$cluster (is port $PG_PORT used by another program?)"
  fi
fi

for _ in $(seq 1 60); do
  pg_isready -q -h "$PG_HOST" -p "$PG_PORT" && break
  sleep 0.5
done
pg_isready -q -h "$PG_HOST" -p "$PG_PORT" ||
  die "cluster $version/$cluster runs but does not accept TCP connections on $PG_HOST:$PG_PORT (check listen_addresses in /etc/postgresql/$version/$cluster/postgresql.conf)"

if ! can_connect "$ADMIN_URL"; then
  say "setting the password of role postgres"
  # Over the local socket with peer authentication, which Debian grants the postgres OS user.
  runuser -u postgres -- psql -XAtq -p "$PG_PORT" -d postgres -v ON_ERROR_STOP=1 \
    -c "ALTER ROLE postgres WITH LOGIN PASSWORD '${PG_PASSWORD}'" >&2 ||
    die "could not set the password of role postgres through the local socket as OS user postgres"
fi

can_connect "$ADMIN_URL" ||
  die "the server runs on $PG_HOST:$PG_PORT but refuses $ADMIN_URL; /etc/postgresql/$version/$cluster/pg_hba.conf needs a line like
  host all all 127.0.0.1/32 scram-sha-256"

say "PostgreSQL $version/$cluster ready on $PG_HOST:$PG_PORT"
echo "$ADMIN_URL"
