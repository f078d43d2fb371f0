//! `bench/cost.md`: what a month of webhooks costs in AWS, from the counts
//! this run measured (section 4) and the prices in `sluice_testkit::aws_prices`, next to
//! the design of one execution and one Cafe24 call per webhook on the same webhooks: one execution and one
//! Cafe24 call per webhook, no coalescing, no batching.
//!
//! What was not measured is assumed, named in the table's notes and kept
//! here as constants, so a reader can see what moves the result.

use crate::per_webhook::{IngestCosts, RunCounts};
use sluice_testkit::aws_prices::assumed::{
    EXPRESS_GB, FUNCTION_GB, INGEST_MS, LOG_BYTES_PER_INVOCATION, REDIS_STEP_MS,
};
use sluice_testkit::aws_prices::{self as pricing, Price};
use std::fmt::Write;

/// A fetch waits on Cafe24 over the internet.
const FETCH_MS: f64 = 150.0;
/// Bytes of one Cafe24 answer through the NAT gateway.
const CAFE24_ANSWER_BYTES: f64 = 4096.0;
/// Empty long polls the pipes make on an idle queue: 8 pipes
/// (infra/template.yaml), one 20 s poll each at a time, a 30-day month.
const IDLE_RECEIVES_PER_MONTH: f64 = 8.0 * 30.0 * 86_400.0 / 20.0;
/// Cache memory at steady state per webhook a day: one idempotency key of
/// 120 bytes kept 24 h (bench/drain.md, section 4).
const CACHE_BYTES_PER_DAILY_WEBHOOK: f64 = 120.0;

/// One shape's counts per webhook.
struct PerWebhook {
    name: &'static str,
    sqs_sends: f64,
    fetches: f64,
    executions: f64,
    tasks: f64,
    express_billed_ms: f64,
    redis_ops: f64,
}

impl PerWebhook {
    fn sluice(name: &'static str, run: RunCounts, ingest_trips: f64) -> Self {
        let w = run.webhooks.max(1) as f64;
        let e = run.executions;
        let mean_ms = e.duration_ms as f64 / e.executions.max(1) as f64;
        let drain_runs = run.catch_up_runs as f64 / w;
        Self {
            name,
            // A catch-up run's request: sent, received, deleted.
            sqs_sends: run.enqueued as f64 / w + 3.0 * drain_runs,
            fetches: run.fetches as f64 / w,
            executions: e.executions as f64 / w,
            // The state machine's Task states, and the catch-up runs.
            tasks: (e.task_invocations + run.catch_up_runs) as f64 / w,
            express_billed_ms: (mean_ms / 100.0).ceil() * 100.0,
            redis_ops: ingest_trips + run.redis_commands as f64 / w,
        }
    }

    /// One execution and one Cafe24 call per webhook, on the same webhooks: everything once per
    /// webhook, an execution's tasks and Redis work as ours per fetch.
    fn seed(plain: &PerWebhook) -> Self {
        let per_fetch = |n: f64| n / plain.fetches.max(f64::EPSILON);
        Self {
            name: "one execution and one Cafe24 call per webhook",
            sqs_sends: 1.0,
            fetches: 1.0,
            executions: 1.0,
            tasks: per_fetch(plain.tasks),
            express_billed_ms: plain.express_billed_ms,
            redis_ops: per_fetch(plain.redis_ops),
        }
    }

    /// (line item, USD) for `n` webhooks a month.
    fn lines(&self, n: f64) -> Vec<(&'static str, f64)> {
        let cost = |p: &Price, units: f64| p.usd * units;
        let executions = n * self.executions;
        let step_seconds = n * (self.fetches * FETCH_MS + (self.tasks - self.fetches).max(0.0) * REDIS_STEP_MS) / 1e3;
        let invocations = n * (1.0 + self.tasks);
        let cache_gb = (n / 30.0 * CACHE_BYTES_PER_DAILY_WEBHOOK / 1e9).max(0.1);
        vec![
            ("API Gateway HTTP API", cost(&pricing::HTTP_API_REQUEST, n)),
            (
                "ingest Lambda",
                cost(&pricing::LAMBDA_REQUEST, n)
                    + cost(&pricing::LAMBDA_ARM_GB_SECOND, n * INGEST_MS / 1e3 * FUNCTION_GB),
            ),
            (
                // Sends, then a receive and a delete per batch the pipe takes.
                "SQS FIFO requests",
                cost(&pricing::SQS_FIFO_REQUEST, n * self.sqs_sends + 2.0 * executions + IDLE_RECEIVES_PER_MONTH),
            ),
            ("EventBridge Pipes", cost(&pricing::PIPES_REQUEST, executions)),
            (
                "Step Functions Express",
                cost(&pricing::EXPRESS_REQUEST, executions)
                    + cost(&pricing::EXPRESS_GB_SECOND, executions * self.express_billed_ms / 1e3 * EXPRESS_GB),
            ),
            (
                "step Lambdas",
                cost(&pricing::LAMBDA_REQUEST, n * self.tasks)
                    + cost(&pricing::LAMBDA_ARM_GB_SECOND, step_seconds * FUNCTION_GB),
            ),
            (
                "ElastiCache Serverless (Valkey)",
                cost(&pricing::VALKEY_SERVERLESS_ECPU, n * self.redis_ops)
                    + cost(&pricing::VALKEY_SERVERLESS_GB_HOUR, cache_gb * 730.0),
            ),
            ("CloudWatch Logs", cost(&pricing::LOGS_INGESTED_GB, invocations * LOG_BYTES_PER_INVOCATION / 1e9)),
            (
                "NAT gateway (Cafe24 over the internet)",
                cost(&pricing::NAT_HOUR, 730.0) + cost(&pricing::NAT_GB, n * self.fetches * CAFE24_ANSWER_BYTES / 1e9),
            ),
        ]
    }
}

/// Writes `bench/cost.md` and says so on stdout.
pub(crate) fn write(ingest: &IngestCosts, plain: RunCounts, coalescing: RunCounts, waiting: RunCounts) {
    let trips = ingest.redis_trips as f64 / ingest.accepted.max(1) as f64;
    let ours = PerWebhook::sluice("sluice, every webhook a change of its own", plain, trips);
    let hot = PerWebhook::sluice("sluice, section 2's workload (20 webhooks per product)", coalescing, trips);
    let waits = PerWebhook::sluice("the same without flow control (waits in Express Wait states)", waiting, trips);
    let seed = PerWebhook::seed(&ours);
    let shapes = [&ours, &hot, &waits, &seed];
    let mut out = String::new();
    let _ = writeln!(out, "# What a month of webhooks costs in AWS (shop path)\n");
    let _ = writeln!(
        out,
        "Written by `make bench` (local/dev-stack/benches/shop/cost.rs) from the counts of the same run as bench/shop.md \
         section 4 and the prices of testing/testkit/src/aws_prices.rs (us-east-1, on demand, first tier, no free \
         tier, read 2026-11-25). Assumed, not measured: Lambda time per invocation (ingest {INGEST_MS} ms, fetch \
         {FETCH_MS} ms, other steps {REDIS_STEP_MS} ms, {FUNCTION_GB} GB arm64), {LOG_BYTES_PER_INVOCATION} log bytes \
         per invocation, one NAT gateway, ECPUs = Redis commands (1 KB or less each; the commands counted include the \
         stand-in queue's, so an upper bound). A flow-control catch-up run's inline waits for the bucket are billed \
         Lambda time not counted here; its SQS requests are counted at the FIFO price (its queue is a standard \
         one, 20% cheaper).\n"
    );
    let _ = writeln!(out, "## Counted per webhook\n");
    let _ = writeln!(
        out,
        "| shape | SQS sends | Cafe24 calls | executions | Lambda steps | Express ms billed | Redis ops |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    for s in shapes {
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.3} | {:.2} | {:.0} | {:.1} |",
            s.name, s.sqs_sends, s.fetches, s.executions, s.tasks, s.express_billed_ms, s.redis_ops
        );
    }
    for n in [1e6, 1e8] {
        let _ = writeln!(out, "\n## {} webhooks a month, USD\n", if n < 1e7 { "1 million" } else { "100 million" });
        let columns: Vec<Vec<(&str, f64)>> = shapes.iter().map(|s| s.lines(n)).collect();
        let names: Vec<&str> = shapes.iter().map(|s| s.name).collect();
        let _ = writeln!(out, "| line item | {} |", names.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(shapes.len()));
        for (i, (item, _)) in columns[0].iter().enumerate() {
            let cells: Vec<String> = columns.iter().map(|c| format!("{:.2}", c[i].1)).collect();
            let _ = writeln!(out, "| {item} | {} |", cells.join(" | "));
        }
        let totals: Vec<String> =
            columns.iter().map(|c| format!("**{:.2}**", c.iter().map(|(_, usd)| usd).sum::<f64>())).collect();
        let _ = writeln!(out, "| **total** | {} |", totals.join(" | "));
        let mut largest = columns[0].clone();
        largest.sort_by(|a, b| b.1.total_cmp(&a.1));
        let names: Vec<String> = largest.iter().take(3).map(|(item, usd)| format!("{item} ({usd:.2})")).collect();
        let _ = writeln!(out, "\nLargest for sluice (own changes): {}.", names.join(", "));
    }
    let _ = writeln!(out, "\n## Prices used\n");
    let _ = writeln!(out, "| item | USD | unit | source |");
    let _ = writeln!(out, "|---|---:|---|---|");
    for (what, p) in pricing::ALL {
        let _ = writeln!(out, "| {what} | {:.10} | {} | {} |", p.usd, p.unit, p.source);
    }
    // The shape that moves budget waits out of Express Wait states (flow
    // control: the catch-up runs' requests wait as SQS delays) against the one
    // that waits in them, on the same workload: the verdict follows the run.
    let total = |s: &PerWebhook| s.lines(1e8).iter().map(|(_, usd)| usd).sum::<f64>();
    let (delays, waiting) = (total(&hot), total(&waits));
    let _ = writeln!(
        out,
        "\nBudget waits as SQS delays (flow control: a mall that outruns its budget is fetched by its catch-up runs, \
         whose next request waits in the delay queue) against waits in Express Wait states, on section 2's workload, \
         100 million webhooks: {delays:.2} vs {waiting:.2} USD, {}. The sheet path's month is in bench/cost-sheets.md.",
        if delays < waiting * 0.98 {
            "cheaper with the delays"
        } else if delays > waiting * 1.02 {
            "dearer with the delays: the Wait states cost less than the catch-up runs' requests and the extra fetches"
        } else {
            "the same within 2%: the Wait states' duration costs about what the catch-up runs' requests and extra fetches do"
        }
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cost.md");
    match std::fs::write(&path, out) {
        Ok(()) => println!("Wrote bench/cost.md (the AWS cost of a month of webhooks, from these counts).\n"),
        Err(e) => println!("Could not write {}: {e}\n", path.display()),
    }
}
