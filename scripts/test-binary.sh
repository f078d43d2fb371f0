#!/usr/bin/env bash
# Usage: scripts/test-binary.sh PACKAGE TARGET [ARGS...]
#
# Runs PACKAGE's test binary TARGET (an integration test's name, or `--tests` for every test binary
# of the package, its unit tests too) from the workspace's own test build, with ARGS (libtest's:
# `--ignored`, a filter, `--nocapture`, `--test-threads 1`). `make chaos` and `make test`'s cluster
# leg use this instead of `cargo test -p PACKAGE`, which resolves features for PACKAGE alone: serde,
# tokio and serde_json then get other features than in the workspace build, and everything above
# them (the AWS SDK, sqlx, hyper, ...) is compiled a second time, once per package so named. The
# build below is the one `cargo nextest run --workspace` made, so it only links what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/test-binary.sh PACKAGE TARGET|--tests [ARGS...]" >&2; exit 2; }
package=$1 target=$2
shift 2
manifest=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json, sys
name = sys.argv[1]
found = [p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == name]
print(found[0] if found else "")' "$package")
[ -n "$manifest" ] || { echo "test-binary: no package named $package in the workspace" >&2; exit 2; }
# Built first on its own, so a compile error stops here, shown as cargo shows it; the listing below
# then only reads what is built.
cargo test --workspace --no-run --quiet
mapfile -t binaries < <(cargo test --workspace --no-run --quiet --message-format=json |
  python3 -c 'import json, sys
manifest, target = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if message["manifest_path"] != manifest or not message["profile"]["test"]:
        continue
    if target == "--tests" or message["target"]["name"] == target:
        print(message["executable"])' "$manifest" "$target")
[ ${#binaries[@]} -gt 0 ] || { echo "test-binary: $package has no test binary $target" >&2; exit 2; }
for binary in "${binaries[@]}"; do
  echo "test-binary: $package $(basename "$binary") $*"
  # In the package's folder, as `cargo test` runs it.
  (cd "$(dirname "$manifest")" && "$binary" "$@")
done
