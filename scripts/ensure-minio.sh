#!/usr/bin/env bash
# Builds the MinIO server the S3 tests run against (once: it is cached) and prints the path of
# the binary. The tests start their own servers from it on loopback (internal/blob/s3test).
# Building takes about 4 minutes on 2 cores; the binary is kept in
# ${MEDIAGEN_CACHE:-~/.cache/mediagen}/minio-<version>/minio.
# Under CI=true any failure is fatal; otherwise the script warns and the S3 tests skip.
set -uo pipefail

version="v0.0.0-20260212201848-7aac2a2c5b7c"
dir="${MEDIAGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mediagen}/minio-$version"
bin="$dir/minio"

log() { echo "ensure-minio: $*" >&2; }
fail() {
  log "$*"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  log "the S3 tests will be skipped (they never skip under CI=true)"
  exit 0
}

if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 || fail "no go to build MinIO with"
log "building MinIO $version into $dir (once; about 4 minutes on 2 cores)"
mkdir -p "$dir" || fail "cannot create $dir"
tmp=$(mktemp -d)
# Outside the project's module, so that go install builds MinIO with its own go.mod.
( cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/minio/minio@$version" ) >&2 || { rm -rf "$tmp"; fail "go install minio failed"; }
mv "$tmp/minio" "$bin" || fail "cannot move the MinIO binary into $dir"
rm -rf "$tmp"
echo "$bin"
