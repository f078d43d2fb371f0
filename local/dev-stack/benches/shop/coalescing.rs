//! Coalescing: how many upstream calls 10,000 webhooks over 500 products
//! cost, next to one call per webhook.

use crate::per_webhook::RunCounts;
use crate::rig::{Rig, fields, send_updates};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use sluice_domain::ResourceKind;
use sluice_sandbox::cafe24::BucketConfig;
use std::time::{Duration, Instant};

const WEBHOOKS: usize = 10_000;
const PRODUCTS: usize = 500;

/// One run of the workload: upstream calls, and what it made each part do.
struct Run {
    counts: RunCounts,
    sending: Duration,
    drained: Duration,
    coalesced: u64,
    duplicates: u64,
}

/// Also answers what the runs made each part do, for section 4: with flow
/// control (as deployed), then without it (every budget wait in the state
/// machine's Wait states, the shape flow control replaced).
pub(crate) async fn run() -> (RunCounts, RunCounts) {
    let on = workload(true).await;
    let off = workload(false).await;
    println!("## 2. Coalescing: {WEBHOOKS} webhooks over {PRODUCTS} products of one mall (bucket 40 at 20/s)\n");
    println!("| | upstream calls | per webhook | drained after |");
    println!("|---|---:|---:|---:|");
    println!("| one fetch per webhook (no coalescing) | {WEBHOOKS} | 1.000 | |");
    for (what, run) in [
        ("sluice: a webhook for a product whose fetch is pending joins it", &on),
        ("the same without flow control (budget waits in the state machine)", &off),
    ] {
        let calls = run.counts.fetches;
        println!("| {what} | {calls} | {:.3} | {:.1} s |", calls as f64 / WEBHOOKS as f64, run.drained.as_secs_f64());
    }
    println!(
        "\nWith flow control: sent by 64 clients in {:.1} s, {} enqueued, {} coalesced, {} duplicates. Target ≤ 600 \
         upstream calls: {}.\n",
        on.sending.as_secs_f64(),
        on.counts.enqueued,
        on.coalesced,
        on.duplicates,
        if on.counts.fetches <= 600 { "met" } else { "MISSED" }
    );
    (on.counts, off.counts)
}

async fn workload(flow_control: bool) -> Run {
    let malls = vec!["busy".to_owned()];
    // A bucket of 40 leaking 20 per second: the fetches of one mall queue
    // up behind it, which is when coalescing pays.
    let rig = Rig::start_with(&malls, BucketConfig::new(40, 20.0), flow_control).await;
    let mut ids = Vec::new();
    for i in 0..PRODUCTS {
        ids.push(rig.sandbox.create("busy", ResourceKind::Product, fields(i)).await.expect("create").id);
    }
    let mut rng = StdRng::seed_from_u64(11);
    let edits: Vec<String> = (0..WEBHOOKS).map(|_| ids[rng.random_range(0..PRODUCTS)].clone()).collect();
    rig.connect_webhooks();
    let before = rig.stack.executions.counts();
    let commands_before = rig.redis_commands().await;
    let started = Instant::now();
    send_updates(&rig.sandbox, "busy", edits, 64).await;
    let sending = started.elapsed();
    rig.wait_drained(Duration::from_secs(300)).await;
    let drained = started.elapsed();
    let ingest = rig.stack.ingest.snapshot();
    let calls = rig.sandbox.counters().ok;
    let counts = RunCounts {
        webhooks: WEBHOOKS as u64,
        enqueued: ingest.enqueued,
        fetches: calls,
        executions: rig.stack.executions.counts().since(before),
        redis_commands: rig.redis_commands().await - commands_before,
        catch_up_runs: rig.stack.catch_up.runs.load(std::sync::atomic::Ordering::Relaxed),
    };
    rig.stop().await;
    Run { counts, sending, drained, coalesced: ingest.coalesced, duplicates: ingest.duplicates }
}
