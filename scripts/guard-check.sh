#!/usr/bin/env bash
# The policy rules in infra/rules/*.guard (cfn-guard), both ways round: infra/template.yaml breaks no
# rule, and every rule fails on a template under infra/rules/tests/ that names it on its first line
# ("# fails: file.guard/rule") - so a rule whose query has come to match nothing, and so passes
# everything, is caught as well.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok    $1"; }
fail() { failed=$((failed + 1)); echo "FAIL  $1"; }

# 1. The template breaks no rule (cfn-guard exits non-zero on a FAIL or an error).
if out=$(cfn-guard validate --rules infra/rules --data infra/template.yaml --show-summary fail 2>&1); then
  pass "infra/template.yaml breaks no rule in infra/rules"
else
  echo "$out"
  fail "infra/template.yaml breaks a rule in infra/rules"
fi

# 2. Each failing case fails the rule it names.
declare -A proven=()
for case in infra/rules/tests/*.yaml; do
  expected=$(sed -n '1s/^# fails: *//p' "$case")
  if [ -z "$expected" ]; then
    fail "$case: its first line names no rule (# fails: file.guard/rule)"
    continue
  fi
  file=${expected%%/*}
  summary=$(cfn-guard validate --rules "infra/rules/$file" --data "$case" --show-summary all 2>&1 || true)
  if grep -Eq "^${expected}[[:space:]]+FAIL$" <<<"$summary"; then
    proven[$expected]=1
    pass "$expected fails on $case"
  else
    echo "$summary" | sed -n '1,20p'
    fail "$expected does not fail on $case"
  fi
done

# 3. No rule goes without a failing case.
for rules in infra/rules/*.guard; do
  file=$(basename "$rules")
  for rule in $(sed -n 's/^rule \([A-Za-z0-9_]*\)[[:space:]]*\(when\|{\).*/\1/p' "$rules"); do
    if [ -z "${proven[$file/$rule]:-}" ]; then fail "$file/$rule has no template under infra/rules/tests/ it fails on"; fi
  done
done

echo "cfn-guard: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
