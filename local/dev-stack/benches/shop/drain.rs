//! Drain time of a burst of webhooks for one mall, against the
//! theoretical minimum the bucket allows, next to a fixed spacing between
//! calls (the "one call every 0.2 s" row) and next to no limiter.

use crate::rig::{Rig, fields, send_updates};
use sluice_cafe24::{Cafe24Client, FetchOutcome};
use sluice_domain::ResourceKind;
use sluice_sandbox::cafe24::BucketConfig;
use sluice_testkit::sandbox::{cafe24_client, grant};
use std::sync::Arc;
use std::time::{Duration, Instant};

const N: usize = 140;
const CAPACITY: u32 = 40;
const DRAIN: f64 = 20.0;

pub(crate) async fn run() {
    let malls = ["burst", "spaced", "unlimited"].map(String::from);
    let rig = Rig::start(&malls, BucketConfig::new(CAPACITY, DRAIN)).await;
    let minimum = (N as f64 - f64::from(CAPACITY)) / DRAIN;
    let mut ids = std::collections::HashMap::new();
    for mall in &malls {
        let mut list = Vec::new();
        for i in 0..N {
            list.push(rig.sandbox.create(mall, ResourceKind::Product, fields(i)).await.expect("create").id);
        }
        ids.insert(mall.clone(), list);
    }

    // sluice: the burst arrives as webhooks, one per product; the pipeline
    // drains it through the mall's bucket.
    rig.connect_webhooks();
    let started = Instant::now();
    // Drained: every product fetched as changed, the last call answered
    // (what the minimum and the other rows measure too). The queues go
    // idle a little later: a catch-up request that found the mall's run busy
    // comes back after a second to find nothing left (`idle` below).
    let fetched = async {
        while calls(&rig, "burst") < N {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        started.elapsed()
    };
    let (ours, ()) = tokio::join!(fetched, send_updates(&rig.sandbox, "burst", ids["burst"].clone(), 16));
    rig.wait_drained(Duration::from_secs(120)).await;
    let idle = started.elapsed();
    let ours_calls = calls(&rig, "burst");
    let ours_429 = refused(&rig, "burst");
    rig.sandbox.set_webhook_target(None);

    let client = cafe24_client(&rig.sandbox);
    let spaced = spaced(&rig, &client, &ids["spaced"]).await;
    let (unlimited, unlimited_429) = unlimited(&rig, &client, &ids["unlimited"]).await;

    println!("## 1. Draining a burst of {N} webhooks for one mall (sandbox bucket {CAPACITY} at {DRAIN}/s)\n");
    println!("Theoretical minimum: ({N} − {CAPACITY}) / {DRAIN} = {minimum:.2} s.\n");
    println!("| approach | drain time | ÷ minimum | upstream 429s |");
    println!("|---|---:|---:|---:|");
    let ratio = ours.as_secs_f64() / minimum;
    println!(
        "| sluice: webhooks → ingest → queue → state machine → fetch in the GCRA budget ({ours_calls} calls; every \
         queue idle after {:.2} s) | {:.2} s | {ratio:.3} | {ours_429} |",
        idle.as_secs_f64(),
        ours.as_secs_f64()
    );
    println!("| one call every 0.2 s | {:.2} s | {:.3} | 0 |", spaced.as_secs_f64(), spaced.as_secs_f64() / minimum);
    println!(
        "| no limiter: 16 at once, each 429 retried after 1 s | {:.2} s | {:.3} | {unlimited_429} |",
        unlimited.as_secs_f64(),
        unlimited.as_secs_f64() / minimum
    );
    let met = ratio <= 1.05 && ours_429 == 0;
    println!("\nTarget: ≤ 1.05 with zero 429s: {ratio:.3} with {ours_429}, {}.\n", if met { "met" } else { "MISSED" });
    rig.stop().await;
}

fn calls(rig: &Rig, mall: &str) -> usize {
    rig.sandbox.calls().iter().filter(|c| c.mall_id == mall && c.path.contains("/admin/")).count()
}

fn refused(rig: &Rig, mall: &str) -> usize {
    rig.sandbox.calls().iter().filter(|c| c.mall_id == mall && c.refused.is_some()).count()
}

/// A fixed-pace worker: one call after another, 0.2 s apart (sized for
/// Cafe24's 5/s drain, whatever the bucket holds).
async fn spaced(rig: &Rig, client: &Cafe24Client, ids: &[String]) -> Duration {
    let token = grant(&rig.sandbox, "spaced").access_token;
    let started = Instant::now();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let outcome = client.fetch("spaced", ResourceKind::Product, id, &token).await;
        assert!(matches!(outcome, FetchOutcome::Found(_)), "{outcome}");
    }
    started.elapsed()
}

/// No limiter: as fast as 16 workers go; a 429 is retried after 1 s.
async fn unlimited(rig: &Rig, client: &Cafe24Client, ids: &[String]) -> (Duration, usize) {
    let token = grant(&rig.sandbox, "unlimited").access_token;
    let ids = Arc::new(ids.to_vec());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (client, token, ids, next) = (client.clone(), token.clone(), ids.clone(), next.clone());
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(id) = ids.get(i) else { break };
                while let FetchOutcome::Throttled { .. } =
                    client.fetch("unlimited", ResourceKind::Product, id, &token).await
                {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    (started.elapsed(), refused(rig, "unlimited"))
}
