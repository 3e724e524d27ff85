#!/usr/bin/env bash
# toolcpu.sh runs a command with ffmpeg, ffprobe and espeak-ng wrapped by /usr/bin/time, and
# prints the CPU seconds they used: per tool, per kind of call, and per test (the test's name
# is read from the temporary directory in the call's arguments). It is how the CPU of the
# end-to-end tests was split between the media tools and the rest (bench/README.md "make test").
#
#   bench/toolcpu/toolcpu.sh go test -count=1 ./cmd/mediagen
#
# With TOOLCPU_LOG=FILE, every call (tool, user and system seconds, arguments) is also kept in
# FILE, for splitting the figures another way.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
shims=$(mktemp -d)
log="$shims/calls.log"
trap '[ -z "${TOOLCPU_LOG:-}" ] || cp "$log" "$TOOLCPU_LOG"; rm -rf "$shims"' EXIT
for tool in ffmpeg ffprobe espeak-ng; do
	real=$(command -v "$tool") || continue
	cat >"$shims/$tool" <<SHIM
#!/usr/bin/env bash
out=\$(mktemp)
/usr/bin/time -o "\$out" -f "%U %S" "$real" "\$@"; rc=\$?
echo "$tool \$(tail -1 "\$out") :: \$*" >>"$log"; rm -f "\$out"
exit \$rc
SHIM
	chmod +x "$shims/$tool"
done
touch "$log"
rc=0
PATH="$shims:$PATH" "$@" || rc=$?
echo "media tools' CPU (user+system seconds, calls):"
awk '{cpu[$1]+=$2+$3; n[$1]++} END {for (t in cpu) printf "  %-10s %8.1f s %6d calls\n", t, cpu[t], n[t]}' "$log"
echo "by kind of call:"
awk -F' :: ' '{split($1, f, " "); k=f[1]; a=$2
	if (a ~ /-version/) k=k" -version"; else if (a ~ /libx265/) k=k" encode x265"; else if (a ~ /libx264/) k=k" encode x264";
	else if (a ~ /mjpeg/) k=k" jpeg frame"; else if (a ~ /libmp3lame/) k=k" mp3"; else if (a ~ /-c copy/) k=k" cut"; else k=k" other"
	cpu[k]+=f[2]+f[3]; n[k]++} END {for (k in cpu) printf "%8.1f s %6d calls  %s\n", cpu[k], n[k], k}' "$log" | sort -rn
echo "by test (top 15):"
awk -F' :: ' '{split($1, f, " "); t="(no test directory)"; if (match($2, /\/Test[A-Za-z0-9_]+/)) t=substr($2, RSTART+1, RLENGTH-1)
	sub(/[0-9]+$/, "", t); cpu[t]+=f[2]+f[3]; n[t]++} END {for (t in cpu) printf "%8.1f s %6d calls  %s\n", cpu[t], n[t], t}' "$log" | sort -rn | head -15
exit $rc
