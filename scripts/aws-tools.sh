#!/usr/bin/env bash
# Prints what to put in front of PATH for the offline AWS tools `make check-aws` and `make package`
# use: cfn-lint, sam (aws-sam-cli) and cargo-lambda (with zig) from a private virtualenv (about
# 800 MB, a minute or two), the AWS CLI (awscli, v1) from another, and cfn-guard built from
# crates.io (about 4 minutes): each pinned, installed once into the tool cache every checkout
# shares (scripts/tool-cache.sh). Prints nothing when all five are on PATH already; when one cannot
# be installed, says in one line what is missing and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
have() { command -v "$1" >/dev/null 2>&1; }
if have cfn-lint && have sam && have cargo-lambda && have cfn-guard && have aws; then
  exit 0
fi
dirs=()
# shellcheck source=scripts/tool-cache.sh
. scripts/tool-cache.sh

if ! { have cfn-lint && have sam && have cargo-lambda; }; then
  dirs+=("$(venv_tool aws-tools-sam1.170.0-lint1.58.0-lambda1.9.2 sam \
    aws-sam-cli==1.170.0 cfn-lint==1.58.0 cargo-lambda==1.9.2)") || exit 1
fi

# The AWS CLI in a virtualenv of its own: awscli pins botocore to one version, which sam's boto3
# need not accept.
if ! have aws; then
  dirs+=("$(venv_tool awscli-1.46.3 aws awscli==1.46.3)") || exit 1
fi

# cfn-guard is a Rust crate: pinned, so the rules mean the same everywhere.
if ! have cfn-guard; then
  dirs+=("$(cargo_tool cfn-guard 3.2.1)") || exit 1
fi
(IFS=:; echo "${dirs[*]}")
