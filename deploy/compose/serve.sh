#!/usr/bin/env bash
# api and worker: serve with the stack's shared link-signing key (made by init.sh), read from
# the keys volume so it is never in the compose file or the environment of `docker inspect`.
set -euo pipefail
MEDIAGEN_SIGNING_KEY=$(tr -d '\n' </etc/mediagen/signing.key)
export MEDIAGEN_SIGNING_KEY
exec mediagen serve "$@"
