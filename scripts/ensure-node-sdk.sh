#!/usr/bin/env bash
# Installs the official OpenAI Node SDK pinned by test/node-sdk/package-lock.json (npm ci) into
# a cache directory keyed by the lock file's hash, and prints that directory: its node_modules
# holds the SDK that TestOpenAINodeSDK runs test/node-sdk/videos.mjs with. Installs Node.js and
# npm from Debian (apt-get, as root or through sudo) when they are missing (npm-ci-cached.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-ci-cached.sh node-sdk test/node-sdk
