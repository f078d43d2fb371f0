#!/usr/bin/env bash
# Prints a directory to put in front of PATH for the offline AWS tools
# `make test` uses: cfn-lint, sam (aws-sam-cli) and cargo-lambda (with zig).
# Prints nothing when all three are on PATH already; otherwise installs them
# once into a private virtualenv, .cache/aws-tools (about 800 MB, a minute or two).
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v cfn-lint >/dev/null 2>&1 && command -v sam >/dev/null 2>&1 && command -v cargo-lambda >/dev/null 2>&1; then
  exit 0
fi
VENV=.cache/aws-tools
if [ ! -x "$VENV/bin/sam" ] || [ ! -x "$VENV/bin/cfn-lint" ] || [ ! -x "$VENV/bin/cargo-lambda" ]; then
  command -v python3 >/dev/null || { echo "python3 is missing: install it (apt-get install python3 python3-venv) for the template and Lambda checks" >&2; exit 1; }
  echo "installing cfn-lint, aws-sam-cli and cargo-lambda into $VENV..." >&2
  python3 -m venv "$VENV" >/dev/null || { echo "python3 -m venv failed: install python3-venv" >&2; exit 1; }
  "$VENV/bin/pip" install --quiet --disable-pip-version-check cfn-lint aws-sam-cli cargo-lambda >&2
fi
echo "$PWD/$VENV/bin"
