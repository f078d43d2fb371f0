#!/usr/bin/env bash
# `make chaos`: the ignored long chaos scenarios (see the Makefile), from the workspace's test build
# (scripts/test-binary.sh), then bench/chaos.md from the rows they leave (scripts/chaos-table.sh).
#
# Two lanes side by side, then load_held alone. Most of a scenario's time is waiting, not work: a
# killed flush's 60 s lock lease (sheet_crash), outages of 3 to 20 s (redis_restart), appends held
# past sluice's 30 s timeout (upstream_faults), so one after another they left both cores idle for
# most of 14 minutes. Each scenario starts its own redis-servers, sandboxes and sluice dev on free
# ports, as `make test` runs their short versions beside the rest of the suite. load_held runs alone:
# it measures ingest's ceiling first and then holds it there, which a neighbour would shift.
#
# A lane stops at its first failing scenario; the other lane still finishes, its output follows, and
# the run fails. The table is written only when every scenario passed.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf "${CARGO_TARGET_DIR:-target}/tmp/chaos"
# The build once, before the lanes: a compile error shows here as cargo shows it.
cargo test --workspace --no-run --quiet

run() {
  local package=$1 filter=$2
  shift 2
  scripts/test-binary.sh "$package" integration --ignored --nocapture "$filter" "$@"
}

lane_a() {
  run sluice crash_restart:: &&
    run sluice cluster_failover:: &&
    run sluice abuse:: &&
    run sluice-pipeline sheet_edits_seeded::
}

lane_b() {
  run sluice redis_restart:: --test-threads 1 &&
    run sluice sheet_crash:: &&
    run sluice upstream_faults::
}

lane_b_log=$(mktemp)
trap 'rm -f "$lane_b_log"' EXIT
lane_b >"$lane_b_log" 2>&1 &
lane_b_pid=$!
status_a=0
lane_a || status_a=$?
status_b=0
wait "$lane_b_pid" || status_b=$?
echo "chaos: the second lane (redis_restart, sheet_crash, upstream_faults), run beside the first:"
cat "$lane_b_log"
if [ "$status_a" -ne 0 ] || [ "$status_b" -ne 0 ]; then
  echo "chaos: FAILED (first lane exit $status_a, second lane exit $status_b; see above)" >&2
  exit 1
fi
run sluice load_held::
scripts/chaos-table.sh
