#!/usr/bin/env bash
# The AWS CLI against the Step Functions endpoint of `sluice dev`: `aws stepfunctions ...
# --endpoint-url` list-state-machines, start-execution, describe-execution,
# get-execution-history, start-sync-execution, and an error, each answer checked. Starts a
# debug `sluice dev` on free ports with a private redis-server in a temporary directory, and
# stops it with Ctrl-C's signal at the end, however the check ends. The CLI comes from
# scripts/aws-tools.sh. (make test proves the same calls with aws-sdk-sfn:
# local/dev-stack/tests/sfn_api.)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=$(scripts/aws-tools.sh)
if [ -n "$TOOLS" ]; then export PATH="$TOOLS:$PATH"; fi
fail() { echo "sfn-cli-check: $*" >&2; exit 1; }

scripts/ensure-deps.sh   # cargo, and the redis-server sluice dev starts
# The sluice binary of the workspace's test build (`make test`'s, so nothing is compiled again in CI):
# `cargo build -p sluice` resolves other features (tokio's, serde's) and compiles most dependencies again.
cargo test --workspace --no-run --quiet
SLUICE="$PWD/${CARGO_TARGET_DIR:-target}/debug/sluice"
work=$(mktemp -d)
dev_pid=
stop() {
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -INT "$dev_pid"
    wait "$dev_pid" || true
  fi
  rm -rf "$work"
}
trap stop EXIT
(cd "$work" && exec env -u SLUICE_REDIS_URL "$SLUICE" dev --sqs-port 0 --sfn-port 0 --ingest-port 0 \
  --metrics-port 0 --redis-dir "$work/redis") >"$work/dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 600); do
  grep -q '^Ready\.' "$work/dev.log" && break
  kill -0 "$dev_pid" 2>/dev/null || fail "sluice dev exited before it was ready: $(cat "$work/dev.log")"
  sleep 0.1
done
grep -q '^Ready\.' "$work/dev.log" || fail "sluice dev was not ready within 60 s: $(cat "$work/dev.log")"
endpoint=$(sed -n 's/^Step Functions endpoint: //p' "$work/dev.log")
machine=$(sed -n 's/^State machine: //p' "$work/dev.log")

# Nothing is read from an AWS account: fixed credentials, no pager, no profile.
export AWS_ACCESS_KEY_ID=sluice-local AWS_SECRET_ACCESS_KEY=sluice-local AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=
unset AWS_PROFILE AWS_SESSION_TOKEN
sfn() { aws stepfunctions --endpoint-url "$endpoint" --output text "$@"; }

listed=$(sfn list-state-machines --query 'stateMachines[].stateMachineArn')
[ "$listed" = "$machine" ] || fail "list-state-machines answered '$listed', not '$machine'"

# An empty batch: the pipeline plans no group and reports no failure.
name="cli-check-$$"
arn=$(sfn start-execution --state-machine-arn "$machine" --name "$name" --input '[]' --query executionArn)
[ "$arn" = "${machine/:stateMachine:/:execution:}:$name" ] || fail "start-execution answered '$arn'"
status=RUNNING
for _ in $(seq 300); do
  status=$(sfn describe-execution --execution-arn "$arn" --query status)
  [ "$status" != RUNNING ] && break
  sleep 0.1
done
[ "$status" = SUCCEEDED ] || fail "execution $arn ended $status"
output=$(sfn describe-execution --execution-arn "$arn" --query output)
[ "$output" = '{"batchItemFailures":[]}' ] || fail "execution $arn output '$output'"
events=$(sfn get-execution-history --execution-arn "$arn" --query 'events[].type')
case "$events" in
  ExecutionStarted*ExecutionSucceeded) ;;
  *) fail "get-execution-history answered '$events'" ;;
esac

# StartSyncExecution's host prefix (sync-) would name a host that does not exist locally.
sync=$(AWS_DISABLE_HOST_PREFIX_INJECTION=true sfn start-sync-execution --state-machine-arn "$machine" \
  --input '[]' --query '[status, output]')
[ "$sync" = $'SUCCEEDED\t{"batchItemFailures":[]}' ] || fail "start-sync-execution answered '$sync'"

if error=$(sfn describe-execution --execution-arn "${machine/:stateMachine:/:execution:}:never-ran" 2>&1); then
  fail "describe-execution of an execution that never ran succeeded: $error"
fi
case "$error" in
  *"(ExecutionDoesNotExist)"*) ;;
  *) fail "describe-execution of an execution that never ran answered: $error" ;;
esac
echo "sluice dev's Step Functions endpoint: aws stepfunctions list-state-machines, start-execution," \
  "describe-execution, get-execution-history, start-sync-execution and an error answered as expected"
