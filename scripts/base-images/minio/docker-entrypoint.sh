#!/bin/sh
# As the official image's: `server /data` means `minio server /data`.
set -e
if [ "${1}" != "minio" ] && [ "${1#-}" = "$1" ] && ! command -v "$1" >/dev/null 2>&1; then set -- minio "$@"; fi
if [ "${1#-}" != "$1" ]; then set -- minio "$@"; fi
exec "$@"
