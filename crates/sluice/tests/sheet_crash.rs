//! Issue 18's crash mid-flush on the sheet path: `sluice dev` is killed
//! with `kill -9` at the worst moment of a flush, after Google applied an
//! append and before sluice heard back (so before it trimmed the rows it
//! sent), and started again in the same directory. Every row must land
//! exactly once, in order, with its sheet's header once.
//!
//! The sandbox Google Sheets runs as its own process (`sluice sandbox
//! sheets`), so it survives the kill and stays the truth. The moment is
//! placed deterministically: the test queues an `apply_then_hold` fault
//! for the next append (applied, then its response held far longer than
//! sluice waits) and kills once the sandbox has consumed it. Around it,
//! three senders (one per sheet, each in its rows' order) post rows as a
//! form would, sending a row again after a 5xx or a connection error (the
//! restart) with the same row id.
//!
//! The interrupted flushes' sheets wait out their lock's lease (60 s), so
//! the run takes over a minute: `make chaos` runs it, not `make test`.

use crate::support::stack;

use serde_json::{Value, json};
use sluice_testkit::chaos_report::ChaosRow;
use stack::{Proc, credentials_set, get, port_outside_the_ephemeral_range, post, sluice, wait_for_no_process_in};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SPREADSHEET: &str = "crashdoc";
const SHEETS: [u64; 3] = [0, 1, 2];
/// Rows per sheet before the kill, and after the restart.
const BEFORE: usize = 25;
const AFTER: usize = 15;
const API_KEY: &str = "sluice-dev";
/// How long every row may take to land after the last was accepted: the
/// flushes the kill interrupted hold their sheets' locks until their
/// lease (60 s, above one append's 30 s timeout) ends; the busy flushes of
/// the restarted process ask again for then.
const LAND_LIMIT: Duration = Duration::from_secs(100);
/// A sender's patience with one row (the restart included).
const SENDER_PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "over a minute (a killed flush's lock lease): make chaos runs it"]
async fn a_kill_between_an_applied_append_and_its_trim_writes_every_row_once() {
    let limit = SENDER_PATIENCE * 2 + LAND_LIMIT + Duration::from_secs(20);
    let dir = std::env::temp_dir().join(format!("sluice-sheet-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).expect("temp dir");
    let outcome = tokio::time::timeout(limit, run(&dir)).await;
    let leftovers = wait_for_no_process_in(&dir, Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&dir);
    outcome.unwrap_or_else(|_| panic!("the crash run did not finish within {limit:?}"));
    assert!(leftovers.is_empty(), "processes left behind: {leftovers:?}");
}

async fn run(dir: &Path) {
    let http =
        sluice_http::builder().connect_timeout(Duration::from_secs(1)).timeout(Duration::from_secs(5)).build().unwrap();
    let mut command = sluice(dir);
    command.args(["sandbox", "sheets", "--port", "0", "--user", "cred-1"]);
    for gid in SHEETS {
        command.args(["--spreadsheet", &format!("{SPREADSHEET}:{gid}:Sheet{gid}")]);
    }
    let sandbox = Proc::spawn(&mut command).unwrap_or_else(|e| panic!("sluice sandbox sheets: {e}"));
    let api = sandbox.after("Google Sheets sandbox: ").split(' ').next().unwrap().to_owned();
    let control = format!("{api}/sandbox/sheets");
    let refresh = sandbox.after("User cred-1: refresh token ");
    let start = DevStart {
        workdir: dir.join("work"),
        ingest_port: port_outside_the_ephemeral_range(),
        api,
        token_url: sandbox.after("Token URL: "),
    };

    let dev = start.spawn();
    credentials_set(&start.workdir, "cred-1", &refresh);
    let ingest = format!("http://127.0.0.1:{}", start.ingest_port);
    send(&http, &ingest, 0..BEFORE).await;
    // Every row of the first part landed; the next append is the one
    // that Google applies and sluice never hears back from.
    wait_landed(&http, &control, BEFORE, &start.workdir).await;
    post(&http, &format!("{control}/faults"), json!({"apply_then_hold": {"op": "values_append", "hold": 120_000}}))
        .await;
    let senders = tokio::spawn({
        let (http, ingest) = (http.clone(), ingest.clone());
        async move { send(&http, &ingest, BEFORE..BEFORE + AFTER).await }
    });
    wait_fault_consumed(&http, &control).await;
    let applied = rows_held(&http, &control).await;
    dev.signal("-KILL");
    let killed_at = Instant::now();
    drop(dev);

    // Started again in the same directory; the senders retry what the
    // kill refused meanwhile.
    let dev = start.spawn();
    senders.await.expect("senders");
    let landed = wait_landed(&http, &control, BEFORE + AFTER, &start.workdir).await;
    // Nothing more may come after the rows are all there: the held rows
    // must not be appended again once the flush looks.
    let calls = get(&http, &format!("{control}/calls")).await;
    for (gid, rows) in SHEETS.iter().zip(&landed) {
        check_sheet(*gid, rows, BEFORE + AFTER);
    }
    assert!(
        applied.iter().sum::<usize>() > SHEETS.len() * (BEFORE + 1),
        "the held append was applied before the kill ({applied:?} rows held); calls: {calls}"
    );
    dev.signal("-TERM");
    drop(dev);
    drop(sandbox);
    ChaosRow {
        scenario: "kill -9 between an append Google applied and its trim (sheet path, 3 sheets)".into(),
        runs: 1,
        sent: SHEETS.len() * (BEFORE + AFTER),
        recovered_in: Some(killed_at.elapsed()),
        notes: "every row exactly once and in order, the header once (asserted per sheet); recovered = kill to \
                every row landed, mostly the killed flush's 60 s lock lease"
            .into(),
        ..ChaosRow::default()
    }
    .record(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaos"), "sheet_crash");
}

/// How to start sluice dev, the same way every time.
struct DevStart {
    workdir: PathBuf,
    ingest_port: u16,
    api: String,
    token_url: String,
}

impl DevStart {
    fn spawn(&self) -> Proc {
        let mut command = sluice(&self.workdir);
        command
            .args(["dev", "--ingest-port", &self.ingest_port.to_string()])
            .args(["--sqs-port", "0", "--sfn-port", "0", "--metrics-port", "0", "--no-drain"])
            .args(["--sheets-api-url", &self.api, "--google-token-url", &self.token_url])
            .args(["--google-client-id", "sandbox-client"])
            .env("SLUICE_GOOGLE_CLIENT_SECRET", "sandbox-secret");
        Proc::spawn(&mut command).unwrap_or_else(|e| panic!("sluice dev: {e}"))
    }
}

/// Rows `range` of every sheet, one sender per sheet in the rows' order;
/// a row is sent again after a 5xx or a connection error.
async fn send(http: &reqwest::Client, ingest: &str, range: std::ops::Range<usize>) {
    let senders = SHEETS.map(|gid| {
        let (http, url, range) = (http.clone(), format!("{ingest}/sheets/rows"), range.clone());
        tokio::spawn(async move {
            for n in range {
                let row = json!({
                    "credential_id": "cred-1",
                    "spreadsheet_id": SPREADSHEET,
                    "sheet_id": gid,
                    "submission_id": format!("s-{gid}-{n}"),
                    "row_id": format!("r-{gid}-{n}"),
                    "header": ["n", "text"],
                    "values": [n, format!("row {n} of sheet {gid}")],
                });
                let deadline = Instant::now() + SENDER_PATIENCE;
                loop {
                    let sent = http.post(&url).header("X-API-Key", API_KEY).json(&row).send().await;
                    match sent {
                        Ok(r) if r.status().is_success() => break,
                        Ok(r) if r.status().is_client_error() => panic!("row {n} of sheet {gid}: {}", r.status()),
                        _ => {}
                    }
                    assert!(Instant::now() < deadline, "row {n} of sheet {gid} never accepted");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        })
    });
    for sender in senders {
        sender.await.expect("sender");
    }
}

/// Each sheet's rows as the sandbox holds them, header included.
async fn sheets(http: &reqwest::Client, control: &str) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for gid in SHEETS {
        let held = get(http, &format!("{control}/spreadsheets/{SPREADSHEET}/sheets/{gid}/values")).await;
        out.push(held["values"].as_array().cloned().unwrap_or_default());
    }
    out
}

async fn rows_held(http: &reqwest::Client, control: &str) -> Vec<usize> {
    sheets(http, control).await.iter().map(Vec::len).collect()
}

/// Waits, bounded, until every sheet holds its header and `rows` rows
/// (or more: duplicates are for [`check_sheet`] to name).
async fn wait_landed(http: &reqwest::Client, control: &str, rows: usize, workdir: &Path) -> Vec<Vec<Value>> {
    let deadline = Instant::now() + LAND_LIMIT;
    loop {
        let held = sheets(http, control).await;
        if held.iter().all(|sheet| sheet.len() > rows) {
            return held;
        }
        let counts: Vec<usize> = held.iter().map(Vec::len).collect();
        if Instant::now() >= deadline {
            let status = sluice(workdir).arg("status").output().expect("sluice status");
            let traces: Vec<String> = SHEETS
                .iter()
                .map(|gid| {
                    let out = sluice(workdir).args(["trace", &format!("r-{gid}-{}", rows - 1)]).output().unwrap();
                    String::from_utf8_lossy(&out.stdout).into_owned()
                })
                .collect();
            panic!(
                "after {LAND_LIMIT:?} the sheets hold {counts:?} rows, not {}\n{}\n{}",
                rows + 1,
                String::from_utf8_lossy(&status.stdout),
                traces.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_fault_consumed(http: &reqwest::Client, control: &str) {
    let deadline = Instant::now() + LAND_LIMIT;
    loop {
        let queued = get(http, &format!("{control}/faults")).await;
        if queued.as_array().is_some_and(Vec::is_empty) {
            return;
        }
        assert!(Instant::now() < deadline, "no append took the held fault: {queued}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The header once, first, then rows 0..rows each exactly once, in order
/// (sluice writes each row's id in column A, and `row_id` above it).
fn check_sheet(gid: u64, held: &[Value], rows: usize) {
    assert_eq!(held.first(), Some(&json!(["row_id", "n", "text"])), "sheet {gid}: the header first: {held:?}");
    let ids: Vec<&str> = held[1..].iter().map(|row| row[0].as_str().unwrap_or("?")).collect();
    let expected: Vec<String> = (0..rows).map(|n| format!("r-{gid}-{n}")).collect();
    assert_eq!(ids, expected, "sheet {gid}: every row exactly once, in order");
}
