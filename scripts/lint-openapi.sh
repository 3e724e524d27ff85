#!/usr/bin/env bash
# Lints docs/openapi.yaml and docs/admin-openapi.yaml with Redocly CLI, an independent OpenAPI
# linter, at the version test/redocly pins (installed by scripts/ensure-redocly.sh), with the
# rules of test/redocly/redocly.yaml: every problem is an error. It fails when the CLI cannot be
# installed, so CI never passes without the lint.
set -euo pipefail
cd "$(dirname "$0")/.."
redocly=$(scripts/ensure-redocly.sh)
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
# Node.js 20 makes the CLI print a deprecation box on every run; the lint's own lines are kept.
"$redocly" lint --config test/redocly/redocly.yaml docs/openapi.yaml docs/admin-openapi.yaml 2>&1 \
  | grep -v -e '[║╔╚]' -e '^$'
