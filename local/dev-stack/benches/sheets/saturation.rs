//! Sustained rows/min per credential at saturation: rows arrive faster
//! than the quota can carry, so every call should be used and full. The
//! quota is scaled (10 calls per 10 s, 20 rows per call) so the run takes
//! seconds; the ratio is what Google's 60 per 60 s × 5,000 rows would give.

use crate::rig::Rig;
use sluice_pipeline::SheetConfig;
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const CALLS: u32 = 10;
const WINDOW: Duration = Duration::from_secs(10);
const ROWS_PER_CALL: usize = 20;
const RUN: Duration = Duration::from_secs(30);

async fn measure(name: &str, settings: SheetConfig) -> (f64, usize) {
    let sandbox = SheetsSandboxConfig { write_per_user: CALLS, quota_window: WINDOW, ..SheetsSandboxConfig::default() };
    let rig = Arc::new(Rig::start(name, sandbox, settings).await);
    let stop = Arc::new(AtomicBool::new(false));
    // Twice the rows the quota can carry, from 8 clients.
    let per_second = 2.0 * f64::from(CALLS) * ROWS_PER_CALL as f64 / WINDOW.as_secs_f64();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..8 {
        let (rig, stop) = (rig.clone(), stop.clone());
        clients.spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                rig.send(&format!("c{c}-{i}")).await;
                i += 1;
                tokio::time::sleep(Duration::from_secs_f64(8.0 / per_second)).await;
            }
        });
    }
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    while clients.join_next().await.is_some() {}
    // Steady state: the last 20 s of the run, from the sandbox's record.
    let calls = rig.sandbox.calls();
    let end = calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend).map(|c| c.at).max().unwrap_or_default();
    let from = end.saturating_sub(Duration::from_secs(20));
    let rows: usize =
        calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.applied && c.at > from).map(|c| c.rows).sum();
    let throttled = calls.iter().filter(|c| c.status == 429).count();
    if let Ok(rig) = Arc::try_unwrap(rig) {
        rig.stop().await;
    }
    (rows as f64 * 60.0 / 20.0, throttled)
}

pub(crate) async fn run() {
    println!("## 3. Sustained rows/min per credential at saturation\n");
    let limit = f64::from(CALLS) * (60.0 / WINDOW.as_secs_f64()) * ROWS_PER_CALL as f64;
    let scaled =
        |settings: SheetConfig| SheetConfig { per_credential: (CALLS, WINDOW), max_rows: ROWS_PER_CALL, ..settings };
    let (ours, ours_429) = measure("bench_saturation", scaled(SheetConfig::default())).await;
    let seed = SheetConfig { flush_threshold: 500, max_delay: Duration::from_secs(10), ..SheetConfig::default() };
    let (seeds, seed_429) = measure("bench_saturation_seed", scaled(seed)).await;
    println!(
        "Limit: {CALLS} calls per {} s × {ROWS_PER_CALL} rows per call = {limit:.0} rows/min.\n",
        WINDOW.as_secs()
    );
    println!("| design | rows/min | ÷ limit | 429s |");
    println!("|---|---:|---:|---:|");
    println!("| sluice | {ours:.0} | {:.3} | {ours_429} |", ours / limit);
    println!("| a flush at 500 rows or 10 s | {seeds:.0} | {:.3} | {seed_429} |", seeds / limit);
    println!("\nTarget ≥ 0.9 of the limit: {}.\n", if ours / limit >= 0.9 { "met" } else { "MISSED" });
}
