#!/usr/bin/env bash
# compare.sh runs the same media work with Debian's ffmpeg and with the lean build that
# `make test` uses (scripts/ensure-lean-ffmpeg.sh), and prints, per step, whether the two
# wrote the same bytes (or, for ffprobe, the same description), then what a process start
# costs with each. It is the check behind "the lean build does what Debian's does, faster to
# start" (bench/README.md#lean-ffmpeg).
#
#   bench/leanffmpeg/compare.sh              # builds the lean binaries first when not cached
#   bench/leanffmpeg/compare.sh /path/to/bin # or compares the ffmpeg/ffprobe in that directory
#   bench/leanffmpeg/compare.sh -q /path/to/bin # only the comparison, no timing (make test)
#
# It exits non-zero when any output differs: `make test` runs it before the tests, so they never
# run on a build that behaves differently from the ffmpeg the service is deployed with.
#
# The encodes pass -fflags +bitexact (and -map_metadata -1), so the encoder's version string
# is the only thing that could differ; both binaries are the same FFmpeg version.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quiet=0; [ "${1:-}" = -q ] && { quiet=1; shift; }
lean=${1:-$("$here/../../scripts/ensure-lean-ffmpeg.sh")}
[ -n "$lean" ] && [ -x "$lean/ffmpeg" ] || { echo "no lean ffmpeg to compare" >&2; exit 1; }
sys_ffmpeg=/usr/bin/ffmpeg sys_ffprobe=/usr/bin/ffprobe
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf

# Each step: a name, then ffmpeg's arguments with OUT for the output file. The inputs are
# made by the first steps (with each binary's own earlier output).
steps=(
  "render 640x360 x264 + aac|-f lavfi -i testsrc2=size=640x360:rate=24:duration=2 -f lavfi -i sine=frequency=440:beep_factor=4:sample_rate=48000:duration=2 -filter_complex [0:v]drawtext=fontfile=$font:text=hello:fontsize=40:x=20:y=20[v] -map [v] -map 1:a -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -threads 1 -map_metadata -1 -fflags +bitexact -movflags +faststart OUT.mp4"
  "enhance to 720p x265 10-bit|-i IN:render.mp4 -vf scale=w=-2:h=720:flags=lanczos,setsar=1,fps=fps=30,format=pix_fmts=yuv420p10le -c:v libx265 -preset ultrafast -x265-params log-level=error:pools=1:frame-threads=1 -c:a copy -threads 1 -map_metadata -1 -fflags +bitexact OUT.mp4"
  "first frame jpeg|-i IN:render.mp4 -map 0:v:0 -an -frames:v 1 -c:v mjpeg -q:v 2 -map_metadata -1 -fflags +bitexact -f image2 -update 1 OUT.jpg"
  "speech mp3|-f lavfi -i sine=frequency=220:duration=2 -c:a libmp3lame -b:a 128k -map_metadata -1 -fflags +bitexact OUT.mp3"
  "fit image png|-i IN:frame.jpg -vf scale=w=640:h=640:force_original_aspect_ratio=decrease,pad=w=640:h=640:x=(ow-iw)/2:y=(oh-ih)/2:color=black -frames:v 1 -map_metadata -1 -fflags +bitexact OUT.png"
  "trim by stream copy|-i IN:render.mp4 -t 1 -c copy -map_metadata -1 -fflags +bitexact OUT.mp4"
  "webp image|-f lavfi -i color=c=green:s=40x30 -frames:v 1 -map_metadata -1 -fflags +bitexact OUT.webp"
)
names=(render enhance frame speech fit trim webp)

same=0 differ=0
for i in "${!steps[@]}"; do
  label=${steps[$i]%%|*} args=${steps[$i]#*|} name=${names[$i]}
  for side in sys lean; do
    bin=$sys_ffmpeg; [ $side = lean ] && bin=$lean/ffmpeg
    mkdir -p "$work/$side"
    a=${args//IN:/$work/$side/}
    a=${a//OUT./$work/$side/$name.}
    # shellcheck disable=SC2086 # the step's arguments are split on spaces on purpose
    "$bin" -hide_banner -loglevel error -y $a
  done
  f=$(cd "$work/sys" && ls "$name".*)
  if cmp -s "$work/sys/$f" "$work/lean/$f"; then r="same bytes"; same=$((same+1)); else r="DIFFERENT"; differ=$((differ+1)); fi
  [ $quiet = 1 ] && [ "$r" != DIFFERENT ] || printf '%-30s %-10s %s\n' "$label" "$r" "$(stat -c %s "$work/sys/$f") bytes"
done

for f in render.mp4 enhance.mp4 speech.mp3 frame.jpg; do
  for side in sys lean; do
    bin=$sys_ffprobe; [ $side = lean ] && bin=$lean/ffprobe
    "$bin" -hide_banner -loglevel error -print_format json -show_format -show_streams "$work/$side/$f" |
      sed "s#$work/$side/##" >"$work/$side.$f.json"
  done
  if cmp -s "$work/sys.$f.json" "$work/lean.$f.json"; then r="same description"; same=$((same+1)); else r="DIFFERENT"; differ=$((differ+1)); { diff "$work/sys.$f.json" "$work/lean.$f.json" || true; } | head -10; fi
  [ $quiet = 1 ] && [ "$r" != DIFFERENT ] || printf '%-30s %s\n' "ffprobe $f" "$r"
done
if [ $quiet = 1 ]; then
  echo "lean ffmpeg: $same outputs the same as Debian's, $differ different"
  [ "$differ" = 0 ]; exit
fi

# A process start: the CPU of 20 `ffprobe -version` runs, per run.
startcpu() {
  local bin=$1 t
  t=$( { /usr/bin/time -f "%U %S" bash -c "for i in \$(seq 20); do '$bin' -version >/dev/null; done"; } 2>&1 | tail -1)
  awk -v t="$t" 'BEGIN {split(t, f, " "); printf "%.3f", (f[1]+f[2])/20}'
}
echo "ffprobe start (CPU-s per call, 20 calls): Debian $(startcpu $sys_ffprobe), lean $(startcpu "$lean/ffprobe")"
echo "shared objects loaded: Debian $(ldd $sys_ffprobe | wc -l), lean $(ldd "$lean/ffprobe" | wc -l)"
echo "$same same, $differ different"
[ "$differ" = 0 ]
