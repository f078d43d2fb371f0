#!/usr/bin/env bash
# cfn-lint on infra/template.yaml (the SAM template), offline. Installs
# cfn-lint into a private virtualenv under .cache/ when it is not on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v cfn-lint >/dev/null 2>&1; then
  LINT=cfn-lint
else
  VENV=.cache/cfn-lint
  if [ ! -x "$VENV/bin/cfn-lint" ]; then
    command -v python3 >/dev/null || { echo "python3 is missing: install it (apt-get install python3 python3-venv) to lint the template"; exit 1; }
    echo "installing cfn-lint into $VENV..."
    python3 -m venv "$VENV" >/dev/null || { echo "python3 -m venv failed: install python3-venv"; exit 1; }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check cfn-lint
  fi
  LINT="$VENV/bin/cfn-lint"
fi
"$LINT" infra/template.yaml
echo "infra/template.yaml: cfn-lint clean"
