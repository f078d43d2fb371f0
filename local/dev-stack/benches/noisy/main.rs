//! `make bench`'s bench/noisy.md: one mall floods, fifty quiet malls send a
//! webhook a second each, on the whole local stack with the SQS-faithful
//! FIFO queue, side by side in one run: (a) the quiet malls alone, (b) the
//! flood with one message per webhook (the design before flow control),
//! (c) the flood with flow control per mall; (b) and (c) again with the
//! pipe scaled out (many batches at once) instead of one batch per pipe,
//! the steps held to their reserved concurrency throughout. Then the same for sheets
//! (`sheet_report`): (d) quiet sheets alone, (e) a burst of rows to one
//! sheet with one message per row, (f) with flow control per sheet.
//! `cargo bench --bench noisy -- --sheets-only` runs the sheets alone,
//! `-- --malls-only` the malls alone.

mod scenario;
mod sheet_report;
mod sheet_scenario;

use scenario::{Mode, Outcome, Scale};
use sluice_dev_stack::PipeConcurrency;
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::{ConnectSettings, Keyspace};
use std::time::Duration;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let only = |what: &str| std::env::args().any(|a| a == what);
    if !only("--sheets-only") {
        malls(&runtime);
    }
    if !only("--malls-only") {
        sheet_report::run(&runtime);
    }
}

fn malls(runtime: &tokio::runtime::Runtime) {
    // Cafe24's bucket is 40 calls leaking 2 a second; ten times its rate
    // keeps a run within minutes. SQS scans 120,000 messages; flood and
    // window are scaled down together (2,500 against 2,000, as 150,000
    // against 120,000), so the flood still hides what is queued behind it.
    let scale = Scale {
        hot_events: 2_500,
        quiet_malls: 50,
        quiet_seconds: 130,
        bucket: (40, 20.0),
        scan_window: 2_000,
        max_queued: 100,
        flood_concurrency: 64,
        limit: Duration::from_secs(400),
    };
    println!("# Noisy neighbour: one flooding mall among fifty quiet ones\n");
    println!(
        "On this machine ({} cores), the whole local stack (ingest → embedded FIFO queue choosing groups as SQS FIFO \
         does → pipe → state machine → steps; the catch-up worker for (c)) over a private redis-server and the \
         sandbox Cafe24. Scale: the hot mall sends {} webhooks for distinct new products, orders and customers (three FIFO \
         groups; 64 at a time, as fast as ingest takes them) 2 s into the run; the template's {} pipes; {} quiet malls send one each a second for {} s; every mall's bucket is \
         {} calls draining {}/s at the sandbox (Cafe24: 40 at 2/s; sluice keeps one unit of headroom); the queue \
         scans {} messages (SQS: 120,000); flow control defers a mall at {} messages in the queue.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        scale.hot_events,
        scenario::PIPE_COUNT,
        scale.quiet_malls,
        scale.quiet_seconds,
        scale.bucket.0,
        scale.bucket.1,
        scale.scan_window,
        scale.max_queued,
    );
    let outcomes: Vec<Outcome> = runtime.block_on(async {
        let redis = RedisProcess::start(ServerOptions::default()).expect("redis-server");
        let mut outcomes = Vec::new();
        let one = PipeConcurrency::OneBatchPerWorker;
        let scaled = PipeConcurrency::ScaleOut { max_batches: SCALED_OUT_BATCHES };
        let runs = [
            (Mode::Quiet, one),
            (Mode::Flood, one),
            (Mode::FloodWithFlowControl, one),
            (Mode::Flood, scaled),
            (Mode::FloodWithFlowControl, scaled),
        ];
        for (n, (mode, pipe)) in runs.into_iter().enumerate() {
            let conn = sluice_redis::connect(&ConnectSettings::new(redis.url())).await.expect("connect");
            let keyspace = Keyspace::new(format!("noisy{n}:")).expect("keyspace");
            outcomes.push(scenario::run(conn, keyspace, &scale, mode, pipe).await);
        }
        outcomes
    });
    println!(
        "| run | pipe | batches at once | quiet p50 | quiet p99 | quiet max | hot rate / bucket | FIFO depth max | Redis memory peak | sent | lost | upstream 429s | step throttles | deferred | fetches waiting in a pipe | handed over |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in &outcomes {
        println!(
            "| {} | {} | {} | {} ms | {} ms | {} ms | {} | {} | +{:.1} MiB | {} | {} | {} | {} | {} | {} | {} |",
            o.mode.label(),
            pipe_label(o.pipe),
            o.max_batches,
            o.quiet_percentile(0.5),
            o.quiet_percentile(0.99),
            o.quiet_percentile(1.0),
            if o.mode == Mode::Quiet { "–".to_owned() } else { format!("{:.2}", o.hot_rate_fraction) },
            o.max_depth,
            o.peak_memory as f64 / (1024.0 * 1024.0),
            o.sent,
            o.lost,
            o.refused_by_upstream,
            o.throttles,
            o.deferred,
            o.pipe_waits,
            o.handed_over,
        );
    }
    let [quiet, flood, controlled, scaled_flood, scaled_controlled] = &outcomes[..] else { unreachable!() };
    let p99 = |o: &Outcome| o.quiet_percentile(0.99).max(1) as f64;
    let depth_target = 1_000 + scale.quiet_malls as u64;
    println!("\nRatios and targets (issue #17):\n");
    println!(
        "- quiet p99 with the flood / without: {:.2} with flow control (target ≤ 2), {:.1} without it",
        p99(controlled) / p99(quiet),
        p99(flood) / p99(quiet)
    );
    println!("- hot mall's rate / its bucket's rate: {:.2} (target ≥ 0.95)", controlled.hot_rate_fraction);
    println!(
        "- FIFO depth at most {} with flow control (target ≤ 1,000 + the quiet traffic, here {}), {} without",
        controlled.max_depth, depth_target, flood.max_depth
    );
    println!(
        "- fetches that waited for the hot mall's bucket while holding a pipe: {} with flow control (handed over to \
         its dirty set instead: {}), {} without",
        controlled.pipe_waits, controlled.handed_over, flood.pipe_waits
    );
    println!(
        "- lost {}, upstream 429s {} with flow control (targets 0, 0); the hot mall's {} snapshots stored in {:.0} s",
        controlled.lost,
        controlled.refused_by_upstream,
        controlled.hot_stored,
        controlled.elapsed.as_secs_f64()
    );
    println!(
        "- with the pipe scaled out (up to {SCALED_OUT_BATCHES} batches at once; it ran at most {} and {}): quiet p99 \
         with the flood / without {:.2} with flow control, {:.1} without; hot rate / bucket {:.2}; lost {}, upstream \
         429s {}; step invocations throttled {} and {} (each step held to {} at once, the template's StepConcurrency)",
        scaled_controlled.max_batches,
        scaled_flood.max_batches,
        p99(scaled_controlled) / p99(quiet),
        p99(scaled_flood) / p99(quiet),
        scaled_controlled.hot_rate_fraction,
        scaled_controlled.lost + scaled_flood.lost,
        scaled_controlled.refused_by_upstream + scaled_flood.refused_by_upstream,
        scaled_controlled.throttles,
        scaled_flood.throttles,
        sluice_dev_stack::STEP_CONCURRENCY,
    );
}

/// Batches in flight at most when the pipe scales out: above the malls'
/// active FIFO groups here (54), so the groups, not the pipe, bound it, as
/// AWS's Pipes page describes for a FIFO source.
const SCALED_OUT_BATCHES: usize = 64;

fn pipe_label(pipe: PipeConcurrency) -> &'static str {
    match pipe {
        PipeConcurrency::OneBatchPerWorker => "one batch per pipe",
        PipeConcurrency::ScaleOut { .. } => "scaled out",
    }
}
