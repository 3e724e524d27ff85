#!/usr/bin/env bash
# Installs the official Runway Node SDK pinned by test/runway-sdk/package-lock.json (npm ci)
# into a cache directory keyed by the lock file's hash, and prints that directory: its
# node_modules holds the SDK that TestRunwayNodeSDK runs test/runway-sdk/tasks.mjs with.
# Installs Node.js and npm from Debian when they are missing (npm-ci-cached.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-ci-cached.sh runway-sdk test/runway-sdk
