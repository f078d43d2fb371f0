#!/usr/bin/env bash
# `sam build` of infra/template.yaml, as docs/deploy.md has a user run it (samconfig.toml's settings,
# rust-cargolambda, arm64), into target/sam-build so nothing lands in the work tree. Needs the
# aarch64-unknown-linux-gnu rustup target; without it this says so and stops, instead of letting
# cargo-lambda add the target to the shared toolchain by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  echo "sam build: skipped (the functions are arm64: rustup target add aarch64-unknown-linux-gnu to run it)"
  exit 0
fi
TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cd infra
SAM_CLI_TELEMETRY=0 sam build --build-dir "$TARGET_DIR/sam-build" --cache-dir "$TARGET_DIR/sam-cache"
echo "sam build: every function built for arm64 into $TARGET_DIR/sam-build"
