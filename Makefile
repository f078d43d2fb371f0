# The two commands a newcomer runs: `make run` and `make test`. The AWS side has two more:
# `make check-aws` (the template, offline) and `make package` (every function built for Lambda).
# Each installs or starts what it needs (scripts/ensure-deps.sh), or says in
# one line what is missing.

SHELL := /bin/bash
CARGO ?= cargo

# A CI build happens once: incremental state would only double the disk it
# takes (about 2 GB here).
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

.PHONY: run demo-processes dev test check-aws package chaos fuzz bench lint deps

## run: both paths end to end, each with a report checking its invariants:
## the shop pipeline (sluice demo shops: 20 sandbox malls, 2,000 webhooks from
## 100 clients), then the sheet path (sluice demo sheets: 1,000 rows from 100
## clients to one sandbox Google Sheet, 1,000 more over five sheets).
# An unoptimised build (the profile `make test` builds too): the release
# build alone took 5 min 42 s of a fresh 2-core machine, over the 5 minutes
# `make run` has there, and a profile at opt-level 1 took longer still
# (6 min 12 s); this one takes 2 min 36 s. The demos check the same
# invariants either way; their times are longer unoptimised (docs/performance.md).
run: deps
	$(CARGO) build --quiet -p sluice
	$(CARGO) run --quiet -p sluice -- demo shops
	$(CARGO) run --quiet -p sluice -- demo sheets

## demo-processes: `make run`'s two demos with the functions as Lambda runs
## them: the release binaries of functions/* under a local Lambda Runtime API,
## each configured only by infra/template.yaml's variables, ingest behind a
## local HTTP API (payload 2.0), the flush function fed by an SQS event source,
## all on a private Redis shaped like ElastiCache Serverless: three masters in
## cluster mode, TLS only, an ACL user whose password the functions read from
## the local Secrets Manager (or the Redis in SLUICE_REDIS_URL).
# The binary the build above made: `cargo run -p sluice` alone would resolve
# features for sluice only and build every dependency a second time.
RELEASE_DIR = $(or $(CARGO_TARGET_DIR),target)/release
FUNCTION_PACKAGES = $(shell sed -n 's/^name *= *"\(sluice-fn-.*\)"/-p \1/p' functions/*/Cargo.toml)
demo-processes: deps
	$(CARGO) build --release --quiet -p sluice $(FUNCTION_PACKAGES)
	$(RELEASE_DIR)/sluice demo shops --functions processes --private-redis tls-cluster
	$(RELEASE_DIR)/sluice demo sheets --functions processes --private-redis tls-cluster

## dev: sluice on one machine (ingest, the embedded SQS FIFO queue, the pipeline) until Ctrl-C.
dev: deps
	$(CARGO) run --release --quiet -p sluice -- dev

## test: the whole suite, against private redis-servers the tests start (with
## the template checked against the code: tests/tests/template_*.rs). The AWS tools' checks
## are in check-aws and package, so this needs no AWS tooling. Then the Redis
## primitives' suite once more on a cluster of three masters, TLS only with an ACL user as ElastiCache Serverless is (SLUICE_TEST_REDIS,
## see testing/testkit): the test binaries run by libtest (scripts/test-binary.sh,
## which reuses the build above), one cluster per test binary rather
## than one per test (a cluster takes 2 s to form); not the failover test,
## which starts its own cluster with replicas whatever that says.
test: deps
	@scripts/asl-validate.sh
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast && $(CARGO) test --workspace --doc --quiet; \
	else \
		echo "cargo-nextest not found; running cargo test (install it with: cargo install cargo-nextest --locked)"; \
		$(CARGO) test --workspace --no-fail-fast; \
	fi
	SLUICE_TEST_REDIS=cluster scripts/test-binary.sh sluice-redis --tests --quiet --skip failover::

## check-aws: infra/template.yaml offline: the policy rules in infra/rules/ with
## cfn-guard (the template passes each, each fails on its cases in
## infra/rules/tests/), then cfn-lint and sam validate --lint, then the CDK
## app (infra/cdk) synthesized offline and checked to carry the whole template;
## then the SQS conformance cases `make test` skips, against moto_server on a
## free port (scripts/sqs-conformance.sh), and the AWS CLI (aws stepfunctions …
## --endpoint-url) against the Step Functions endpoint of a `sluice dev` it starts and stops.
## Installs the pinned tools once into ~/.cache/sluice-tools, which every checkout
## shares (scripts/tool-cache.sh: aws-tools.sh, moto), and npm ci for CDK.
check-aws:
	@scripts/guard-check.sh
	@scripts/template-lint.sh
	@scripts/cdk-synth.sh
	@scripts/sqs-conformance.sh
	@scripts/sfn-cli-check.sh

## package: every function built for Lambda by sam build as docs/deploy.md
## runs it (cargo lambda build --release of each), into infra/.aws-sam/build
## for sam deploy: arm64, or x86_64 (Architecture=x86_64) without the aarch64
## rustup target (scripts/sam-build.sh).
# Only sam build: a cargo lambda build of the functions before it (what this
# ran first until now) shared none of its artifacts (cargo-lambda's release
# settings and zig wrappers differ by invocation), so it was a second release
# build of everything, 4 to 10 minutes of CI, proving nothing sam build does not.
package:
	@scripts/sam-build.sh

## chaos: the long crash tests, then bench/chaos.md from their rows
## (scripts/chaos-table.sh): sluice dev killed with kill -9 five times in
## each of several seeded webhook streams, draining into a private
## PostgreSQL (SLUICE_CHAOS_SEEDS, default 1-3; SLUICE_CHAOS_CHANGES per
## stream, default 600); then the Redis of
## SLUICE_REDIS_URL stopped (SIGKILL or SIGTERM) and restarted under load,
## seeds 1-4 with outages of 3-6 s, and one of 20 s (longer than the
## queues' consumer lease); then a master of a TLS cluster with a replica
## per master failed over under load, once killed (kill -9) and once
## switched (CLUSTER FAILOVER), about 30 s each (cluster_failover); then
## the HTTP abuse run against ingest and the SQS endpoint, 20,000 seeded bad and good requests (SLUICE_ABUSE_REQUESTS,
## SLUICE_ABUSE_SEED); then sluice dev killed between an append Google
## applied and its trim, with rows to three sheets (sheet_crash: over a
## minute, the killed flushes' lock leases); then upstream faults against
## the sandbox Cafe24 and Sheets (5xx; connections held, dropped or closed
## before any answer; a 429 storm; 403s; token expiry, revocation and a
## mall whose token lapsed, mended by sluice tokens set / sluice credentials
## set), seeds SLUICE_CHAOS_SEEDS (default 1-2, about 50 s each: one
## append held past sluice's 30 s timeout); then ingest held for 60 s at
## its measured ceiling of sheet rows while a latency proxy slows Redis by
## 50, 100, 200, then 300 ms a round trip (load_held: 503 + Retry-After,
## RSS, every 202'd row in its sheet once); then a person editing a sheet
## (typing, deleting, inserting, sorting rows) while appends are applied
## then failed, held past the timeout or applied late, 30 rounds for each
## of SLUICE_CHAOS_SEEDS (default 1-3; sheet_edits_seeded: every row once,
## the person's deletions kept, every trace ending COMPLETED).
## `make test` runs one of each of the first three kinds, one short kill
## of a cluster master, one short upstream-faults run and an 8 s load_held.
## Two lanes side by side (most of each scenario is waiting on a lease, an
## outage or a timeout), then load_held alone: scripts/chaos.sh.
chaos: deps
	@scripts/chaos.sh

## fuzz: the fuzz targets of fuzz/ (webhook body, sheet row body, SQS JSON
## protocol request, ASL loader), each for FUZZ_SECONDS (default 30) with
## cargo-fuzz (installed into ~/.cache/sluice-tools when missing) on the stable
## toolchain (RUSTC_BOOTSTRAP=1; scripts/fuzz.sh).
fuzz:
	@scripts/fuzz.sh

## bench: side-by-side benchmarks; the output is committed under bench/.
## bench/peers.md compares with the Node peers (rolling-rate-limiter,
## BullMQ; npm ci into bench/peers when missing, skipped without node).
## Also the #[ignore]d small-scale comparisons that need more than one run
## (a flooding sheet with and without flow control per sheet).
bench: deps
	@mkdir -p bench
	$(CARGO) bench --quiet -p sluice-redis --bench primitives | tee bench/primitives.md
	$(CARGO) bench --quiet -p sluice-asl --bench interpreter | tee bench/asl.md
	$(CARGO) bench --quiet -p sluice-sqs-emulator --bench queue | tee bench/queue.md
	$(CARGO) bench --quiet -p sluice-sqs-emulator --bench peers | tee bench/peers.md
	$(CARGO) bench --quiet -p sluice-dev-stack --bench shop | tee bench/shop.md
	$(CARGO) bench --quiet -p sluice-dev-stack --bench sheets | tee bench/sheets.md
	$(CARGO) bench --quiet -p sluice-dev-stack --bench noisy | tee bench/noisy.md
	$(CARGO) test --quiet -p sluice-dev-stack --test integration -- --ignored --nocapture noisy_sheet::
	$(CARGO) bench --quiet -p sluice-sink --bench drain | tee bench/drain.md

## lint: formatting, then every committed Cargo.lock against the RustSec
## advisory database (cargo-audit, built into ~/.cache/sluice-tools once; fails on
## any advisory .cargo/audit.toml does not ignore with its reason): offline from
## SLUICE_ADVISORY_DB when set, else from ../shared/advisory-db beside the
## checkout when it is there, else fetched from GitHub (scripts/advisory-check.sh);
## then clippy, warnings are errors.
lint:
	$(CARGO) fmt --all -- --check
	@scripts/advisory-check.sh
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

deps:
	@scripts/ensure-deps.sh
