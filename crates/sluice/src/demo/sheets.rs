//! `sluice demo sheets` (run by `make run` after the shop demo): a burst of
//! form submissions against Google's write quotas, live. 1,000 submissions
//! from 100 concurrent clients over HTTP to one Google Sheet, then 1,000
//! more spread over five sheets of the same credential, through the whole
//! local stack (ingest → FIFO queue → state machine → buffer → flush)
//! against the sandbox Google Sheets, which enforces Google's 60 writes/min
//! per user and 300 per project. Then it checks every sheet: the header
//! once, every row exactly once, and prints the calls used and the most in
//! any 60 s window.

use super::sheet_report::{SheetCheck, print_calls};
use crate::functions_args::{FunctionsArgs, describe};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use sluice_cafe24::{Cafe24Config, Secret};
use sluice_dev_stack::{DevConfig, DevStack, FunctionsMode};
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_redis::Keyspace;
use sluice_sandbox::{SheetsSandbox, SheetsSandboxConfig};
use sluice_sheets::SheetsConfig;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CLIENT_ID: &str = "demo-client";
const CREDENTIAL: &str = "demo-credential";
pub(crate) const SPREADSHEET: &str = "demo-spreadsheet";
pub(crate) const HEADER: [&str; 3] = ["submission", "name", "email"];

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Submissions to the one sheet.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    rows: u32,
    /// Submissions spread over the other sheets.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    spread_rows: u32,
    /// Sheets of the same credential the spread goes to.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    sheets: u32,
    /// Concurrent clients sending them.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    clients: u32,
    /// Give up waiting for the rows after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    #[command(flatten)]
    functions: FunctionsArgs,
}

pub(crate) async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let redis = args.functions.redis_target()?;
    let conn = redis.connect().await?;
    let sandbox = SheetsSandbox::start(SheetsSandboxConfig::default()).await.context("Sheets sandbox")?;
    let client_secret = format!("{:032x}", rand::random::<u128>());
    sandbox.add_client(CLIENT_ID, &client_secret);
    let refresh_token = sandbox.add_user(CLIENT_ID, CREDENTIAL);
    let mut sheets = vec![(0u64, "Submissions".to_owned())];
    sheets.extend((1..=u64::from(args.sheets)).map(|gid| (gid, format!("Spread {gid}"))));
    let titles: Vec<(u64, &str)> = sheets.iter().map(|(gid, title)| (*gid, title.as_str())).collect();
    sandbox.create_spreadsheet(SPREADSHEET, &titles);

    let api_key = format!("demo-{:032x}", rand::random::<u128>());
    // The demo's key may write rows for its one credential and spreadsheet
    // only, as a form's key should (docs/security.md).
    let keys_secret = serde_json::json!({
        "sheets": [{"key": api_key, "credentials": [CREDENTIAL], "spreadsheets": [SPREADSHEET]}]
    })
    .to_string();
    let functions = args.functions.mode(&redis, &keys_secret)?;
    let described = describe(&functions);
    let stack = start_stack(conn, &sandbox, &client_secret, &keys_secret, functions).await?;
    stack.sheet.set_google_credential(CREDENTIAL, &Secret::new(refresh_token), None).await.map_err(crate::cause)?;
    println!("Redis: {}", redis.description);
    println!("Google Sheets sandbox: {} (60 writes/min per user, 300 per project)", sandbox.base_url());
    for (what, url) in &stack.urls {
        println!("{what}: {url}");
    }
    println!("Functions: {described}");
    let rows_url = stack.urls.iter().find(|(w, _)| *w == "Sheet rows").map(|(_, u)| u.clone()).unwrap_or_default();

    let mut checks = Vec::new();
    println!("\n1. {} clients send {} submissions to one sheet...", args.clients, args.rows);
    let one: Vec<(String, u64)> = (0..args.rows).map(|i| (format!("one-{i:05}"), 0)).collect();
    checks.push(phase(&sandbox, &rows_url, &api_key, &one, &args).await?);
    if args.spread_rows > 0 {
        println!(
            "\n2. {} clients send {} submissions spread over {} sheets...",
            args.clients, args.spread_rows, args.sheets
        );
        let spread: Vec<(String, u64)> =
            (0..args.spread_rows).map(|i| (format!("spread-{i:05}"), 1 + u64::from(i % args.sheets))).collect();
        checks.push(phase(&sandbox, &rows_url, &api_key, &spread, &args).await?);
    }
    let ok = checks.iter().all(SheetCheck::ok) && print_calls(&sandbox, CREDENTIAL);
    // Every row was buffered, so `sluice status` sees nothing waiting.
    let (groups, _) = stack.shop.core().group_ledger().lagging(usize::MAX).await?;
    let waiting: u64 = groups.iter().map(|g| g.pending).sum();
    println!("   rows `sluice status` still sees waiting in the queue: {waiting}");
    let ok = ok && waiting == 0;
    let dead = stack.flush_dead_letters().await?;
    stack.stop().await?;
    sandbox.stop().await;
    if dead.visible + dead.in_flight > 0 {
        println!("FAIL: {} flush requests in the flush dead-letter queue", dead.visible + dead.in_flight);
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "\n{}",
        if ok { "OK: every row exactly once, the header once, within Google's quotas." } else { "FAILED" }
    );
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Sends `rows` (row id, sheet gid), waits for them in the sandbox and
/// checks every sheet they went to.
async fn phase(
    sandbox: &SheetsSandbox,
    url: &str,
    api_key: &str,
    rows: &[(String, u64)],
    args: &Args,
) -> anyhow::Result<SheetCheck> {
    let started = Instant::now();
    let refused = send_all(url, api_key, rows, args.clients as usize).await?;
    println!("   sent in {:.1} s ({refused} refused)", started.elapsed().as_secs_f64());
    let deadline = started + Duration::from_secs(args.timeout);
    let check = loop {
        let check = SheetCheck::gather(sandbox, rows);
        if check.complete() || Instant::now() > deadline {
            break check;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("   all in the sheets after {:.1} s", started.elapsed().as_secs_f64());
    check.print();
    Ok(check)
}

/// Each client takes the next row and POSTs it until none are left.
/// Returns how many were refused.
async fn send_all(url: &str, api_key: &str, rows: &[(String, u64)], clients: usize) -> anyhow::Result<usize> {
    let http = sluice_http::client();
    let bar = ProgressBar::new(rows.len() as u64).with_style(
        ProgressStyle::with_template("   rows {bar:40} {pos}/{len} {per_sec}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let rows = Arc::new(rows.to_vec());
    let (next, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, rows, next, refused, bar) = (http.clone(), rows.clone(), next.clone(), refused.clone(), bar.clone());
        let (url, api_key) = (url.to_owned(), api_key.to_owned());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((row_id, gid)) = rows.get(i) else { break };
                let body = json!({
                    "credential_id": CREDENTIAL, "spreadsheet_id": SPREADSHEET, "sheet_id": gid,
                    "submission_id": format!("sub-{row_id}"), "row_id": row_id, "header": HEADER,
                    "values": [format!("sub-{row_id}"), format!("Name {i}"), format!("user{i}@example.com")],
                });
                let answer = http.post(&url).header("X-API-Key", &api_key).json(&body).send().await;
                if !answer.is_ok_and(|a| a.status().is_success()) {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                bar.inc(1);
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    bar.finish_and_clear();
    Ok(refused.load(Ordering::Relaxed))
}

async fn start_stack(
    conn: sluice_redis::Connection,
    sandbox: &SheetsSandbox,
    client_secret: &str,
    keys_secret: &str,
    functions: FunctionsMode,
) -> anyhow::Result<DevStack> {
    let keyspace = Keyspace::new("sluice:demo-sheets:")?;
    let api_keys = ApiKeys::from_list(&Secret::new(keys_secret.to_owned()))?;
    let sheets = SheetsConfig::new(CLIENT_ID, Secret::new(client_secret.to_owned()))
        .with_api_base_url(sandbox.base_url())
        .and_then(|c| c.with_token_url(sandbox.token_url()))?;
    let ingest = IngestConfig { keyspace, ..IngestConfig::new(api_keys) };
    let config = DevConfig {
        functions,
        ..DevConfig::on_free_ports(ingest, Cafe24Config::new("unused", Secret::new("unused")), sheets)
    };
    DevStack::start(conn, config).await
}
