#!/usr/bin/env bash
# The SAM template, offline: cfn-lint, then `sam validate --lint` (which
# also runs SAM's own transform checks). Tools from scripts/aws-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi
cfn-lint infra/template.yaml
# No AWS account is needed: validate --lint reads only the file. The region
# is one the template's resources exist in; telemetry stays off.
SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 \
  sam validate --lint --template-file infra/template.yaml >/dev/null
echo "infra/template.yaml: cfn-lint and sam validate --lint clean"
