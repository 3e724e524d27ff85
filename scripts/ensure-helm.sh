#!/usr/bin/env bash
# Builds the helm the chart tests run (once: it is cached) and prints the path of the binary.
# Pinned, from the Go module proxy (no release download needed): helm.sh/helm/v3/cmd/helm at
# $version, built with this machine's Go outside the project's module, so Kubernetes' modules
# never enter mediagen's go.mod. Kept in ${MEDIAGEN_CACHE:-~/.cache/mediagen}/helm-<version>/helm.
# Building takes about 5 minutes on 2 cores the first time.
# HELM names a binary to use instead. Under CI=true any failure is fatal; otherwise the script
# warns, prints nothing and the chart tests are skipped.
set -uo pipefail

version="v3.22.0"
dir="${MEDIAGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mediagen}/helm-$version"
bin="$dir/helm"

log() { echo "ensure-helm: $*" >&2; }
fail() {
  log "$*"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  log "the chart tests will be skipped (they never skip under CI=true)"
  exit 0
}

if [ -n "${HELM:-}" ]; then
  [ -x "$HELM" ] || fail "HELM=$HELM is not an executable"
  echo "$HELM"; exit 0
fi
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 || fail "no go to build helm with"
log "building helm $version into $dir (once; about 5 minutes on 2 cores)"
mkdir -p "$dir" || fail "cannot create $dir"
tmp=$(mktemp -d)
# Outside the project's module, so that go install builds helm with its own go.mod; the
# version stamp is what `helm version` prints.
( cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath \
    -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" \
    "helm.sh/helm/v3/cmd/helm@$version" ) >&2 || { rm -rf "$tmp"; fail "go install helm failed"; }
mv "$tmp/helm" "$bin" || fail "cannot move the helm binary into $dir"
rm -rf "$tmp"
echo "$bin"
