#!/usr/bin/env bash
# npm-ci-cached.sh NAME SRC: installs the npm packages SRC/package-lock.json pins (npm ci) into a
# cache directory keyed by the hash of SRC's package.json and lock file, and prints that
# directory. Installs Node.js and npm from Debian (apt-get, as root or through sudo) when they
# are missing. Any failure exits non-zero. Shared by ensure-node-sdk.sh and ensure-redocly.sh.
set -euo pipefail
name=$1 src=$2

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-$name: installing nodejs npm" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "ensure-$name: node or npm missing and not root (install nodejs and npm with apt-get)" >&2; exit 1
    fi
  fi
  command -v apt-get >/dev/null 2>&1 || { echo "ensure-$name: no apt-get; install nodejs and npm yourself" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

hash=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/mediagen/$name-$hash"
if [ ! -f "$dir/.done" ]; then
  mkdir -p "$(dirname "$dir")"
  # Built beside the final place and renamed into it, so a run cut short leaves no half install.
  tmp=$(mktemp -d "${dir}.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp "$src/package.json" "$src/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$tmp/.done"
  if ! mv -T "$tmp" "$dir" 2>/dev/null; then
    [ -f "$dir/.done" ] || { echo "ensure-$name: cannot place $dir" >&2; exit 1; }
  fi
fi
echo "$dir"
