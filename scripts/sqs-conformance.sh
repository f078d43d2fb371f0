#!/usr/bin/env bash
# The SQS conformance cases against another SQS implementation: moto's server (moto[server] 5 from
# PyPI), started here on a free loopback port and stopped on exit. These cases are #[ignore]d in
# `make test` (local/sqs-emulator/tests/conformance/main.rs says why); this runs those of `external` and
# `delay::external`, with SLUICE_SQS_ENDPOINT pointing at moto. The cases moto is known to get wrong
# stay ignored, each with its reason (`external_known_wrong_on_moto`). moto comes from PATH, or is
# installed once into a private virtualenv in the tool cache every checkout shares
# (scripts/tool-cache.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
have() { command -v "$1" >/dev/null 2>&1; }

if ! have moto_server; then
  # shellcheck source=scripts/tool-cache.sh
  . scripts/tool-cache.sh
  bin=$(venv_tool moto-5.2.5 moto_server 'moto[server]==5.2.5') || exit 1
  export PATH="$bin:$PATH"
fi

# A port nothing listens on now; moto binds it a moment later.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
LOG=$(mktemp)
moto_server -H 127.0.0.1 -p "$PORT" >"$LOG" 2>&1 &
MOTO=$!
stop() {
  kill "$MOTO" 2>/dev/null || true
  wait "$MOTO" 2>/dev/null || true
  rm -f "$LOG"
}
trap stop EXIT

# Up to 30 s for moto to listen (its first start compiles its modules).
for _ in $(seq 300); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  if ! kill -0 "$MOTO" 2>/dev/null; then
    echo "moto_server exited at start:" >&2; cat "$LOG" >&2; exit 1
  fi
  sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || { echo "moto_server is not listening on $PORT after 30 s:" >&2; cat "$LOG" >&2; exit 1; }
echo "moto_server on 127.0.0.1:$PORT"

export SLUICE_SQS_ENDPOINT="http://127.0.0.1:$PORT"
# Only the cases moto gets right: `external::` and `delay::external::`, not `external_known_wrong_on_moto::`.
# From the workspace's test build (`make test`'s): `-p sluice-sqs-emulator` would resolve features for
# that package alone and compile most dependencies again (scripts/test-binary.sh says why).
if $CARGO nextest --version >/dev/null 2>&1; then
  $CARGO nextest run --workspace --run-ignored only \
    -E 'package(sluice-sqs-emulator) & binary(integration) & test(/(^|::)external::/)'
else
  scripts/test-binary.sh sluice-sqs-emulator integration --ignored external::
fi
