#!/usr/bin/env bash
# Prints what to put in front of PATH for the offline AWS tools `make check-aws` and `make package`
# use: cfn-lint, sam (aws-sam-cli) and cargo-lambda (with zig) from a private virtualenv,
# .cache/aws-tools (about 800 MB, a minute or two, once), the AWS CLI (awscli, v1) from another,
# .cache/aws-cli, and cfn-guard built from crates.io into .cache/cargo-tools (a few minutes, once).
# Prints nothing when all five are on PATH already; when one cannot be installed, says in one line
# what is missing and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
have() { command -v "$1" >/dev/null 2>&1; }
if have cfn-lint && have sam && have cargo-lambda && have cfn-guard && have aws; then
  exit 0
fi
dirs=()

VENV=.cache/aws-tools
if ! { have cfn-lint && have sam && have cargo-lambda; }; then
  if [ ! -x "$VENV/bin/sam" ] || [ ! -x "$VENV/bin/cfn-lint" ] || [ ! -x "$VENV/bin/cargo-lambda" ]; then
    have python3 || { echo "python3 is missing: install it (apt-get install python3 python3-venv) for cfn-lint, sam and cargo-lambda" >&2; exit 1; }
    echo "installing cfn-lint, aws-sam-cli and cargo-lambda into $VENV..." >&2
    python3 -m venv "$VENV" >/dev/null || { echo "python3 -m venv failed: install python3-venv" >&2; exit 1; }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check cfn-lint aws-sam-cli cargo-lambda >&2 \
      || { echo "pip install cfn-lint aws-sam-cli cargo-lambda failed (PyPI unreachable?)" >&2; exit 1; }
  fi
  dirs+=("$PWD/$VENV/bin")
fi

# The AWS CLI in a virtualenv of its own: awscli pins botocore to one version, which sam's boto3
# need not accept.
CLI_VENV=.cache/aws-cli
if ! have aws; then
  if [ ! -x "$CLI_VENV/bin/aws" ]; then
    have python3 || { echo "python3 is missing: install it (apt-get install python3 python3-venv) for the AWS CLI" >&2; exit 1; }
    echo "installing the AWS CLI (awscli) into $CLI_VENV..." >&2
    python3 -m venv "$CLI_VENV" >/dev/null || { echo "python3 -m venv failed: install python3-venv" >&2; exit 1; }
    "$CLI_VENV/bin/pip" install --quiet --disable-pip-version-check awscli >&2 \
      || { echo "pip install awscli failed (PyPI unreachable?)" >&2; exit 1; }
  fi
  dirs+=("$PWD/$CLI_VENV/bin")
fi

# cfn-guard is a Rust crate: built once, pinned so the rules mean the same everywhere.
GUARD_VERSION=3.2.1
CARGO_TOOLS=.cache/cargo-tools
if ! have cfn-guard; then
  if [ ! -x "$CARGO_TOOLS/bin/cfn-guard" ]; then
    have cargo || { echo "cargo is missing: cfn-guard is built with it (https://rustup.rs)" >&2; exit 1; }
    echo "building cfn-guard $GUARD_VERSION into $CARGO_TOOLS (a few minutes, once)..." >&2
    cargo install --quiet --locked cfn-guard --version "$GUARD_VERSION" --root "$CARGO_TOOLS" >&2 \
      || { echo "cargo install cfn-guard $GUARD_VERSION failed (crates.io unreachable?)" >&2; exit 1; }
  fi
  dirs+=("$PWD/$CARGO_TOOLS/bin")
fi
(IFS=:; echo "${dirs[*]}")
