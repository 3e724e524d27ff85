#!/usr/bin/env bash
# Builds a lean ffmpeg and ffprobe from the source of the FFmpeg version Debian installed (once:
# it is cached) and prints the directory that holds them; prints nothing when it cannot build
# them, and the caller goes on with Debian's binaries.
#
# Why: Debian's ffmpeg links 215 shared objects and is built with BIND_NOW, so every process
# start resolves every symbol of all of them first: 0.13 CPU-s per ffprobe call on the 2-core
# development machine, before any media is read. The tests start ffmpeg and ffprobe thousands
# of times (about 1,300 in cmd/mediagen alone). This build links FFmpeg's own libraries statically and only the external libraries
# the service uses (x264, x265, LAME, FreeType, libwebp, zlib) dynamically, and starts in about 0.01 s.
# The codecs, filters and formats in it are the ones the service and its tests use; everything
# it decodes and encodes, it does with the same FFmpeg and library code as Debian's binary
# (bench/README.md#the-lean-ffmpeg has the comparison and the measurement).
#
# The source comes through apt (`apt-get source`), which checks it against Debian's signed
# index. The result lives in ${MEDIAGEN_CACHE:-~/.cache/mediagen}/ffmpeg-lean-<version>-r<recipe>/bin.
# Set MEDIAGEN_LEAN_FFMPEG=0 to skip it.
#
# MEDIAGEN_FFMPEG_SHARED=1 builds FFmpeg's libraries as shared objects instead, in lib/ beside
# bin/ (the programs find them through a RUNPATH of $ORIGIN/../lib, so the directory can be
# copied anywhere), in a directory of its own (…-r<recipe>-shared). The container image uses it
# (Dockerfile): ffmpeg and ffprobe then share one copy of the libraries instead of linking
# about 9 MB each in. The tests keep the static build, which starts a little faster.
set -euo pipefail

log() { echo "ensure-lean-ffmpeg: $*" >&2; }
[ "${MEDIAGEN_LEAN_FFMPEG:-1}" = 0 ] && exit 0

# MEDIAGEN_FFMPEG_VERSION names the Debian version to build where Debian's ffmpeg is not
# installed (the Dockerfile's ffmpeg stage: apt's candidate version).
if [ -n "${MEDIAGEN_FFMPEG_VERSION:-}" ]; then
  ver=$MEDIAGEN_FFMPEG_VERSION
elif ! ver=$(dpkg-query -W -f='${Version}' ffmpeg 2>/dev/null) || [ -z "$ver" ]; then
  log "Debian's ffmpeg package is not installed; using ffmpeg from PATH"; exit 0
fi
cache="${MEDIAGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mediagen}"
# The version without its epoch names the directory ("7:5.1.9-0+deb12u1" → "5.1.9-0+deb12u1");
# the recipe's own revision is in the name too, so a changed recipe builds again.
recipe=3
shared=${MEDIAGEN_FFMPEG_SHARED:-0}
kind=""; [ "$shared" = 1 ] && kind=-shared
dir="$cache/ffmpeg-lean-${ver#*:}-r$recipe$kind"
if [ -x "$dir/bin/ffmpeg" ] && [ -x "$dir/bin/ffprobe" ] && "$dir/bin/ffprobe" -version >/dev/null 2>&1; then
  echo "$dir/bin"; exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    log "not root and no sudo: cannot install the build's packages; using Debian's ffmpeg"; exit 0
  fi
fi
command -v apt-get >/dev/null 2>&1 || { log "no apt-get; using ffmpeg from PATH"; exit 0; }

build() {
  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/mediagen-ffmpeg.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  log "building ffmpeg $ver without the libraries the service does not use (once, about 4 minutes on 2 cores)"

  export DEBIAN_FRONTEND=noninteractive
  # The external libraries are Debian's own: the same x264, x265, LAME, FreeType and libwebp as
  # the distribution's ffmpeg uses.
  local pkgs=(nasm pkg-config libx264-dev libx265-dev libmp3lame-dev libfreetype-dev libwebp-dev zlib1g-dev xz-utils patch make gcc)
  [ "$shared" = 1 ] && pkgs+=(patchelf)
  local need=()
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p"); done
  if [ ${#need[@]} -gt 0 ]; then
    if ! $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
      $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || return 1
    fi
  fi

  # apt's own source lists, as deb-src, in a private state directory: nothing is added to the
  # machine's apt configuration.
  mkdir -p "$work/apt/sources.d" "$work/apt/lists/partial" "$work/src"
  local found=0 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed 's/^Types: deb$/Types: deb-src/' "$f" >"$work/apt/sources.d/$(basename "$f")"; found=1
  done
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list >"$work/apt/sources.d/main.list"; found=1
  fi
  [ $found = 1 ] || { log "no apt sources found"; return 1; }
  local apt=(apt-get -qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/apt/sources.d"
    -o "Dir::State::Lists=$work/apt/lists" -o APT::Sandbox::User=root)
  "${apt[@]}" update >/dev/null || return 1
  (cd "$work/src" && "${apt[@]}" source --download-only "ffmpeg=$ver" >/dev/null) || return 1

  local up="${ver#*:}"; up="${up%-*}"
  tar -C "$work/src" -xf "$work/src/ffmpeg_$up.orig.tar.xz" || return 1
  tar -C "$work/src/ffmpeg-$up" -xf "$work/src"/ffmpeg_*.debian.tar.xz || return 1
  local s="$work/src/ffmpeg-$up"
  if [ -f "$s/debian/patches/series" ]; then
    local p
    while read -r p; do
      case "$p" in ''|'#'*) continue ;; esac
      patch -s -d "$s" -p1 <"$s/debian/patches/$p" || return 1
    done <"$s/debian/patches/series"
  fi

  # What the service and its tests use, and what ffmpeg inserts on its own (format and
  # resampling conversions, trims for -ss/-t; the buffer sources and sinks are always built).
  # A missing piece shows as a test that fails with "Unknown encoder", "No such filter" or
  # "Decoder not found", never as a silent change.
  local dec=h264,hevc,aac,aac_fixed,mp3,mp3float,mp2,mp2float,ac3,eac3,opus,vorbis,flac,alac
  dec+=,pcm_s16le,pcm_s16be,pcm_s24le,pcm_s32le,pcm_f32le,pcm_f64le,pcm_u8,pcm_alaw,pcm_mulaw
  dec+=,mjpeg,png,apng,webp,gif,bmp,tiff,rawvideo,mpeg4,vp8,vp9,prores,wrapped_avframe
  local enc=libx264,libx265,aac,libmp3lame,libwebp,libwebp_anim,mjpeg,png,pcm_s16le,pcm_s16be,pcm_f32le,rawvideo,wrapped_avframe
  local demux=mov,mp3,wav,aac,image2,image2pipe,image_jpeg_pipe,image_png_pipe,image_webp_pipe
  demux+=,image_gif_pipe,image_bmp_pipe,image_tiff_pipe
  demux+=,gif,rawvideo,concat,matroska,ogg,avi,h264,hevc,mjpeg,flac,data,ffmetadata
  local mux=mp4,mov,ipod,mp3,wav,image2,image2pipe,webp,null,rawvideo,adts,matroska,webm,h264,hevc,framemd5,md5
  local filt=aformat,format,anull,null,aresample,scale,setsar
  filt+=,setdar,setpts,asetpts,trim,atrim,fps,pad,overlay,drawtext,testsrc,testsrc2,color,sine,volume
  filt+=,anullsrc,nullsrc,life,loop,aloop,noise,split,asplit,select,aselect,pan,concat,apad,tpad
  filt+=,hflip,vflip,transpose,crop,fade,afade,amix,amerge,showinfo,copy,scale2ref,smptehdbars
  filt+=,smptebars,rgbtestsrc,aevalsrc,atempo,channelmap,showwaves
  local parse=h264,hevc,aac,mpegaudio,mjpeg,png,webp,gif,vp8,vp9,opus,vorbis,flac,ac3,bmp
  local bsf=h264_mp4toannexb,hevc_mp4toannexb,aac_adtstoasc,extract_extradata,null,vp9_superframe
  bsf+=,h264_metadata,hevc_metadata,dump_extradata

  # configure says nothing of a name in such a list that it does not know, so a misspelt one
  # would be a piece silently left out: each is checked against configure's own lists.
  local kind names list n bad=0
  for kind in decoder:$dec encoder:$enc demuxer:$demux muxer:$mux filter:$filt parser:$parse bsf:$bsf; do
    names=$(cd "$s" && ./configure --list-"${kind%%:*}"s | tr -s ' \t' '\n')
    list=${kind#*:}
    for n in ${list//,/ }; do
      grep -qx "$n" <<<"$names" || { log "no ${kind%%:*} named $n in FFmpeg $up"; bad=1; }
    done
  done
  [ $bad = 0 ] || return 1

  local link=(--disable-shared --enable-static)
  [ "$shared" = 1 ] && link=(--enable-shared --disable-static)
  (cd "$s" && ./configure --prefix="$work/out" --disable-doc --disable-ffplay --disable-debug \
      --disable-autodetect "${link[@]}" --enable-gpl \
      --enable-libx264 --enable-libx265 --enable-libmp3lame --enable-libfreetype --enable-libwebp --enable-zlib \
      --disable-everything --enable-protocol=file,pipe --enable-indev=lavfi \
      --enable-decoder="$dec" --enable-encoder="$enc" --enable-demuxer="$demux" \
      --enable-muxer="$mux" --enable-filter="$filt" --enable-parser="$parse" --enable-bsf="$bsf" \
      >"$work/configure.log" 2>&1) || { tail -20 "$work/configure.log" >&2; return 1; }

  (cd "$s" && make -j"$(nproc)" >"$work/make.log" 2>&1) || { tail -30 "$work/make.log" >&2; return 1; }
  (cd "$s" && make install >/dev/null 2>&1) || return 1

  mkdir -p "$cache"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/bin"
  cp "$work/out/bin/ffmpeg" "$work/out/bin/ffprobe" "$dir.tmp/bin/" || return 1
  if [ "$shared" = 1 ]; then
    # Only the versioned files and their soname links the programs load: no development links,
    # pkg-config files or headers. The RUNPATH is set here rather than through configure,
    # whose evaluation of its arguments would eat the $ of $ORIGIN.
    mkdir -p "$dir.tmp/lib" && cp -P "$work/out/lib"/lib*.so.* "$dir.tmp/lib/" || return 1
    patchelf --set-rpath '$ORIGIN/../lib' "$dir.tmp/bin/ffmpeg" "$dir.tmp/bin/ffprobe" || return 1
  fi
  # The same version string as Debian's, so a failure report names the FFmpeg it ran.
  "$dir.tmp/bin/ffmpeg" -hide_banner -version | head -1 >"$dir.tmp/VERSION"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  # Builds for an older Debian version or recipe are not used again (each kind keeps its own).
  local old
  for old in "$cache"/ffmpeg-lean-*; do
    [ "$old" = "$dir" ] && continue
    if [ "$shared" = 1 ]; then [[ "$old" == *-shared ]] || continue; else [[ "$old" == *-shared ]] && continue; fi
    rm -rf "$old"
  done
}

# build runs in an `if`, where bash ignores `set -e`: its steps that matter return on failure
# themselves, and what it left is checked here before anyone is told to use it.
if ! (build) || ! "$dir/bin/ffmpeg" -version >/dev/null 2>&1 || ! "$dir/bin/ffprobe" -version >/dev/null 2>&1; then
  log "building failed; using Debian's ffmpeg (set MEDIAGEN_LEAN_FFMPEG=0 to skip the attempt)"
  exit 0
fi
echo "$dir/bin"
