#!/usr/bin/env bash
# Install what a fresh machine lacks outside Python: a Valkey/Redis server binary for the cache
# (tests start their own private instance on a free loopback port; Fleet never uses the system's).
set -euo pipefail
if command -v valkey-server >/dev/null 2>&1 || command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing redis-server (for Fleet's private cache server)…"
  (apt-get install -y -qq redis-server >/dev/null 2>&1) || \
    (apt-get update -qq >/dev/null && apt-get install -y -qq redis-server >/dev/null)
  # Debian starts a system service on 6379; Fleet never uses it (it runs its own on a free port).
else
  echo "note: no valkey-server/redis-server found and cannot install it; Fleet will run with the cache off" >&2
fi
