#!/usr/bin/env bash
# Synthesizes infra/cdk (the CDK app that includes infra/template.yaml) offline and
# checks it: `npm ci` in infra/cdk when node_modules is missing or older than
# package-lock.json, then build (types generated from the template, tsc), the app's
# tests (node:assert), `cdk synth` without the CLI (node dist/bin/app.js, no AWS
# account, no network), and tools/check-synth.js: the synthesized template must carry
# every parameter, condition, resource, Fn::ForEach loop and output of
# infra/template.yaml, its Globals, and its Transforms in order. When cfn-lint is on
# PATH it also lints the synthesized template (which runs the SAM transform locally).
set -euo pipefail
cd "$(dirname "$0")/../infra/cdk"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "cdk-synth: node/npm is missing: install Node.js 20 or later with npm (e.g. 'apt-get install -y nodejs npm'), then re-run." >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "cdk-synth: node $(node --version) is too old: infra/cdk needs Node.js 20 or later." >&2
  exit 1
fi

# node_modules is stale when the lockfile it was installed from is not the one checked in.
stamp=node_modules/.sluice-package-lock.json
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "cdk-synth: npm ci (infra/cdk)..." >&2
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  cp package-lock.json "$stamp"
fi

rm -rf cdk.out
npm run --silent build
node dist/test/sluice.test.js
node dist/bin/app.js
# cfn-lint's YAML reader, when there is one, cross-checks tools/cfn-yaml.js.
decoded=$(mktemp)
trap 'rm -f "$decoded"' EXIT
if python3 -c 'import cfnlint.decode' >/dev/null 2>&1 &&
  python3 - "${SLUICE_TEMPLATE:-../template.yaml}" "$decoded" <<'PY'
import json, sys
from cfnlint.decode import decode
template, matches = decode(sys.argv[1])
if matches:
    sys.exit(1)
json.dump(template, open(sys.argv[2], "w"))
PY
then
  SLUICE_DECODED=$decoded node tools/check-synth.js
else
  node tools/check-synth.js
fi
if command -v cfn-lint >/dev/null 2>&1; then
  cfn-lint -- cdk.out/*.template.json
  echo "cdk-synth: cfn-lint accepts the synthesized template (SAM transform run locally)"
else
  echo "cdk-synth: cfn-lint is not on PATH: the synthesized template was not linted"
fi
