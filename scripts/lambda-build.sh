#!/usr/bin/env bash
# `cargo lambda build --release` of every function in functions/, for
# x86_64, and for arm64 (what the template deploys) when the
# aarch64-unknown-linux-gnu target is installed (rustup target add
# aarch64-unknown-linux-gnu). Checks that each function's bootstrap exists.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi
packages=()
binaries=()
for manifest in functions/*/Cargo.toml; do
  name=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$manifest" | head -1)
  packages+=(-p "$name")
  binaries+=("$name")
done
targets=(--x86-64)
if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  targets+=(--arm64)
else
  echo "arm64: skipped (rustup target add aarch64-unknown-linux-gnu to build it too)"
fi
TARGET_DIR=${CARGO_TARGET_DIR:-target}
for target in "${targets[@]}"; do
  cargo lambda build --release --quiet "$target" "${packages[@]}"
  for binary in "${binaries[@]}"; do
    [ -x "$TARGET_DIR/lambda/$binary/bootstrap" ] || { echo "no bootstrap for $binary ($target)"; exit 1; }
  done
  echo "cargo lambda build --release $target: ${#binaries[@]} functions"
done
