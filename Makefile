# The two commands a newcomer runs: `make run` and `make test`.
# Each installs or starts what it needs (scripts/ensure-deps.sh), or says in
# one line what is missing.

SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run dev test bench lint deps

## run: the shop pipeline end to end (sluice demo shops): 20 sandbox malls,
## 2,000 webhooks from 100 clients, a report checking every invariant.
run: deps
	$(CARGO) run --release --quiet -p sluice -- demo shops

## dev: sluice on one machine (ingest, the embedded SQS FIFO queue, the pipeline) until Ctrl-C.
dev: deps
	$(CARGO) run --release --quiet -p sluice -- dev

## test: the whole suite, against private redis-servers the tests start.
test: deps
	@scripts/asl-validate.sh
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast && $(CARGO) test --workspace --doc --quiet; \
	else \
		echo "cargo-nextest not found; running cargo test (install it with: cargo install cargo-nextest --locked)"; \
		$(CARGO) test --workspace --no-fail-fast; \
	fi

## bench: side-by-side benchmarks; the output is committed under bench/.
bench: deps
	@mkdir -p bench
	$(CARGO) bench --quiet -p sluice-redis --bench primitives | tee bench/primitives.md
	$(CARGO) bench --quiet -p sluice-asl --bench interpreter | tee bench/asl.md
	$(CARGO) bench --quiet -p sluice-queue --bench queue | tee bench/queue.md
	$(CARGO) bench --quiet -p sluice-local --bench shop | tee bench/shop.md

## lint: formatting and clippy, warnings are errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

deps:
	@scripts/ensure-deps.sh
