//! Coalescing: how many upstream calls 10,000 webhooks over 500 products
//! cost, next to one call per webhook.

use crate::per_webhook::{RunCounts, difference};
use crate::rig::{Rig, fields, send_updates};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use sluice_domain::ResourceKind;
use sluice_sandbox::cafe24::BucketConfig;
use std::time::{Duration, Instant};

const WEBHOOKS: usize = 10_000;
const PRODUCTS: usize = 500;

/// Also answers what the run made each part do, for section 4.
pub(crate) async fn run() -> RunCounts {
    let malls = vec!["busy".to_owned()];
    // A bucket of 40 draining 20 per second: the fetches of one mall queue
    // up behind it, which is when coalescing pays.
    let rig = Rig::start(&malls, BucketConfig::new(40, 20.0)).await;
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
        executions: difference(rig.stack.executions.counts(), before),
        redis_commands: rig.redis_commands().await - commands_before,
        mall_drain_runs: rig.stack.mall_drain.runs.load(std::sync::atomic::Ordering::Relaxed),
    };
    println!("## 2. Coalescing: {WEBHOOKS} webhooks over {PRODUCTS} products of one mall (bucket 40 at 20/s)\n");
    println!("| | upstream calls | per webhook |");
    println!("|---|---:|---:|");
    println!("| one fetch per webhook (no coalescing) | {WEBHOOKS} | 1.000 |");
    println!(
        "| sluice: a webhook for a product whose fetch is pending joins it | {calls} | {:.3} |",
        calls as f64 / WEBHOOKS as f64
    );
    println!(
        "\nSent by 64 clients in {:.1} s, drained after {:.1} s: {} enqueued, {} coalesced, {} duplicates. \
         Target ≤ 600 upstream calls: {}.\n",
        sending.as_secs_f64(),
        drained.as_secs_f64(),
        ingest.enqueued,
        ingest.coalesced,
        ingest.duplicates,
        if calls <= 600 { "met" } else { "MISSED" }
    );
    rig.stop().await;
    counts
}
