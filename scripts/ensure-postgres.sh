#!/usr/bin/env bash
# Makes a PostgreSQL server available for the tests and prints the database URL to use.
#   1. A server already answering at MEDIAGEN_TEST_POSTGRES_URL (default: trust auth on
#      127.0.0.1:5432, database "test") is used as it is.
#   2. A server that is installed but stopped is started.
#   3. A machine with none gets Debian's postgresql package.
# When trust auth is not set up (a fresh Debian install uses peer/scram), a role "mediagen"
# with a password and a database "mediagen_test" are created through the postgres OS user.
# Under CI=true any failure is fatal; otherwise the script warns and the PostgreSQL tests skip.
set -uo pipefail

url="${MEDIAGEN_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
fallback="postgres://mediagen:mediagen@127.0.0.1:5432/mediagen_test?sslmode=disable"

log() { echo "ensure-postgres: $*" >&2; }
fail() {
  log "$*"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  log "PostgreSQL tests will be skipped (they never skip under CI=true)"
  echo "$url"; exit 0
}
sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

can_connect() { command -v psql >/dev/null 2>&1 && PGCONNECT_TIMEOUT=3 psql "$1" -Atqc 'select 1' >/dev/null 2>&1; }
as_postgres() { if [ "$(id -u)" -eq 0 ]; then su postgres -c "$1"; else sudo -u postgres sh -c "$1"; fi; }

if can_connect "$url"; then echo "$url"; exit 0; fi
if can_connect "$fallback"; then echo "$fallback"; exit 0; fi

if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || fail "no PostgreSQL and no apt-get to install it"
  log "installing PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq postgresql >/dev/null; } || fail "apt-get install postgresql failed"
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  ver=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting PostgreSQL $ver"
  $sudo pg_ctlcluster --skip-systemctl-redirect "$ver" main start 2>/dev/null || $sudo pg_ctlcluster "$ver" main start || fail "could not start PostgreSQL $ver"
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi

if can_connect "$url"; then echo "$url"; exit 0; fi

# No trust auth: make our own role and database through the postgres OS user (peer auth).
log "creating role mediagen and database mediagen_test"
as_postgres "psql -q -c \"DO \\\$\\\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mediagen') THEN CREATE ROLE mediagen LOGIN PASSWORD 'mediagen'; END IF; END \\\$\\\$;\"" >/dev/null 2>&1
as_postgres "psql -Atqc \"SELECT 1 FROM pg_database WHERE datname = 'mediagen_test'\" | grep -q 1 || createdb -O mediagen mediagen_test" >/dev/null 2>&1
if can_connect "$fallback"; then echo "$fallback"; exit 0; fi
fail "PostgreSQL is running but neither $url nor $fallback accepts connections"
