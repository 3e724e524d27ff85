#!/usr/bin/env bash
# Installs the media tools the service and its tests run (ffmpeg, ffprobe, espeak-ng, the
# DejaVu font used to draw captions) when any is missing. Debian/Ubuntu: apt-get, as root or
# through sudo.
set -euo pipefail

missing=()
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v ffprobe >/dev/null 2>&1 || missing+=(ffmpeg)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
for p in "$@"; do
  case "$p" in
    chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
    systemd-analyze) command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd) ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

# shellcheck disable=SC2207
pkgs=($(printf '%s\n' "${missing[@]}" | sort -u))
echo "ensure-tools: installing ${pkgs[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-tools: ${pkgs[*]} missing and not root (install them with apt-get)" >&2; exit 1
  fi
fi
command -v apt-get >/dev/null 2>&1 || { echo "ensure-tools: no apt-get; install ${pkgs[*]} yourself" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
