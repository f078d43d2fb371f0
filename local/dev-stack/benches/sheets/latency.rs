//! A single row's latency at low load: from its POST until it is in the
//! sheet, one row at a time.

use crate::rig::{Rig, has_id};
use sluice_pipeline::SheetConfig;
use sluice_sandbox::SheetsSandboxConfig;
use std::time::{Duration, Instant};

async fn samples(rig: &Rig, n: usize, prefix: &str) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        let started = Instant::now();
        rig.send(&id).await;
        let until = started + Duration::from_secs(30);
        loop {
            let values = rig.sandbox.sheet_values(crate::rig::DOC, 0).unwrap_or_default();
            if values.iter().any(|row| has_id(row, &id)) {
                break;
            }
            assert!(Instant::now() < until, "row {id} never arrived");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        out.push(started.elapsed());
        // Low load: the next row comes after the quota's spacing.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    out.sort();
    out
}

fn p50(samples: &[Duration]) -> Duration {
    samples[samples.len() / 2]
}

pub(crate) async fn run() {
    println!("## 2. A single row's latency at low load, until it is in the sheet\n");
    let ours = Rig::start("bench_latency", SheetsSandboxConfig::default(), SheetConfig::default()).await;
    let fast = samples(&ours, 15, "ours").await;
    ours.stop().await;
    let seed_settings =
        SheetConfig { flush_threshold: 500, max_delay: Duration::from_secs(10), ..SheetConfig::default() };
    let seed = Rig::start("bench_latency_seed", SheetsSandboxConfig::default(), seed_settings).await;
    let slow = samples(&seed, 3, "seed").await;
    seed.stop().await;
    println!("| design | samples | p50 | max |");
    println!("|---|---:|---:|---:|");
    println!(
        "| sluice: flush at once when the quota allows | {} | {:.3} s | {:.3} s |",
        fast.len(),
        p50(&fast).as_secs_f64(),
        fast[fast.len() - 1].as_secs_f64()
    );
    println!(
        "| batches of 500 rows or 10 s: 500-row threshold, 10 s delay | {} | {:.3} s | {:.3} s |",
        slow.len(),
        p50(&slow).as_secs_f64(),
        slow[slow.len() - 1].as_secs_f64()
    );
    println!(
        "\nsluice / seed p50: {:.3}×. Target p50 ≤ 1 s: {}.\n",
        p50(&fast).as_secs_f64() / p50(&slow).as_secs_f64(),
        if p50(&fast) <= Duration::from_secs(1) { "met" } else { "MISSED" }
    );
}
