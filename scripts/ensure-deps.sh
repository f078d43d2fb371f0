#!/usr/bin/env bash
# Makes sure what `make run`, `make test` and `make bench` need is on this
# machine: cargo, redis-server and PostgreSQL's server binaries (each
# installed with apt-get when missing). Tests and the demo start their own
# private redis-server (and the tests their own PostgreSQL) on a free port;
# nothing here starts or touches a system service.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs and re-run." >&2
  exit 1
fi

have_redis() { command -v redis-server >/dev/null 2>&1; }
have_postgres() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }

missing=()
have_redis || missing+=(redis-server)
have_postgres || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=""
  elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "${missing[*]} missing: run 'apt-get install -y ${missing[*]}' as root, then re-run." >&2
    exit 1
  fi
  echo "${missing[*]} missing; installing with apt-get (Debian's packages)..." >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  have_redis && have_postgres && exit 0
fi

echo "${missing[*]} missing: install your system's packages (e.g. 'sudo apt-get install -y ${missing[*]}'), then re-run." >&2
exit 1
