#!/usr/bin/env bash
# Makes the public base images the project's Dockerfile and deploy/compose name — pulled when a
# registry answers, else from Debian packages (a machine that reaches Debian's mirror but no
# image registry) — and tags them with the public names, so the SAME Dockerfile and compose
# file build and run unchanged here and, on an operator's machine, from Docker Hub. Each image is made once: a tag that exists
# is kept (MEDIAGEN_BASE_IMAGES_REBUILD=1 makes them anew). Starts dockerd when no daemon
# answers (as root; Debian's docker.io). Prints nothing on success but what it does, on stderr.
#
#   debian:bookworm-slim    mmdebstrap --variant=apt, docs/man/locales left out as the
#                           official slim image does
#   golang:1.26-bookworm    the same plus ca-certificates, git, gcc and make, with this
#                           machine's Go (GOROOT) at /usr/local/go, GOPATH=/go as upstream,
#                           and the machine's extra certificate authorities
#   postgres:15-bookworm    Debian's postgresql-15 with an entrypoint that honours
#                           POSTGRES_USER/POSTGRES_PASSWORD/POSTGRES_DB/PGDATA as upstream's
#                           (scripts/base-images/postgres)
#   minio/minio:<tag>       the MinIO server scripts/ensure-minio.sh builds, on bookworm-slim
#                           (scripts/base-images/minio); the tag is deploy/compose's
#   prom/prometheus:<tag>   Debian's prometheus (scripts/base-images/prometheus), only when
#                           asked for: MEDIAGEN_BASE_IMAGES=prometheus (the compose `metrics`
#                           profile; Grafana is not in Debian and is not made)
#
# Settings: MEDIAGEN_BASE_IMAGES (space-separated, of: debian golang postgres minio prometheus;
# default the first four),
# DEBIAN_MIRROR (default: the first deb URI in this machine's apt sources, else deb.debian.org).
# Under CI=true a failure is fatal; otherwise too (an image cannot be half made).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "ensure-base-images: $*" >&2; }
die() { log "$*"; exit 1; }

DEBIAN_TAG=debian:bookworm-slim
GOLANG_TAG=golang:1.26-bookworm
POSTGRES_TAG=postgres:15-bookworm
# The tag deploy/compose/compose.yaml names (checked by the test that builds the stack).
MINIO_TAG=$(sed -n 's/^ *image: *\(minio\/minio:[^ ]*\).*/\1/p' deploy/compose/compose.yaml 2>/dev/null | head -1 || true)
MINIO_TAG=${MINIO_TAG:-minio/minio:latest}
PROMETHEUS_TAG=$(sed -n 's/^ *image: *\(prom\/prometheus:[^ ]*\).*/\1/p' deploy/compose/compose.yaml 2>/dev/null | head -1 || true)
PROMETHEUS_TAG=${PROMETHEUS_TAG:-prom/prometheus:latest}

want="${MEDIAGEN_BASE_IMAGES:-debian golang postgres minio}"

sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

apt_install() {
  local need=() p
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p"); done
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
}

# The daemon: Debian's docker.io (dockerd, containerd, runc); started in the background when
# nothing answers on the socket (no systemd in CI containers).
ensure_docker() {
  if docker info >/dev/null 2>&1; then return 0; fi
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  command -v docker >/dev/null 2>&1 || die "no docker client after installing docker.io"
  if docker info >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" -eq 0 ] || die "no Docker daemon answers and starting one needs root"
  log "starting dockerd (log: /var/log/dockerd.log)"
  (setsid dockerd >/var/log/dockerd.log 2>&1 &)
  local i
  for i in $(seq 1 120); do docker info >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "dockerd did not answer within 30 s: $(tail -n 5 /var/log/dockerd.log)"
}

# have TAG: the image is here, or a registry gave it (an operator's machine pulls the public
# image rather than making a stand-in; MEDIAGEN_BASE_IMAGES_PULL=0 skips the attempt). Where no
# registry answers, the pull fails at once (no such host) and the image is made locally.
have() {
  [ "${MEDIAGEN_BASE_IMAGES_REBUILD:-0}" = 1 ] && return 1
  docker image inspect "$1" >/dev/null 2>&1 && return 0
  [ "${MEDIAGEN_BASE_IMAGES_PULL:-1}" = 1 ] && timeout 300 docker pull -q "$1" >/dev/null 2>&1 && { log "pulled $1"; return 0; }
  return 1
}

mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local m
  m=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  [ -n "$m" ] || m=$(sed -n 's/^deb \(http[^ ]*debian\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)
  echo "${m:-http://deb.debian.org/debian}"
}

# debootstrap_import TAG IMPORT-CHANGES... -- MMDEBSTRAP-ARGS...: a bookworm root file system
# as slim as the official image (no docs, man pages or locales but C), imported as TAG.
debootstrap_import() {
  local tag=$1; shift
  local changes=()
  while [ "$1" != -- ]; do changes+=(--change "$1"); shift; done
  shift
  local m; m=$(mirror)
  local t0=$SECONDS
  log "making $tag with mmdebstrap from $m"
  mmdebstrap --quiet --variant=apt --format=tar --aptopt='APT::Install-Recommends "false"' \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log' \
    --customize-hook="printf 'Types: deb\nURIs: $m\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: ${m%/debian}/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >\"\$1\"/etc/apt/sources.list.d/debian.sources; rm -f \"\$1\"/etc/apt/sources.list" \
    "$@" bookworm - "$m" |
    docker import "${changes[@]}" - "$tag" >/dev/null
  log "$tag made in $((SECONDS - t0)) s"
}

ensure_docker
command -v mmdebstrap >/dev/null 2>&1 || apt_install mmdebstrap

for w in $want; do
  case "$w" in
  debian)
    have "$DEBIAN_TAG" || debootstrap_import "$DEBIAN_TAG" 'CMD ["bash"]' -- ;;
  golang)
    if ! have "$GOLANG_TAG"; then
      goroot=$(go env GOROOT 2>/dev/null || echo /usr/local/go)
      [ -x "$goroot/bin/go" ] || die "no Go at $goroot to put in $GOLANG_TAG"
      log "Go in $GOLANG_TAG: $("$goroot/bin/go" version)"
      # The machine's own certificate authorities (/usr/local/share/ca-certificates) are
      # trusted in this builder as on the machine: where the module proxy is reached through
      # a TLS-inspecting gateway, `go mod download` in the Dockerfile needs them. The public
      # golang image has only Debian's.
      local_cas=$(ls /usr/local/share/ca-certificates/*.crt 2>/dev/null | tr '\n' ' ' || true)
      debootstrap_import "$GOLANG_TAG" \
        'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        'ENV GOLANG_VERSION='"$("$goroot/bin/go" env GOVERSION)" 'ENV GOPATH=/go' 'ENV GOTOOLCHAIN=local' \
        'WORKDIR /go' -- \
        --include=ca-certificates,git,gcc,libc6-dev,make \
        --customize-hook="copy-in $goroot /usr/local" \
        --customize-hook='for c in '"$local_cas"'; do cp "$c" "$1"/usr/local/share/ca-certificates/; done; chroot "$1" update-ca-certificates >/dev/null' \
        --customize-hook='[ -d "$1"/usr/local/go ] || mv "$1"/usr/local/'"$(basename "$goroot")"' "$1"/usr/local/go; mkdir -p "$1"/go/bin "$1"/go/src; chmod -R 1777 "$1"/go'
    fi ;;
  postgres)
    if ! have "$POSTGRES_TAG"; then
      have "$DEBIAN_TAG" || MEDIAGEN_BASE_IMAGES=debian "$0"
      log "building $POSTGRES_TAG from Debian's postgresql-15"
      docker build -q -t "$POSTGRES_TAG" scripts/base-images/postgres >/dev/null
    fi ;;
  minio)
    if ! have "$MINIO_TAG"; then
      have "$DEBIAN_TAG" || MEDIAGEN_BASE_IMAGES=debian "$0"
      bin=$(CI=true scripts/ensure-minio.sh) || die "no MinIO binary (scripts/ensure-minio.sh)"
      log "building $MINIO_TAG from $bin"
      ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
      cp scripts/base-images/minio/* "$ctx/" && cp "$bin" "$ctx/minio"
      docker build -q -t "$MINIO_TAG" "$ctx" >/dev/null
    fi ;;
  prometheus)
    if ! have "$PROMETHEUS_TAG"; then
      have "$DEBIAN_TAG" || MEDIAGEN_BASE_IMAGES=debian "$0"
      log "building $PROMETHEUS_TAG from Debian's prometheus"
      docker build -q -t "$PROMETHEUS_TAG" scripts/base-images/prometheus >/dev/null
    fi ;;
  *) die "unknown base image $w (want debian golang postgres minio prometheus)" ;;
  esac
done
