#!/usr/bin/env bash
# Installs Redocly CLI at the exact version test/redocly/package-lock.json pins (npm ci) into a
# cache directory keyed by the lock file's hash, and prints the path of its executable. make test
# lints docs/openapi.yaml and docs/admin-openapi.yaml with it (redocly.yaml holds the rules).
# Installs Node.js and npm from Debian (apt-get, as root or through sudo) when they are missing.
# Any failure exits non-zero, so under CI=true a missing linter fails the run instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
src=test/redocly

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ensure-redocly: installing nodejs npm" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "ensure-redocly: node or npm missing and not root (install nodejs and npm with apt-get)" >&2; exit 1
    fi
  fi
  command -v apt-get >/dev/null 2>&1 || { echo "ensure-redocly: no apt-get; install nodejs and npm yourself" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

hash=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/mediagen/redocly-$hash"
if [ ! -f "$dir/.done" ]; then
  mkdir -p "$(dirname "$dir")"
  # Built beside the final place and renamed into it, so a run cut short leaves no half install.
  tmp=$(mktemp -d "${dir}.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp "$src/package.json" "$src/package-lock.json" "$tmp/"
  (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$tmp/.done"
  if ! mv -T "$tmp" "$dir" 2>/dev/null; then
    [ -f "$dir/.done" ] || { echo "ensure-redocly: cannot place $dir" >&2; exit 1; }
  fi
fi
bin="$dir/node_modules/.bin/redocly"
"$bin" --version >/dev/null 2>&1 || { echo "ensure-redocly: $bin does not run" >&2; exit 1; }
echo "$bin"
