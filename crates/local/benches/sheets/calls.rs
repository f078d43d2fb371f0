//! API calls per 1,000 rows: a burst of 1,000 submissions from 100 clients.

use crate::rig::{DOC, Rig, USER};
use sluice_pipeline::SheetConfig;
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use sluice_sheets::SheetsClient;
use sluice_sheets::values::ValueInputOption;
use sluice_testkit::sandbox::sheets_config;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROWS: usize = 1_000;
const CLIENTS: usize = 100;

pub(crate) async fn run() {
    println!("## 1. API calls per 1,000 rows (a burst from {CLIENTS} clients)\n");
    let rig = Arc::new(Rig::start("bench_calls", SheetsSandboxConfig::default(), SheetConfig::default()).await);
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let rig = rig.clone();
        clients.spawn(async move {
            for i in (c..ROWS).step_by(CLIENTS) {
                rig.send(&format!("row-{i:05}")).await;
            }
        });
    }
    while clients.join_next().await.is_some() {}
    assert!(rig.wait_rows(ROWS, Duration::from_secs(120)).await, "rows missing");
    let elapsed = started.elapsed();
    let ours = rig.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend).count();
    let throttled = rig.sandbox.calls().iter().filter(|c| c.status == 429).count();
    if let Ok(rig) = Arc::try_unwrap(rig) {
        rig.stop().await;
    }

    // The baseline (`seeds 000/001` in the table): each submission appends
    // its own row, straight away.
    let baseline = Rig::start("bench_calls_seed", SheetsSandboxConfig::default(), SheetConfig::default()).await;
    let client = SheetsClient::new(sheets_config(&baseline.sandbox, "client", "secret")).expect("client");
    let refresh = baseline.sandbox.add_user("client", "seed-user");
    let token = client.refresh(&sluice_cafe24::Secret::new(refresh)).await.expect("token").access_token;
    let mut calls = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (client, token) = (client.clone(), token.clone());
        calls.spawn(async move {
            let mut refused = 0;
            for i in (c..ROWS).step_by(CLIENTS) {
                let row = vec![serde_json::json!(format!("row-{i:05}"))];
                let outcome = client.append(&token, DOC, 0, &[row], ValueInputOption::UserEntered).await;
                if outcome.ok().is_none() {
                    refused += 1;
                }
            }
            refused
        });
    }
    let mut seed_lost = 0;
    while let Some(refused) = calls.join_next().await {
        seed_lost += refused.unwrap_or(0);
    }
    // One call per submission, by design.
    let seed_calls = ROWS;
    baseline.stop().await;

    println!("| design | append calls | per 1,000 rows | rows refused (429) |");
    println!("|---|---:|---:|---:|");
    println!(
        "| sluice: buffer + adaptive batching | {ours} | {:.1} | {throttled} |",
        ours as f64 * 1000.0 / ROWS as f64
    );
    println!(
        "| seeds 000/001: one append per submission | {seed_calls} | {:.1} | {seed_lost} |",
        seed_calls as f64 * 1000.0 / ROWS as f64
    );
    println!(
        "\nsluice / seed: {:.4}× the calls. All {ROWS} rows in the sheet {:.1} s after the first was sent. \
         Target ≤ 2 calls per 1,000 rows: {}.\n",
        ours as f64 / seed_calls.max(1) as f64,
        elapsed.as_secs_f64(),
        if ours * 1000 <= 2 * ROWS { "met" } else { "MISSED" }
    );
    let _ = USER;
}
