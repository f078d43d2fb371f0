#!/usr/bin/env bash
# `make lint`'s supply-chain check: each committed lockfile (Cargo.lock, fuzz/Cargo.lock) against
# the RustSec advisory database with cargo-audit. Fails on any advisory .cargo/audit.toml does not
# ignore (each ignore has its reason beside it there), informational ones (unmaintained, unsound)
# included, and says so in one last line naming the advisories.
#
# The database: SLUICE_ADVISORY_DB when set (a folder of advisories, a git checkout or plain files
# such as ../shared/advisory-db, read offline: cargo audit --db … --no-fetch); else
# ../shared/advisory-db beside this checkout when it is there (.ci/run also looks beside the
# repository a CI clone was made from); else the current database, fetched from GitHub into
# ~/.cargo/advisory-db. Offline, yanked crates are not checked (that needs the live crates.io index).
#
# Also proves the check can fail, so a database that loads nothing or a setting that turns the
# check off is caught: each lockfile under scripts/advisory-cases/ must fail it, naming the
# advisory the file is named after.
#
# cargo-audit, pinned and without its binary-scanning feature (unused here, and syn is slow to build), is
# built from crates.io into the tool cache every checkout shares (scripts/tool-cache.sh) when it is not
# on PATH: 8 min on a busy 2-core machine, once.
#
# Usage: scripts/advisory-check.sh [LOCKFILE...]   (default: the committed lockfiles and the cases)
set -euo pipefail
lockfiles=()
for f in "$@"; do lockfiles+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
cd "$(dirname "$0")/.."

AUDIT_VERSION=0.22.2
if ! cargo audit --version >/dev/null 2>&1; then
  # shellcheck source=scripts/tool-cache.sh
  . scripts/tool-cache.sh
  bin=$(cargo_tool cargo-audit "$AUDIT_VERSION" --no-default-features) || exit 1
  export PATH="$bin:$PATH"
fi

db="${SLUICE_ADVISORY_DB:-}"
if [ -z "$db" ] && [ -d ../shared/advisory-db/crates ]; then db=../shared/advisory-db; fi
if [ -n "$db" ]; then
  [ -d "$db/crates" ] || { echo "advisory check: SLUICE_ADVISORY_DB=$db is not a RustSec advisory database (no crates/ in it)" >&2; exit 1; }
  source_args=(--db "$db" --no-fetch --no-yanked)
  source_name="$db (offline)"
else
  source_args=()
  source_name="the RustSec database fetched from GitHub"
fi

# Runs cargo-audit on one lockfile: its report in `report`, what it found in `ids` (advisory ids,
# and crate@version for a yanked crate).
audit() {
  local rc
  report=$(cargo audit --color never "${source_args[@]}" --file "$1" 2>&1) && rc=0 || rc=$?
  ids=$(awk '/^Crate:/ { crate = $2 } /^Version:/ { version = $2 }
             /^ID:/ { print $2 } /^Warning:/ && $2 == "yanked" { print crate "@" version " (yanked)" }' \
          <<<"$report" | sort -u | paste -sd' ' || true)
  return $rc
}
# The first error line of a report that found nothing (a database that would not load or fetch).
why() { grep -m1 '^error' <<<"$report" || tail -1 <<<"$report"; }
cannot_check() {
  echo "$report"
  echo "advisory check: cargo audit could not check $1 against $source_name: $(why)" >&2
  exit 1
}

if [ ${#lockfiles[@]} -eq 0 ]; then
  # The cases first: a check that cannot fail proves nothing.
  for case in scripts/advisory-cases/*.lock; do
    expected=$(basename "$case" .lock)
    if audit "$case"; then
      echo "$report"
      echo "advisory check: broken: $case passed, but it must fail on $expected (database $source_name)" >&2
      exit 1
    elif [ -z "$ids" ]; then
      cannot_check "$case"
    elif [[ " $ids " != *" $expected "* ]]; then
      echo "$report"
      echo "advisory check: broken: $case failed without naming $expected (database $source_name; see above)" >&2
      exit 1
    fi
  done
  lockfiles=(Cargo.lock fuzz/Cargo.lock)
fi

failed=()
for lock in "${lockfiles[@]}"; do
  if audit "$lock"; then
    continue
  fi
  [ -n "$ids" ] || cannot_check "${lock#"$PWD"/}"
  echo "$report"
  failed+=("${lock#"$PWD"/}: $ids")
done
if [ ${#failed[@]} -gt 0 ]; then
  msg=$(printf '%s; ' "${failed[@]}")
  echo "advisory check FAILED: ${msg%; } (update each crate to a patched version, or ignore the id in .cargo/audit.toml with the reason beside it)" >&2
  exit 1
fi
echo "advisory check: ${#lockfiles[@]} lockfiles, no advisories outside .cargo/audit.toml ($source_name)"
