#!/usr/bin/env bash
# Makes sure what `make run`, `make test` and `make bench` need is on this
# machine: cargo, and redis-server (installed with apt-get when missing).
# Tests and the demo start their own private redis-server on a free port;
# nothing here starts or touches a system Redis service.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs and re-run." >&2
  exit 1
fi

if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=""
  elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "redis-server is missing: run 'apt-get install -y redis-server' as root, then re-run." >&2
    exit 1
  fi
  echo "redis-server is missing; installing it with apt-get (Debian's redis-server package)..." >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
  command -v redis-server >/dev/null 2>&1 && exit 0
fi

echo "redis-server is missing: install your system's redis-server package (e.g. 'sudo apt-get install -y redis-server'), then re-run." >&2
exit 1
