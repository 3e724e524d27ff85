#!/usr/bin/env bash
# Finds promtool (the checker of Prometheus rule files) or installs it, and prints its path.
# `make test` runs `promtool check rules` and `promtool test rules` over deploy/prometheus with it.
# PROMTOOL names a binary to use; else promtool on PATH; else Debian's `prometheus` package,
# which ships /usr/bin/promtool, is installed with apt-get (as root or through sudo). The
# package's own service is not started (policy-rc.d refuses it during the install).
# Under CI=true any failure is fatal; otherwise the script warns, prints nothing and the rule
# tests are skipped.
set -uo pipefail

log() { echo "ensure-promtool: $*" >&2; }
fail() {
  log "$*"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  log "the Prometheus rule tests will be skipped (they never skip under CI=true)"
  exit 0
}

if [ -n "${PROMTOOL:-}" ]; then
  [ -x "$PROMTOOL" ] || fail "PROMTOOL=$PROMTOOL is not an executable"
  echo "$PROMTOOL"; exit 0
fi
if p=$(command -v promtool 2>/dev/null); then echo "$p"; exit 0; fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "promtool missing and not root (apt-get install prometheus)"
  sudo="sudo"
fi
command -v apt-get >/dev/null 2>&1 || fail "no promtool and no apt-get: install Prometheus's promtool and set PROMTOOL"
log "installing Debian's prometheus package for its promtool"
export DEBIAN_FRONTEND=noninteractive
# Refuse service starts while the package installs: only the promtool binary is wanted.
policy=/usr/sbin/policy-rc.d
added=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && added=1
fi
ok=1
$sudo apt-get update -qq >&2 || ok=""
[ -n "$ok" ] && { $sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null || ok=""; }
[ -n "$added" ] && $sudo rm -f "$policy"
[ -n "$ok" ] || fail "apt-get install prometheus failed"
p=$(command -v promtool 2>/dev/null) || fail "the prometheus package installed no promtool"
echo "$p"
