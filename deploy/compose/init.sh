#!/usr/bin/env bash
# Once per stack (a later `up` finds both and changes nothing): the link-signing key every
# replica shares, readable by the image's user, and the bucket.
set -euo pipefail
key=/etc/mediagen/signing.key
if [ ! -s "$key" ]; then
  umask 077
  od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$key.tmp" && mv "$key.tmp" "$key"
  echo "init: made the link-signing key"
fi
chown 10001:10001 "$key" && chmod 0400 "$key"
# blob init waits (--db-wait) for MinIO to answer, and keeps a bucket that exists.
setpriv --reuid=10001 --regid=10001 --clear-groups mediagen admin blob init
