# The mediagen container image: `make image` (docs/deploy.md, "Container image").
#
# Stages (the slow, rarely changing ffmpeg stage first: the classic builder runs stages in
# order, and its layers are cached). `ffmpeg` builds the lean ffmpeg/ffprobe the project tests
# with (scripts/ensure-lean-ffmpeg.sh: only the codecs, filters and formats the service uses;
# Debian's x264, x265, LAME, FreeType and libwebp shared), from Debian's source of the version
# apt offers, with FFmpeg's own libraries shared between the two programs, and lists the Debian
# packages of the external libraries they link. `espeak` takes Debian's espeak-ng with the
# dictionaries the service's voice reads (below) and, in place of its audio output library, one
# without a device (deploy/image/pcaudio-none.c). `build` compiles a static mediagen (pure Go:
# SQLite is modernc.org/sqlite, so CGO_ENABLED=0) with -trimpath and the commit as its version.
# The runtime installs the libraries and the caption font on bookworm-slim (Debian's ffmpeg and
# espeak-ng alone would add about 400 MB), and runs as an unprivileged user. Where the bytes go:
# bench/README.md "Container image".
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
# /out/bin and /out/lib become /usr/local/bin and /usr/local/lib: the programs find the
# libraries at $ORIGIN/../lib. runtime-packages: the Debian packages of every other library they
# load (ldd resolves FFmpeg's own in /out/lib, which no package owns).
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
    ver=$(apt-cache show --no-all-versions ffmpeg | sed -n 's/^Version: //p'); \
    bin=$(MEDIAGEN_CACHE=/cache MEDIAGEN_FFMPEG_SHARED=1 MEDIAGEN_FFMPEG_VERSION="$ver" ensure-lean-ffmpeg.sh); \
    test -n "$bin"; mkdir -p /out/bin /out/lib; cp "$bin/ffmpeg" "$bin/ffprobe" /out/bin/; cp -P "$bin"/../lib/lib*.so.* /out/lib/; \
    ldd /out/bin/ffmpeg /out/bin/ffprobe | awk '/=> \//{print $3}' | grep -v '^/out/' | sort -u | \
      xargs -r readlink -f | xargs -r dpkg -S | cut -d: -f1 | sort -u >/out/runtime-packages; \
    cat /out/runtime-packages; /out/bin/ffmpeg -hide_banner -version | head -1; \
    rm -rf /cache /var/lib/apt/lists/*

# Debian's certificate authorities, without openssl and libssl (8 MB) that the ca-certificates
# package needs to make the bundle: mediagen is Go and reads only the bundle.
FROM ${BASE_IMAGE} AS certs
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null

# espeak-ng as Debian ships it, less two things the service never uses. The audio output:
# libpcaudio0 pulls in PulseAudio and ALSA (about 9 MB); the service has espeak-ng write WAV
# files only, so a libpcaudio.so.0 without a device takes its place. The dictionaries: the
# service speaks with the voice en (and its variants en+f3, en+m3), which reads en_dict and,
# for words in some other scripts, switches to that script's language — Armenian, Bengali,
# Devanagari, Georgian, Gujarati, Gurmukhi, Hangul and some other Asian scripts (ko), Kannada,
# Malayalam, Sinhala, Tamil, Telugu (found by speaking letters of every Unicode script with voice
# en and watching which dictionaries espeak-ng opens; deploy/image_test.go speaks them again in
# the image and fails on a missing one). The other 99 dictionaries (about 9.5 MB) are left out,
# and so are the documentation and speak-ng (the older command line, 0.5 MB).
# The GO_IMAGE is bookworm with gcc: the same Debian packages as BASE_IMAGE.
FROM ${GO_IMAGE} AS espeak
COPY deploy/image/pcaudio-none.c /tmp/
RUN set -eu; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends espeak-ng >/dev/null; \
    for p in espeak-ng libespeak-ng1 espeak-ng-data; do dpkg -L "$p"; done | grep -v -e '^/usr/share/' -e '^/usr/bin/speak-ng$' | \
      while read -r f; do if [ -f "$f" ] && [ ! -d "$f" ]; then echo "${f#/}"; fi; done >/tmp/files; \
    mkdir -p /out/root; tar -C / -cf - -T /tmp/files | tar -C /out/root -xf -; \
    data=$(dirname "$(find /out/root -name phontab)"); \
    find "$data" -name '*_dict' -printf '%f\n' | grep -vxE '(en|hy|bn|hi|ka|gu|pa|ko|kn|ml|si|ta|te)_dict' | \
      sed "s|^|$data/|" | xargs rm -f; \
    lib=$(dirname "$(find /out/root -name 'libespeak-ng.so.1')"); \
    gcc -shared -fPIC -O2 -s -Wall -Werror -Wl,-soname,libpcaudio.so.0 -o "$lib/libpcaudio.so.0" /tmp/pcaudio-none.c; \
    ls "$data"/*_dict; du -sh /out/root; rm -rf /var/lib/apt/lists/*

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
    apt-get install -y -qq --no-install-recommends fonts-dejavu-core libsonic0 \
      $(cat /tmp/runtime-packages) >/dev/null; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/* /tmp/runtime-packages /usr/share/doc /usr/share/man; \
    useradd --system --uid 10001 --user-group --home-dir /var/lib/mediagen --shell /usr/sbin/nologin mediagen; \
    mkdir -p /var/lib/mediagen; chown mediagen:mediagen /var/lib/mediagen; chmod 1777 /tmp
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=ffmpeg /out/bin/ /usr/local/bin/
COPY --from=ffmpeg /out/lib/ /usr/local/lib/
COPY --from=espeak /out/root/ /
COPY --from=build /out/mediagen /usr/local/bin/mediagen
# Every library the media tools load is here (a missing one fails the build, not the first
# task), and they run.
RUN set -eu; ldconfig; if ldd /usr/local/bin/ffmpeg /usr/local/bin/ffprobe /usr/bin/espeak-ng | grep 'not found'; then exit 1; fi; \
    ffmpeg -hide_banner -version | head -1; ffprobe -hide_banner -version | head -1; espeak-ng --version
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
