#!/usr/bin/env bash
# Builds the helm the chart tests run (once: it is cached) and prints the path of the binary.
# Pinned, from the Go module proxy (no release download needed): helm.sh/helm/v3/cmd/helm at
# $version, built with this machine's Go outside the project's module, so Kubernetes' modules
# never enter mediagen's go.mod. Kept in ${MEDIAGEN_CACHE:-~/.cache/mediagen}/helm-<version>/helm.
# Building takes about 6 CPU-minutes the first time (50 minutes of wall time on a machine
# loaded 20 times over its 2 cores).
# HELM names a binary to use instead. Under CI=true any failure is fatal; otherwise the script
# warns, prints nothing and the chart tests are skipped.
set -uo pipefail

version="v3.22.0"
# The directory names the build: a change of the stamps below builds anew.
dir="${MEDIAGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mediagen}/helm-$version-k8s1.37"
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
log "building helm $version into $dir (once; about 6 CPU-minutes)"
mkdir -p "$dir" || fail "cannot create $dir"
tmp=$(mktemp -d)
# Outside the project's module, so that go install builds helm with its own go.mod. The -X
# stamps are those of helm's own Makefile: the version `helm version` prints, and the
# Kubernetes version `helm template` and `helm lint` assume (without them, 1.20: the chart's
# kubeVersion refuses it) — that of the client-go helm $version is built with.
kube_minor=37
( cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath \
    -ldflags "-X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kube_minor -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kube_minor" \
    "helm.sh/helm/v3/cmd/helm@$version" ) >&2 || { rm -rf "$tmp"; fail "go install helm failed"; }
mv "$tmp/helm" "$bin" || fail "cannot move the helm binary into $dir"
rm -rf "$tmp"
echo "$bin"
