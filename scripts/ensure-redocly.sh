#!/usr/bin/env bash
# Installs Redocly CLI at the exact version test/redocly/package-lock.json pins (npm ci) into a
# cache directory keyed by the lock file's hash, and prints the path of its executable. make test
# lints docs/openapi.yaml and docs/admin-openapi.yaml with it (redocly.yaml holds the rules).
# Installs Node.js and npm from Debian when they are missing (npm-ci-cached.sh).
# Any failure exits non-zero, so under CI=true a missing linter fails the run instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/npm-ci-cached.sh redocly test/redocly)
bin="$dir/node_modules/.bin/redocly"
"$bin" --version >/dev/null 2>&1 || { echo "ensure-redocly: $bin does not run" >&2; exit 1; }
echo "$bin"
