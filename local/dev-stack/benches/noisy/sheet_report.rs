//! bench/noisy.md's sheet section: one sheet is sent a burst of rows among
//! quiet sheets, (d) without the burst, (e) with it and one message per
//! row (the design before flow control per sheet), (f) with it and flow
//! control per sheet. See `sheet_scenario`.

use crate::sheet_scenario::{self, SheetMode, SheetOutcome, SheetScale, percentile};
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::{ConnectSettings, Keyspace};
use std::time::Duration;

pub(crate) fn run(runtime: &tokio::runtime::Runtime) {
    // SQS FIFO scans 120,000 messages; a burst of 200,000 rows is scaled
    // down with the window (10,000 against 6,000: 1/20), so the burst
    // still hides what is queued behind it. Google's minute is 6 s here:
    // the quotas' counts stay 60 per user and 300 per project.
    let scale = SheetScale {
        hot_rows: 10_000,
        burst_clients: 32,
        burst_after: Duration::from_secs(5),
        quiet_sheets: 20,
        quiet_interval: Duration::from_secs(1),
        quiet_for: Duration::from_secs(70),
        scan_window: 6_000,
        max_queued: 100,
        quota_window: Duration::from_secs(6),
        limit: Duration::from_secs(300),
    };
    println!("\n# Noisy neighbour: one flooding sheet among twenty quiet ones\n");
    println!(
        "The same stack (ingest → embedded FIFO queue choosing groups as SQS FIFO does → pipe → state machine → \
         buffer step → flush worker) and the sandbox Google Sheets. Scale: the hot sheet is sent {} rows by {} \
         clients at once (each one request after another, as fast as ingest answers) {} s into the run; {} quiet \
         sheets, each with its own credential, are sent one row every {} ms for {} s; Google's quotas (60 writes \
         per user, 300 per project) hold over {} s instead of a minute; the queue scans {} messages (SQS: \
         120,000; 200,000 rows against it would be 1/20 of this scale's {} against {}); flow control per sheet \
         holds a sheet's rows at {} rows in the queue. A quiet row's latency runs from its INIT to its \
         COMPLETED; \"during\" is the quiet rows sent from the burst's start until the hot sheet held every row.\n",
        scale.hot_rows,
        scale.burst_clients,
        scale.burst_after.as_secs(),
        scale.quiet_sheets,
        scale.quiet_interval.as_millis(),
        scale.quiet_for.as_secs(),
        scale.quota_window.as_secs(),
        scale.scan_window,
        scale.hot_rows,
        scale.scan_window,
        scale.max_queued,
    );
    let outcomes: Vec<SheetOutcome> = runtime.block_on(async {
        let redis = RedisProcess::start(ServerOptions::default()).expect("redis-server");
        let mut outcomes = Vec::new();
        let modes = [SheetMode::Quiet, SheetMode::Burst, SheetMode::BurstWithOverflow];
        for (n, mode) in modes.into_iter().enumerate() {
            let conn = sluice_redis::connect(&ConnectSettings::new(redis.url())).await.expect("connect");
            let keyspace = Keyspace::new(format!("noisysheet{n}:")).expect("keyspace");
            outcomes.push(sheet_scenario::run(conn, keyspace, &scale, mode).await);
        }
        outcomes
    });
    println!(
        "| run | quiet p50 | quiet p99 | quiet max | quiet p99 before / during the burst | hot sheet landed | FIFO depth max | sent | lost | duplicated | out of order | headers wrong | upstream 429s | overflowed | run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in &outcomes {
        let burst = o.mode != SheetMode::Quiet;
        println!(
            "| {} | {} ms | {} ms | {} ms | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} s |",
            o.mode.label(),
            percentile(&o.quiet_ms, 0.5),
            percentile(&o.quiet_ms, 0.99),
            percentile(&o.quiet_ms, 1.0),
            if burst {
                format!(
                    "{} ms / {} ms",
                    percentile(&o.quiet_before_burst_ms, 0.99),
                    percentile(&o.quiet_during_burst_ms, 0.99)
                )
            } else {
                "–".into()
            },
            if burst { format!("{:.1} s", o.hot_landed.as_secs_f64()) } else { "–".into() },
            o.max_depth,
            o.sent,
            o.lost,
            o.duplicated,
            o.out_of_order.len(),
            o.bad_headers,
            o.upstream_429s,
            o.overflowed,
            o.elapsed.as_secs_f64(),
        );
    }
    let [quiet, burst, overflow] = &outcomes[..] else { unreachable!() };
    let p99 = |v: &[u64]| percentile(v, 0.99).max(1) as f64;
    println!("\nRatios and targets (issue #17 item 3):\n");
    println!(
        "- quiet p99 during the burst / without a burst: {:.2} with flow control per sheet (target ≤ 2), {:.1} \
         with one message per row",
        p99(&overflow.quiet_during_burst_ms) / p99(&quiet.quiet_ms),
        p99(&burst.quiet_during_burst_ms) / p99(&quiet.quiet_ms),
    );
    println!(
        "- FIFO depth at most {} with flow control per sheet (the hot sheet's {} + the quiet sheets' rows in \
         flight), {} with one message per row",
        overflow.max_depth, scale.max_queued, burst.max_depth
    );
    println!(
        "- the hot sheet's {} rows all in the sheet {:.1} s after the burst began with flow control per sheet, \
         {:.1} s with one message per row",
        scale.hot_rows,
        overflow.hot_landed.as_secs_f64(),
        burst.hot_landed.as_secs_f64()
    );
    println!(
        "- lost {}, duplicated {}, out of order {}, upstream 429s {} with flow control per sheet (targets 0)",
        overflow.lost,
        overflow.duplicated,
        overflow.out_of_order.len(),
        overflow.upstream_429s
    );
}
