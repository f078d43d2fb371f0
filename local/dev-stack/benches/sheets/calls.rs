//! API calls per 1,000 rows: a burst of 1,000 submissions from 100 clients,
//! through sluice and through the seeds' one-append-per-submission design,
//! both run for real against the sandbox under the same quota.
//!
//! The quota is Google's (60 writes per user, 300 per project) with its
//! window scaled from 60 s to [`QUOTA_WINDOW`]: the one-call design needs
//! 1,000 calls, ≥ 16 full windows, which at 60 s would be a 17-minute run.
//! Both designs get the same scaled quota (sluice's limiter is told the same
//! window), so calls and 429s compare as they are, and times in windows.

use crate::rig::{DOC, Rig};
use sluice_pipeline::SheetConfig;
use sluice_sandbox::{SheetsOp, SheetsSandboxConfig};
use sluice_sheets::values::ValueInputOption;
use sluice_sheets::{Outcome, SheetsClient};
use sluice_testkit::sandbox::sheets_config;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROWS: usize = 1_000;
const CLIENTS: usize = 100;
const QUOTA_WINDOW: Duration = Duration::from_secs(2);
/// Google's own window, which QUOTA_WINDOW stands for.
const GOOGLE_WINDOW: Duration = Duration::from_secs(60);

/// What the sandbox saw of one design's burst.
struct Seen {
    appends: usize,
    throttled: usize,
    /// Rows in the sheet at the end, and how long until then.
    rows: usize,
    visible: Duration,
}

fn quota() -> SheetsSandboxConfig {
    SheetsSandboxConfig { quota_window: QUOTA_WINDOW, ..SheetsSandboxConfig::default() }
}

fn seen(rig: &Rig, visible: Duration) -> Seen {
    let calls = rig.sandbox.calls();
    Seen {
        appends: calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend).count(),
        throttled: calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.status == 429).count(),
        rows: rig.rows(),
        visible,
    }
}

async fn sluice() -> Seen {
    let settings = SheetConfig {
        per_credential: (60, QUOTA_WINDOW),
        per_project: (300, QUOTA_WINDOW),
        read_per_credential: (60, QUOTA_WINDOW),
        read_per_project: (300, QUOTA_WINDOW),
        ..SheetConfig::default()
    };
    let rig = Arc::new(Rig::start("bench_calls", quota(), settings).await);
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
    let result = seen(&rig, started.elapsed());
    if let Ok(rig) = Arc::try_unwrap(rig) {
        rig.stop().await;
    }
    result
}

/// One append per submission: each submission appends its own row at once. As they
/// shipped (`retry` false), a 429 lost the row. With `retry`, a 429 is
/// retried with Google's documented truncated exponential backoff (1 s,
/// 2 s, 4 s … ≤ 64 s, plus up to 1 s of jitter), scaled like the quota, so
/// every row lands and its time to visible can be measured.
async fn one_call_per_row(retry: bool) -> Seen {
    let name = if retry { "bench_calls_retry" } else { "bench_calls_seed" };
    let rig = Rig::start(name, quota(), SheetConfig::default()).await;
    let client = SheetsClient::new(sheets_config(&rig.sandbox, "client", "secret")).expect("client");
    let refresh = rig.sandbox.add_user("client", "seed-user");
    let token = client.refresh(&sluice_cafe24::Secret::new(refresh)).await.expect("token").access_token;
    // The seeds appended to a range named by the sheet's title; our client
    // looks the title up once (a read) and caches it: look it up before
    // the burst, so the burst is appends only, as theirs was.
    client.sheet_title(&token, DOC, 0).await.ok().expect("sheet title");
    let scale = QUOTA_WINDOW.as_secs_f64() / GOOGLE_WINDOW.as_secs_f64();
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (client, token) = (client.clone(), token.clone());
        calls.spawn(async move {
            for i in (c..ROWS).step_by(CLIENTS) {
                let row = vec![serde_json::json!(format!("row-{i:05}"))];
                for attempt in 0.. {
                    match client.append(&token, DOC, 0, std::slice::from_ref(&row), ValueInputOption::UserEntered).await
                    {
                        Outcome::Ok(_) => break,
                        Outcome::Throttled { .. } if !retry => break,
                        Outcome::Throttled { .. } => {
                            let backoff = (2f64.powi(attempt.min(6)) + rand::random::<f64>()).min(64.0);
                            tokio::time::sleep(Duration::from_secs_f64(backoff * scale)).await;
                        }
                        other => panic!("one-call design: append failed: {other:?}"),
                    }
                }
            }
        });
    }
    while calls.join_next().await.is_some() {}
    // An append that succeeded is in the sheet when its answer comes.
    let result = seen(&rig, started.elapsed());
    assert!(!retry || result.rows == ROWS, "one-call design with retries: rows missing");
    rig.stop().await;
    result
}

pub(crate) async fn run() {
    println!("## 1. API calls per 1,000 rows (a burst from {CLIENTS} clients)\n");
    let ours = sluice().await;
    let shipped = one_call_per_row(false).await;
    let seed = one_call_per_row(true).await;
    println!(
        "Every design runs against the sandbox with Google's quota (60 writes per user, 300 per project) over a \
         window scaled from {} s to {} s, so the one-call design's run takes seconds, not minutes; calls, 429s and \
         rows are the sandbox's own count.\n",
        GOOGLE_WINDOW.as_secs(),
        QUOTA_WINDOW.as_secs_f64()
    );
    println!(
        "| design | append calls | per 1,000 rows | 429s (appends) | rows in the sheet | all visible after | in quota windows |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let per_window = |d: Duration| d.as_secs_f64() / QUOTA_WINDOW.as_secs_f64();
    for (label, s) in [
        ("sluice: buffer + adaptive batching", &ours),
        ("one append per submission, as shipped (a 429 loses the row)", &shipped),
        ("one append per submission, 429s retried with backoff", &seed),
    ] {
        let (visible, windows) = if s.rows == ROWS {
            (format!("{:.1} s", s.visible.as_secs_f64()), format!("{:.1}", per_window(s.visible)))
        } else {
            ("never".to_owned(), String::new())
        };
        println!(
            "| {label} | {} | {:.1} | {} | {} | {visible} | {windows} |",
            s.appends,
            s.appends as f64 * 1000.0 / ROWS as f64,
            s.throttled,
            s.rows
        );
    }
    println!(
        "\nsluice / one append per submission with retries: {:.4}× the calls, {:.3}× the time to visible. \
         Target ≤ 2 calls per 1,000 rows: {}.\n",
        ours.appends as f64 / seed.appends.max(1) as f64,
        ours.visible.as_secs_f64() / seed.visible.as_secs_f64(),
        if ours.appends * 1000 <= 2 * ROWS { "met" } else { "MISSED" }
    );
}
