#!/usr/bin/env bash
# A local cluster in one command (`make cluster`, `make cluster N=3`): a PostgreSQL database
# of its own, a MinIO with generated credentials and its bucket, and N `mediagen serve`
# replicas sharing a generated signing key — the first half (rounded up) with --role api, the
# rest --role worker (N=1: one --role all). It prints their addresses and a demo key, and stops
# everything on Ctrl-C (SIGINT) or SIGTERM. Every run starts empty: the database is made anew
# and MinIO's data lives in the cluster directory.
#
# Settings (environment):
#   N                  replicas (default 2, or the first argument)
#   CLUSTER_DIR        logs, MinIO data, replica scratch, env file (default .cluster)
#   CLUSTER_PORT       first replica port; replica i listens on CLUSTER_PORT+i-1 (default 8081)
#   CLUSTER_MINIO_PORT MinIO's S3 port; its console takes the next one (default 9100)
#   CLUSTER_DB         the database name (default mediagen_cluster; dropped and made anew)
#   MEDIAGEN_BIN       the mediagen binary (default: built from this checkout into CLUSTER_DIR)
#   MINIO_BIN          the MinIO binary (default: what scripts/ensure-minio.sh builds and caches)
set -uo pipefail
cd "$(dirname "$0")/.."

n="${N:-${1:-2}}"
dir="${CLUSTER_DIR:-$PWD/.cluster}"
port="${CLUSTER_PORT:-8081}"
minio_port="${CLUSTER_MINIO_PORT:-9100}"
db_name="${CLUSTER_DB:-mediagen_cluster}"
bucket="mediagen"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

[[ "$n" =~ ^[1-9][0-9]?$ ]] || die "N=$n: want 1 to 99 replicas"
[[ "$db_name" =~ ^[a-z_][a-z0-9_]*$ ]] || die "CLUSTER_DB=$db_name: want a lower-case SQL name"
for tool in curl psql od; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install curl postgresql-client coreutils)"
done

pids=() names=()
stopping=0
# stop ends every child: the replicas first (SIGTERM: they finish requests and hand their
# jobs back), then MinIO; whatever is left after 20 s is killed.
stop() {
  [ "$stopping" = 1 ] && return
  stopping=1
  log "stopping"
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[$i]}" 2>/dev/null
    for _ in $(seq 1 200); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      log "${names[$i]} did not stop in 20 s; killing it"
      kill -KILL "${pids[$i]}" 2>/dev/null
    fi
    wait "${pids[$i]}" 2>/dev/null
  done
  log "stopped (logs in $dir/logs)"
}
trap 'stop; exit 0' INT TERM
trap 'stop' EXIT

# start NAME LOG CMD...: runs CMD in the background and remembers it. MinIO is started first
# and so stopped last.
start() {
  local name=$1 logf=$2
  shift 2
  "$@" >"$logf" 2>&1 &
  pids+=("$!") names+=("$name")
}

# wait_ready NAME URL PID: polls URL until it answers 200 (at most 60 s), or the process exits.
wait_ready() {
  for _ in $(seq 1 240); do
    curl -fsS -o /dev/null --max-time 2 "$2" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || die "$1 exited; its log: $(tail -n 5 "$4" 2>/dev/null)"
    sleep 0.25
  done
  die "$1 not ready at $2 after 60 s (log: $4)"
}

rm -rf "$dir/minio" "$dir/logs" "$dir"/r[0-9]*
mkdir -p "$dir/logs" "$dir/minio" || die "cannot create $dir"

bin="${MEDIAGEN_BIN:-}"
if [ -z "$bin" ]; then
  log "building mediagen"
  go build -o "$dir/mediagen" ./cmd/mediagen || die "go build failed"
  bin="$dir/mediagen"
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# PostgreSQL: ensure-postgres.sh starts (or installs) the server and prints a URL that can
# create databases; the cluster's database is made anew beside the one it names.
admin_url="$(scripts/ensure-postgres.sh)"
psql "$admin_url" -Atqc 'select 1' >/dev/null 2>&1 || die "PostgreSQL at $admin_url does not answer"
PGOPTIONS="-c client_min_messages=warning" psql "$admin_url" -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" -c "CREATE DATABASE $db_name" >/dev/null ||
  die "cannot create database $db_name through $admin_url"
base="${admin_url%%\?*}"
query="${admin_url#"$base"}"
db_url="${base%/*}/$db_name$query"

# MinIO with generated credentials; the bucket is made by mediagen's own S3 client.
minio="${MINIO_BIN:-$(scripts/ensure-minio.sh)}"
[ -n "$minio" ] && [ -x "$minio" ] || die "no MinIO binary (scripts/ensure-minio.sh builds it)"
access="mediagen-$(hex 4)"
secret="$(hex 20)"
start minio "$dir/logs/minio.log" env MINIO_ROOT_USER="$access" MINIO_ROOT_PASSWORD="$secret" \
  MINIO_BROWSER=off MINIO_UPDATE=off "$minio" server --quiet --address "127.0.0.1:$minio_port" \
  --console-address "127.0.0.1:$((minio_port + 1))" "$dir/minio"
wait_ready minio "http://127.0.0.1:$minio_port/minio/health/ready" "${pids[0]}" "$dir/logs/minio.log"
blob_url="s3://$bucket/?endpoint=127.0.0.1:$minio_port&secure=false"
export AWS_ACCESS_KEY_ID="$access" AWS_SECRET_ACCESS_KEY="$secret"
"$bin" admin blob init --blob "$blob_url" >&2 || die "mediagen admin blob init failed"

signing="$(hex 32)"
apis=$(((n + 1) / 2))
[ "$n" = 1 ] && apis=1
lines=()
for ((i = 1; i <= n; i++)); do
  role=api
  [ "$i" -gt "$apis" ] && role=worker
  [ "$n" = 1 ] && role=all
  addr="127.0.0.1:$((port + i - 1))"
  start "r$i" "$dir/logs/r$i.log" "$bin" serve --role "$role" --listen "$addr" --public-url "http://$addr" \
    --data-dir "$dir/r$i" --db "$db_url" --blob "$blob_url" --signing-key "$signing" --limit-replicas "$apis"
  lines+=("$(printf '  r%-3s %-7s http://%s' "$i" "$role" "$addr")")
done
for ((i = 1; i <= n; i++)); do
  wait_ready "r$i" "http://127.0.0.1:$((port + i - 1))/readyz" "${pids[$i]}" "$dir/logs/r$i.log"
done

key_out="$("$bin" admin key create --tenant demo --name cluster-demo --credit 10 --db "$db_url" --data-dir "$dir/admin")" ||
  die "mediagen admin key create failed"
demo_key="$(sed -n 's/^secret: *//p' <<<"$key_out")"

# Everything a shell needs to reach the cluster: `. .cluster/env`, then mediagen admin …
umask 077
cat >"$dir/env" <<EOF
export MEDIAGEN_DB='$db_url'
export MEDIAGEN_BLOB='$blob_url'
export AWS_ACCESS_KEY_ID='$access'
export AWS_SECRET_ACCESS_KEY='$secret'
export MEDIAGEN_SIGNING_KEY='$signing'
export DEMO_KEY='$demo_key'
EOF

cat <<EOF
cluster: up, $n replicas ($apis api), logs in $dir/logs
$(printf '%s\n' "${lines[@]}")
  PostgreSQL  $db_url
  MinIO       http://127.0.0.1:$minio_port  bucket $bucket  (credentials in $dir/env)
  demo key    $demo_key
try:  curl -s http://127.0.0.1:$port/v1/videos -H "Authorization: Bearer $demo_key" -H 'Content-Type: application/json' -d '{"model":"demo-video-fast","prompt":"a lighthouse at dusk"}'
admin: . $dir/env; $bin admin key list
Ctrl-C stops everything.
EOF

# Runs until a signal (the trap stops everything) or until a child exits on its own.
while true; do
  wait -n
  for ((i = 0; i < ${#pids[@]}; i++)); do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      log "${names[$i]} exited on its own; its log: $(tail -n 5 "$dir/logs/${names[$i]}.log" 2>/dev/null)"
      exit 1
    fi
  done
done
