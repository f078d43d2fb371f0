#!/usr/bin/env bash
# `make fuzz`: each target of fuzz/ for FUZZ_SECONDS (default 30) with
# cargo-fuzz. libFuzzer needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets
# the stable toolchain take them (the AddressSanitizer runtime ships with
# stable's rust-std on x86_64 Linux). New inputs go to a scratch directory,
# so the committed corpus (fuzz/corpus/<target>, the seeds) stays small; a
# crash is saved under fuzz/artifacts/<target>/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-30}"
# cargo-fuzz from crates.io into the tool cache every checkout shares (scripts/tool-cache.sh) when
# it is not on PATH (about a minute, once).
if ! cargo fuzz --version >/dev/null 2>&1; then
  # shellcheck source=scripts/tool-cache.sh
  . scripts/tool-cache.sh
  bin=$(cargo_tool cargo-fuzz 0.13.2) || exit 1
  export PATH="$bin:$PATH"
fi
export RUSTC_BOOTSTRAP=1
for target in webhook_body sheet_row_body sqs_request asl_loader; do
  scratch="$(mktemp -d)"
  echo "fuzz: $target for ${seconds}s"
  if ! cargo fuzz run "$target" "$scratch" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 >"$scratch.log" 2>&1; then
    tail -40 "$scratch.log"
    rm -rf "$scratch" "$scratch.log"
    exit 1
  fi
  grep -E '^Done' "$scratch.log" || true
  rm -rf "$scratch" "$scratch.log"
done
