#!/usr/bin/env bash
# `sam build` of infra/template.yaml as docs/deploy.md has a user run it: from infra/, with
# samconfig.toml's settings (the beta rust-cargolambda builder, SAM's build cache off), into SAM's default
# infra/.aws-sam/build, so that `sam deploy` afterwards deploys what was built. For arm64 (the
# template's default Architecture) when the aarch64-unknown-linux-gnu rustup target is installed;
# otherwise for x86_64 (--parameter-overrides Architecture=x86_64), which the stack must then be
# deployed with too. Never adds a rustup target itself.
#
# CARGO_TARGET_DIR is unset for sam build: SAM's Rust builder copies target/lambda/<bin>/bootstrap,
# and aws-lambda-builders releases without its shared-target change (aws/aws-lambda-builders#901)
# look for it under the workspace's own target/ whatever cargo was told.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi
overrides=()
if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  architecture=arm64
else
  architecture=x86_64
  overrides=(--parameter-overrides Architecture=x86_64)
  echo "sam build: for x86_64, no aarch64-unknown-linux-gnu rustup target; deploy with --parameter-overrides Architecture=x86_64"
fi
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  echo "sam build: CARGO_TARGET_DIR=$CARGO_TARGET_DIR unset for sam build, which builds into target/ of the workspace"
fi
cd infra
env -u CARGO_TARGET_DIR SAM_CLI_TELEMETRY=0 sam build "${overrides[@]}"
echo "sam build: every function built for $architecture into infra/.aws-sam/build, which sam deploy deploys"
