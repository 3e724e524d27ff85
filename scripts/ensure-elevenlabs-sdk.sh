#!/usr/bin/env bash
# Installs the official ElevenLabs Node SDK pinned by test/elevenlabs-sdk/package-lock.json (npm
# ci) into a cache directory keyed by the lock file's hash, and prints that directory: its
# node_modules holds the SDK that TestElevenLabsNodeSDK runs test/elevenlabs-sdk/speech.mjs with.
# Installs Node.js and npm from Debian when they are missing (npm-ci-cached.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-ci-cached.sh elevenlabs-sdk test/elevenlabs-sdk
