#!/usr/bin/env bash
# Validates state machine definitions with asl-validator (npm), the
# validator the AWS toolkits use:
# - every statemachine/*.asl.json (what is deployed and what `sluice dev`
#   runs), and
# - every definition of the interpreter's conformance suite
#   (local/asl-interpreter/tests/conformance/**/*.json), all of which the interpreter
#   accepts, so that the interpreter and asl-validator agree on validity.
# Installs asl-validator with `npm ci` (package.json, package-lock.json)
# when node_modules/ lacks it.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm is missing: install Node.js 18 or later with npm (e.g. 'apt-get install -y nodejs npm'), then re-run." >&2
  exit 1
fi
validator=node_modules/.bin/asl-validator
if [ ! -x "$validator" ]; then
  echo "installing asl-validator (npm ci)..." >&2
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi

failed=0
validate() { # asl-validator options and --json-path FILE...; prints the invalid ones
  local output status=0
  output=$("$validator" "$@" 2>&1) || status=$?
  printf '%s\n' "$output" | grep -v '^✓' || true
  [ "$status" -eq 0 ] || failed=1
}

shopt -s nullglob
definitions=(statemachine/*.asl.json)
if [ ${#definitions[@]} -eq 0 ]; then
  echo "statemachine/: there are no *.asl.json definitions to validate"
else
  plain=() placeholders=()
  for file in "${definitions[@]}"; do
    # `${Name}` placeholders (SAM DefinitionSubstitutions) are filled at
    # deploy time; a placeholder Resource is not an ARN yet.
    if grep -q '\${' "$file"; then placeholders+=(--json-path "$file"); else plain+=(--json-path "$file"); fi
  done
  [ ${#plain[@]} -eq 0 ] || validate "${plain[@]}"
  [ ${#placeholders[@]} -eq 0 ] || validate --no-arn-check "${placeholders[@]}"
  echo "statemachine/: ${#definitions[@]} definition(s)"
fi

# Each conformance case's definition, with its substitutions applied.
cases_dir=$(mktemp -d)
trap 'rm -rf "$cases_dir"' EXIT
node - "$cases_dir" <<'JS'
const fs = require('fs');
const path = require('path');
const out = process.argv[2];
const root = 'local/asl-interpreter/tests/conformance';
const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
  const full = path.join(dir, entry.name);
  return entry.isDirectory() ? walk(full) : full.endsWith('.json') ? [full] : [];
});
for (const file of walk(root)) {
  const c = JSON.parse(fs.readFileSync(file, 'utf8'));
  let text = JSON.stringify(c.definition, null, 2);
  for (const [name, value] of Object.entries(c.substitutions || {})) text = text.split('${' + name + '}').join(value);
  const name = path.relative(root, file).replace(/[\/]/g, '__');
  fs.writeFileSync(path.join(out, name), text);
}
JS
cases=()
for file in "$cases_dir"/*.json; do cases+=(--json-path "$file"); done
echo "local/asl-interpreter/tests/conformance: $(( ${#cases[@]} / 2 )) definition(s)"
validate "${cases[@]}"

if [ "$failed" -ne 0 ]; then
  echo "asl-validator found invalid definitions (above)." >&2
  exit 1
fi
echo "asl-validator: every definition is valid"
