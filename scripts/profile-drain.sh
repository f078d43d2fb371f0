#!/usr/bin/env bash
# A system-wide CPU profile of one drain (the drain benchmark's
# `--profile` mode): the drain process, redis-server and PostgreSQL,
# recorded only while the drain runs. Usage:
#   scripts/profile-drain.sh [consumers] [deployed]
# Writes target/perf-drain.data and prints the top symbols per process.
# Needs perf (Debian: linux-perf).
set -euo pipefail
consumers=${1:-2}
deployed=${2:-}
command -v perf >/dev/null || { echo "perf is missing: apt-get install -y linux-perf" >&2; exit 1; }
bench=$(cargo bench -p sluice-sink --bench drain --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -x "$bench" ] || { echo "the drain benchmark did not build" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/ctl"
data=${CARGO_TARGET_DIR:-target}/perf-drain.data
(cd crates/sink && PERF_CTL_FIFO="$dir/ctl" perf record -q -a -g -e cpu-clock -D -1 \
  --control "fifo:$dir/ctl" -o "../../$data" -- "$bench" --profile "$consumers" $deployed)
perf report -i "$data" --no-children --sort comm,sym --percent-limit 0.7 --stdio 2>/dev/null | grep -v '^$' | grep -v '^#' | grep '%' | head -60
