//! What one row costs in the requests AWS bills, counted in a run as the
//! shop bench counts a webhook (its section 4), and what a million rows a
//! month cost in AWS: `bench/cost-sheets.md`, next to the design where one Lambda appends each row,
//! shape (a Lambda behind the API that appends each row itself).
//!
//! Two flows through the whole local stack with Google's real quota (60
//! writes a minute per credential): a steady one (rows arriving faster
//! than one append a second can carry one by one, so appends carry many)
//! and a trickle (a row every 1.1 s, each its own append).

use crate::rig::{DOC, Rig};
use serde_json::Value;
use sluice_dev_stack::sfn_api::ExecutionCounts;
use sluice_pipeline::SheetConfig;
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use sluice_testkit::aws_prices::assumed::{
    EXPRESS_GB, FUNCTION_GB, INGEST_MS, LOG_BYTES_PER_INVOCATION, REDIS_STEP_MS,
};
use sluice_testkit::aws_prices::{self as pricing, Price};
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The steady flow: rows a second, for how long.
const STEADY_RATE: u64 = 40;
const STEADY_FOR: Duration = Duration::from_secs(15);
/// The trickle: rows, one every [`TRICKLE_GAP`].
const TRICKLE_ROWS: usize = 10;
const TRICKLE_GAP: Duration = Duration::from_millis(1100);

/// Assumed, not measured (the rest as in the shop's cost table,
/// `aws_prices::assumed`): a flush waits on Google, one append, sometimes
/// a read first.
const FLUSH_MS: f64 = 300.0;
/// One Lambda per row appends the row itself.
const SEED_APPEND_MS: f64 = 300.0;
/// Bytes through the NAT gateway per Google call (request and answer) and
/// per row carried.
const GOOGLE_CALL_BYTES: f64 = 2048.0;
const ROW_BYTES: f64 = 200.0;

/// One flow's counts.
struct Flow {
    name: &'static str,
    rows: u64,
    executions: ExecutionCounts,
    flushes: u64,
    google_calls: u64,
    redis_commands: u64,
}

pub(crate) async fn run() {
    let steady = steady().await;
    let trickle = trickle().await;
    println!("## 4. Work per row, counted\n");
    println!(
        "| flow | rows | executions | state transitions | Lambda invocations | Express ms | flushes | Google calls | \
         Redis commands |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for flow in [&steady, &trickle] {
        let per = |n: u64| n as f64 / flow.rows.max(1) as f64;
        let e = flow.executions;
        println!(
            "| {} | {} | {:.3} | {:.2} | {:.2} | {:.0} | {:.3} | {:.3} | {:.1} |",
            flow.name,
            flow.rows,
            per(e.executions),
            per(e.state_transitions),
            per(e.task_invocations),
            per(e.duration_ms),
            per(flow.flushes),
            per(flow.google_calls),
            per(flow.redis_commands)
        );
    }
    println!();
    write_costs(&[&steady, &trickle]);
}

async fn rig(name: &str) -> Rig {
    Rig::start(name, SheetsSandboxConfig::default(), SheetConfig::default()).await
}

/// Counts what sending `rows` (by `send`) made the stack do.
async fn counted<F: std::future::Future<Output = u64>>(rig: &Rig, name: &'static str, send: F) -> Flow {
    let (before, flushed, commands) = (rig.stack.executions.counts(), flushes(rig), rig.redis_commands().await);
    let rows = send.await;
    settled(rig, rows as usize).await;
    Flow {
        name,
        rows,
        executions: rig.stack.executions.counts().since(before),
        flushes: flushes(rig) - flushed,
        google_calls: rig.sandbox.calls().iter().filter(|c| c.op != SheetsOp::Token).count() as u64,
        redis_commands: rig.redis_commands().await - commands,
    }
}

/// Waits until the sheet holds `rows` rows besides any header, the event
/// queue is empty, and no flush has ended for half a second (a flush is
/// counted when it ends, just after its rows became visible).
async fn settled(rig: &Rig, rows: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut last, mut since) = (flushes(rig), Instant::now());
    loop {
        assert!(Instant::now() < deadline, "rows missing or the stack never settled");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let visible = rig.sandbox.sheet_values(DOC, 0).unwrap_or_default();
        let data = visible.iter().filter(|row| row.first().and_then(Value::as_str) != Some("row_id")).count();
        let (events, _) = rig.stack.queues().await.expect("attributes");
        if flushes(rig) != last {
            (last, since) = (flushes(rig), Instant::now());
        }
        if data >= rows && events.visible + events.in_flight == 0 && since.elapsed() > Duration::from_millis(500) {
            return;
        }
    }
}

fn flushes(rig: &Rig) -> u64 {
    rig.stack.flush.flushes.load(Ordering::Relaxed)
}

async fn steady() -> Flow {
    let rig = Arc::new(rig("bench_per_row_steady").await);
    let flow = counted(&rig, "steady: 40 rows/s for 15 s", async {
        let mut ticks = tokio::time::interval(Duration::from_secs(1) / STEADY_RATE as u32);
        let mut sending = tokio::task::JoinSet::new();
        let started = Instant::now();
        let mut sent = 0u64;
        while started.elapsed() < STEADY_FOR {
            ticks.tick().await;
            let rig = rig.clone();
            sending.spawn(async move { rig.send(&format!("steady-{sent:05}")).await });
            sent += 1;
        }
        while sending.join_next().await.is_some() {}
        sent
    })
    .await;
    if let Ok(rig) = Arc::try_unwrap(rig) {
        rig.stop().await;
    }
    flow
}

async fn trickle() -> Flow {
    let rig = rig("bench_per_row_trickle").await;
    let flow = counted(&rig, "trickle: a row every 1.1 s", async {
        for i in 0..TRICKLE_ROWS {
            rig.send(&format!("trickle-{i:03}")).await;
            tokio::time::sleep(TRICKLE_GAP).await;
        }
        TRICKLE_ROWS as u64
    })
    .await;
    rig.stop().await;
    flow
}

/// (line item, USD) for `n` rows a month carried as `flow` carried them;
/// `None` for one Lambda per row.
fn lines(flow: Option<&Flow>, n: f64) -> Vec<(&'static str, f64)> {
    let cost = |p: &Price, units: f64| p.usd * units;
    let lambda = |invocations: f64, ms: f64| {
        cost(&pricing::LAMBDA_REQUEST, invocations) + cost(&pricing::LAMBDA_ARM_GB_SECOND, ms / 1e3 * FUNCTION_GB)
    };
    let Some(flow) = flow else {
        // One request, one Lambda that appends the row itself: nothing
        // queued, nothing retried in order, a 429 answered to the sender.
        return vec![
            ("API Gateway HTTP API", cost(&pricing::HTTP_API_REQUEST, n)),
            ("ingest Lambda", lambda(n, n * SEED_APPEND_MS)),
            ("SQS requests", 0.0),
            ("EventBridge Pipes", 0.0),
            ("Step Functions Express", 0.0),
            ("step and flush Lambdas", 0.0),
            ("ElastiCache Serverless (Valkey)", 0.0),
            ("CloudWatch Logs", cost(&pricing::LOGS_INGESTED_GB, n * LOG_BYTES_PER_INVOCATION / 1e9)),
            (
                "NAT gateway (Google over the internet)",
                cost(&pricing::NAT_HOUR, 730.0) + cost(&pricing::NAT_GB, n * (GOOGLE_CALL_BYTES + ROW_BYTES) / 1e9),
            ),
        ];
    };
    let per = |count: u64| n * count as f64 / flow.rows.max(1) as f64;
    let e = flow.executions;
    let executions = per(e.executions);
    let mean_ms = e.duration_ms as f64 / e.executions.max(1) as f64;
    let (tasks, flushes) = (per(e.task_invocations), per(flow.flushes));
    vec![
        ("API Gateway HTTP API", cost(&pricing::HTTP_API_REQUEST, n)),
        ("ingest Lambda", lambda(n, n * INGEST_MS)),
        (
            // A FIFO send per row, a receive and a delete per pipe batch;
            // a flush request sent, received and deleted on the standard
            // flush queue.
            "SQS requests",
            cost(&pricing::SQS_FIFO_REQUEST, n + 2.0 * executions)
                + cost(&pricing::SQS_STANDARD_REQUEST, 3.0 * flushes),
        ),
        ("EventBridge Pipes", cost(&pricing::PIPES_REQUEST, executions)),
        (
            "Step Functions Express",
            cost(&pricing::EXPRESS_REQUEST, executions)
                + cost(&pricing::EXPRESS_GB_SECOND, executions * (mean_ms / 100.0).ceil() * 0.1 * EXPRESS_GB),
        ),
        ("step and flush Lambdas", lambda(tasks + flushes, tasks * REDIS_STEP_MS + flushes * FLUSH_MS)),
        (
            // ECPUs only: the buffers hold rows for seconds.
            "ElastiCache Serverless (Valkey)",
            cost(&pricing::VALKEY_SERVERLESS_ECPU, per(flow.redis_commands))
                + cost(&pricing::VALKEY_SERVERLESS_GB_HOUR, 0.1 * 730.0),
        ),
        ("CloudWatch Logs", cost(&pricing::LOGS_INGESTED_GB, (n + tasks + flushes) * LOG_BYTES_PER_INVOCATION / 1e9)),
        (
            "NAT gateway (Google over the internet)",
            cost(&pricing::NAT_HOUR, 730.0)
                + cost(&pricing::NAT_GB, (per(flow.google_calls) * GOOGLE_CALL_BYTES + n * ROW_BYTES) / 1e9),
        ),
    ]
}

fn write_costs(flows: &[&Flow]) {
    let mut out = String::new();
    let _ = writeln!(out, "# What a month of sheet rows costs in AWS (sheet path)\n");
    let _ = writeln!(
        out,
        "Written by `make bench` (local/dev-stack/benches/sheets/per_row.rs) from the counts of bench/sheets.md section \
         4 and the prices of testing/testkit/src/aws_prices.rs (the same as bench/cost.md's). Assumed, not measured: \
         Lambda time per invocation (ingest {INGEST_MS} ms, buffer and plan steps {REDIS_STEP_MS} ms, a flush \
         {FLUSH_MS} ms, one Lambda's append {SEED_APPEND_MS} ms, {FUNCTION_GB} GB arm64), \
         {LOG_BYTES_PER_INVOCATION} log bytes per invocation, one NAT gateway, {GOOGLE_CALL_BYTES} bytes per Google \
         call plus {ROW_BYTES} per row, ECPUs = Redis commands (the stand-in queue's included: an upper bound). \
         The pipes' idle polls are in bench/cost.md (one set of pipes serves both paths).\n"
    );
    let seed = "one Lambda appends each row";
    for n in [1e6, 1e8] {
        let _ = writeln!(out, "## {} rows a month, USD\n", if n < 1e7 { "1 million" } else { "100 million" });
        let mut columns: Vec<(&str, Vec<(&str, f64)>)> = flows.iter().map(|f| (f.name, lines(Some(f), n))).collect();
        columns.push((seed, lines(None, n)));
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let _ = writeln!(out, "| line item | {} |", names.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(columns.len()));
        for (i, (item, _)) in columns[0].1.iter().enumerate() {
            let cells: Vec<String> = columns.iter().map(|(_, lines)| format!("{:.2}", lines[i].1)).collect();
            let _ = writeln!(out, "| {item} | {} |", cells.join(" | "));
        }
        let totals: Vec<String> = columns
            .iter()
            .map(|(_, lines)| format!("**{:.2}**", lines.iter().map(|(_, usd)| usd).sum::<f64>()))
            .collect();
        let _ = writeln!(out, "| **total** | {} |", totals.join(" | "));
        let mut largest = columns[0].1.clone();
        largest.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top: Vec<String> = largest.iter().take(3).map(|(item, usd)| format!("{item} ({usd:.2})")).collect();
        let _ = writeln!(out, "\nLargest for sluice ({}): {}.\n", columns[0].0, top.join(", "));
    }
    let _ = writeln!(
        out,
        "One Lambda per row is cheaper in AWS and loses rows: at Google's 60 writes a minute its bursts are answered 429 \
         (bench/sheets.md section 1: 940 of 1,000 rows lost as shipped, 2,776 calls and 34 s with retries)."
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cost-sheets.md");
    match std::fs::write(&path, out) {
        Ok(()) => println!("Wrote bench/cost-sheets.md (the AWS cost of a month of sheet rows, from these counts).\n"),
        Err(e) => println!("Could not write {}: {e}\n", path.display()),
    }
}
