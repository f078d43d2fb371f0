#!/usr/bin/env bash
# Puts the rows the chaos tests of the last `make chaos` wrote
# (target/tmp/chaos/*.row, see testing/testkit/src/chaos_report.rs) under the
# table's header in bench/chaos.md. A scenario that did not run this time has
# no row: the table shows only what the last run measured.
set -euo pipefail
cd "$(dirname "$0")/.."
rows="${CARGO_TARGET_DIR:-target}/tmp/chaos"
out=bench/chaos.md
shopt -s nullglob
files=("$rows"/*.row)
if [ ${#files[@]} -eq 0 ]; then
  echo "no chaos rows under $rows: run make chaos first" >&2
  exit 2
fi
{
  echo "# make chaos, $(date -u +%Y-%m-%d), $(nproc) cores"
  echo
  echo "Written by scripts/chaos-table.sh from the rows the chaos tests of the last run left in $rows."
  echo
  echo "| scenario | runs | sent | lost | duplicated | recovered in | notes |"
  echo "|---|---|---|---|---|---|---|"
  cat "${files[@]}"
} > "$out"
echo "wrote $out (${#files[@]} scenarios)"
