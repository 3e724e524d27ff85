#!/usr/bin/env bash
# Installs the official OpenAI Node SDK pinned by test/webhooks-sdk/package-lock.json (7.57.0,
# the first with webhook endpoint management) into a cache directory keyed by the lock file's
# hash, and prints that directory: TestWebhooksOpenAINodeSDK runs test/webhooks-sdk/webhooks.mjs
# with it. The videos test keeps its own pin (ensure-node-sdk.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-ci-cached.sh webhooks-sdk test/webhooks-sdk
