# The mediagen container image: `make image` (docs/deploy.md, "Container image").
#
# Three stages (the slow, rarely changing ffmpeg stage first: the classic builder runs stages
# in order, and its layers are cached). `build` compiles a static mediagen (pure Go: SQLite is modernc.org/sqlite, so
# CGO_ENABLED=0) with -trimpath and the commit as its version. `ffmpeg` builds the lean
# ffmpeg/ffprobe the project tests with (scripts/ensure-lean-ffmpeg.sh: FFmpeg's own
# libraries linked in, Debian's x264, x265, LAME, FreeType and libwebp shared), from Debian's
# source of the version apt offers, and lists the Debian packages of the shared libraries it
# links. The runtime installs those, espeak-ng and the caption font on bookworm-slim (Debian's
# ffmpeg alone would add about 400 MB), and runs as an unprivileged user.
#
# The base images are the public ones; on a machine without a registry,
# scripts/ensure-base-images.sh makes images of the same names from Debian packages, and this
# file builds unchanged.
#
# Runs with a read-only root file system: the only writable paths are /var/lib/mediagen (the
# SQLite database, the signing key, local blobs) and /tmp (media scratch), both volumes.
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS ffmpeg
# Only the script: a change to the Go source does not build FFmpeg again.
COPY scripts/ensure-lean-ffmpeg.sh /usr/local/bin/
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
    ver=$(apt-cache show --no-all-versions ffmpeg | sed -n 's/^Version: //p'); \
    bin=$(MEDIAGEN_CACHE=/cache MEDIAGEN_FFMPEG_VERSION="$ver" ensure-lean-ffmpeg.sh); \
    test -n "$bin"; mkdir -p /out; cp "$bin/ffmpeg" "$bin/ffprobe" /out/; \
    for f in /out/ffmpeg /out/ffprobe; do ldd "$f" | awk '/=> \//{print $3}'; done | sort -u | \
      xargs -r readlink -f | xargs -r dpkg -S | cut -d: -f1 | sort -u >/out/runtime-packages; \
    cat /out/runtime-packages; /out/ffmpeg -hide_banner -version | head -1; \
    rm -rf /cache /var/lib/apt/lists/*

# Debian's certificate authorities, without openssl and libssl (8 MB) that the ca-certificates
# package needs to make the bundle: mediagen is Go and reads only the bundle.
FROM ${BASE_IMAGE} AS certs
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null

FROM ${GO_IMAGE} AS build
WORKDIR /src
# The module download is its own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
# go.mod replaces the Go client's module with ./client.
COPY client/go.mod ./client/
RUN go mod download
# Only what the binary is built from (docs and deploy files changing do not compile it again).
COPY cmd ./cmd
COPY internal ./internal
COPY client ./client
ARG VERSION=dev
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/mediagen ./cmd/mediagen && /out/mediagen version

FROM ${BASE_IMAGE}
ARG VERSION=dev
# The Makefile passes the remote and licence it knows; SPDX NOASSERTION says none was given.
ARG SOURCE=""
ARG LICENSE=NOASSERTION
LABEL org.opencontainers.image.title="mediagen" \
      org.opencontainers.image.description="Multi-tenant media generation service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSE}"
COPY --from=ffmpeg /out/runtime-packages /tmp/runtime-packages
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends espeak-ng fonts-dejavu-core \
      $(cat /tmp/runtime-packages) >/dev/null; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/* /tmp/runtime-packages /usr/share/doc /usr/share/man; \
    useradd --system --uid 10001 --user-group --home-dir /var/lib/mediagen --shell /usr/sbin/nologin mediagen; \
    mkdir -p /var/lib/mediagen; chown mediagen:mediagen /var/lib/mediagen; chmod 1777 /tmp
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=ffmpeg /out/ffmpeg /out/ffprobe /usr/local/bin/
COPY --from=build /out/mediagen /usr/local/bin/mediagen
# Listen on every interface of the container; the data directory is the volume.
ENV MEDIAGEN_LISTEN=:8080 \
    MEDIAGEN_DATA_DIR=/var/lib/mediagen \
    TMPDIR=/tmp
VOLUME ["/var/lib/mediagen", "/tmp"]
USER 10001:10001
WORKDIR /var/lib/mediagen
EXPOSE 8080
# bash's /dev/tcp: the image has no curl. The port follows MEDIAGEN_LISTEN.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["bash", "-c", "p=${MEDIAGEN_LISTEN##*:}; exec 3<>/dev/tcp/127.0.0.1/${p:-8080} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -c 12 <&3 | grep -q ' 200'"]
ENTRYPOINT ["mediagen"]
CMD ["serve"]
