#!/usr/bin/env bash
# The Helm chart's tests (deploy/helm/test, a Go module of its own so that Kubernetes' modules
# stay out of mediagen's go.mod): `helm lint` and `helm template` over the value sets, every
# rendered object decoded strictly into its k8s.io/api type, the schema's refusals, and the
# render-and-run test, which starts the rendered migration Job, api and worker containers with
# `docker run --network host` against PostgreSQL and MinIO and completes a task through them
# (docs/deploy.md, "Kubernetes (Helm)"). `make test` runs it.
#
# It gets what the tests need: helm (scripts/ensure-helm.sh, pinned, built once), PostgreSQL
# (ensure-postgres.sh), MinIO (ensure-minio.sh), a Docker daemon and the base images
# (ensure-base-images.sh, which installs and starts Docker under CI=true) and the image
# (`make image`; its layers are cached, so after a commit only the Go stage is built again).
# MEDIAGEN_TEST_IMAGE names an image to use instead of building one.
# Under CI=true nothing is skipped and any failure is fatal. Elsewhere, without a Docker
# daemon, the render-and-run test is skipped with the reason printed; the static tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { echo "test-chart: $*" >&2; }

helm=$(scripts/ensure-helm.sh)
[ -n "$helm" ] || { log "no helm: the chart tests are skipped"; exit 0; }
url=${MEDIAGEN_TEST_POSTGRES_URL:-$(scripts/ensure-postgres.sh)}
minio=${MEDIAGEN_TEST_MINIO:-$(scripts/ensure-minio.sh)}

image=${MEDIAGEN_TEST_IMAGE:-}
if [ -z "$image" ]; then
  if [ "${CI:-}" = "true" ] || docker info >/dev/null 2>&1; then
    t0=$SECONDS
    make --no-print-directory image ${IMAGE:+IMAGE=$IMAGE} >&2
    image=${IMAGE:-mediagen:$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
    log "image $image ready in $((SECONDS - t0)) s"
  else
    log "no Docker daemon answers (docker info): the render-and-run test is skipped (it never is under CI=true; scripts/ensure-base-images.sh starts Docker)"
  fi
fi

cd deploy/helm/test
$GO vet ./...
MEDIAGEN_TEST_HELM="$helm" MEDIAGEN_TEST_POSTGRES_URL="$url" MEDIAGEN_TEST_MINIO="$minio" MEDIAGEN_TEST_IMAGE="$image" \
  $GO test -count=1 -timeout 10m ${CHART_TEST_FLAGS:-} ./...
