//! The sheet flush against the sandbox Google Sheets: batching, order,
//! the header, the quotas, and exactly once under each injected fault.

use crate::sheet_support;

use sheet_support::{DOC, SheetTest, USER, request};
use sluice_pipeline::SheetConfig;
use sluice_pipeline::sheet_io::FlushNext;
use sluice_redis::{Claim, SheetBuffers, Tag};
use sluice_sandbox::{SheetsFault, SheetsOp, SheetsSandboxConfig};
use sluice_testkit::sandbox::sheets_config;
use std::collections::HashSet;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn fast() -> SheetConfig {
    SheetConfig { flush_lease: Duration::from_secs(3), ..SheetConfig::default() }
}

async fn start(test: &str) -> SheetTest {
    SheetTest::start(test, SheetsSandboxConfig::default(), fast(), Duration::from_secs(1)).await
}

/// A test whose sheet 0 has rows `ids(range)` buffered, not yet flushed.
async fn start_buffered(test: &str, range: std::ops::Range<u32>) -> (SheetTest, Vec<String>) {
    let t = start(test).await;
    let rows = ids(range);
    t.buffer_all(0, &rows).await;
    (t, rows)
}

fn ids(range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("r{i:03}")).collect()
}

/// The sheet holds the header, then exactly `expected`, in order.
fn assert_sheet(t: &SheetTest, gid: u64, expected: &[String]) {
    let column = t.column_a(gid);
    assert_eq!(column.first().map(String::as_str), Some("row_id"), "header first: {column:?}");
    assert_eq!(&column[1..], expected, "every row once, in arrival order");
}

/// How many appends the sandbox applied (answered or not).
fn applied_appends(t: &SheetTest) -> usize {
    t.sandbox.calls().iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.applied).count()
}

#[tokio::test]
async fn buffered_rows_go_out_in_one_append_with_one_header_in_order() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_one_append", 0..50).await;
        // One request pending for the sheet, however many rows asked.
        assert_eq!(t.trigger.requests.lock().unwrap().len(), 1);
        let out = t.flush(0).await;
        assert_eq!((out.appended_rows, out.next), (50, FlushNext::Idle));
        assert_sheet(&t, 0, &rows);
        // More rows later: no second header.
        let more = ids(50..60);
        t.buffer_all(0, &more).await;
        t.flush_until_idle(0, 5).await;
        assert_sheet(&t, 0, &[rows, more].concat());
        assert_eq!(applied_appends(&t), 2);
        // A redelivered row is not buffered twice.
        t.buffer(0, "r000").await;
        t.flush_until_idle(0, 5).await;
        assert_eq!(t.column_a(0).len(), 61);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn kill_between_claim_and_append_sends_the_rows_once() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_kill_after_claim", 0..5).await;
        // A flush that claimed (LMOVE) and died before its call.
        let buffers = SheetBuffers::new(t.redis.conn().await, t.redis.keyspace());
        let sheet = Tag::for_sheet(&request(0).sheet);
        assert!(matches!(buffers.claim(&sheet, 5000, 2_000_000).await.unwrap(), Claim::Fresh(r) if r.len() == 5));
        t.flush_until_idle(0, 5).await;
        assert_sheet(&t, 0, &rows);
        // It looked before it sent.
        let ops: Vec<SheetsOp> = t.sandbox.calls().iter().map(|c| c.op).collect();
        let first_get = ops.iter().position(|op| *op == SheetsOp::ValuesGet).unwrap();
        let first_append = ops.iter().position(|op| *op == SheetsOp::ValuesAppend).unwrap();
        assert!(first_get < first_append, "{ops:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn timeout_after_apply_is_verified_not_resent() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_timeout_after_apply", 0..8).await;
        // Applied, then the answer is held past the client's 1 s timeout.
        t.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(3) });
        let first = t.flush(0).await;
        assert_eq!((first.appended_rows, first.next), (0, FlushNext::Later));
        t.flush_until_idle(0, 5).await;
        assert_sheet(&t, 0, &rows);
        assert_eq!(applied_appends(&t), 1, "the batch went out once");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn kill_between_append_and_trim_finds_the_rows_in_the_sheet() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_kill_after_append", 0..6).await;
        // The append is applied and its answer held; the flush is killed
        // while it waits, before it could trim anything.
        t.sandbox.inject(SheetsFault::ApplyThenHold { op: SheetsOp::ValuesAppend, hold: Duration::from_secs(30) });
        let steps = t.steps.clone();
        let flush = tokio::spawn(async move { steps.flush_sheet(request(0)).await });
        while applied_appends(&t) == 0 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        flush.abort();
        assert!(flush.await.unwrap_err().is_cancelled());
        // The dead flush's lease runs out; then a flush verifies and trims.
        let mut outputs = Vec::new();
        loop {
            let out = t.flush(0).await;
            outputs.push(out.next);
            if out.next == FlushNext::Idle {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(outputs.contains(&FlushNext::Busy), "the lock held while the lease lasted: {outputs:?}");
        assert_sheet(&t, 0, &rows);
        assert_eq!(applied_appends(&t), 1);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn server_errors_are_retried_and_never_duplicate() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_server_errors", 0..4).await;
        // Applied but answered 503, then a plain 503.
        t.sandbox.inject(SheetsFault::ApplyThenStatus { op: SheetsOp::ValuesAppend, status: 503 });
        t.flush_until_idle(0, 6).await;
        let more = ids(4..7);
        t.buffer_all(0, &more).await;
        t.sandbox.inject(SheetsFault::Status { op: SheetsOp::ValuesAppend, status: 500, times: 1 });
        t.flush_until_idle(0, 6).await;
        assert_sheet(&t, 0, &[rows, more].concat());
    })
    .await
    .unwrap();
}

/// A flush that finds its sheet locked by a holder that died mid-flush
/// (`kill -9`) asks again for when the lock's lease ends: the dead holder
/// would never look at the buffer again, and its rows would wait for the
/// next row to arrive.
#[tokio::test]
async fn a_flush_finding_its_sheet_locked_asks_again_for_when_the_lease_ends() {
    tokio::time::timeout(LIMIT, async {
        let t = start("flush_busy_comes_back").await;
        let locks = sluice_redis::Locks::new(t.redis.conn().await, t.redis.keyspace());
        let sheet = sluice_redis::Tag::for_sheet(&sheet_support::request(0).sheet);
        let held = locks.acquire(&sheet, "flush", Duration::from_secs(30)).await.unwrap();
        assert!(matches!(held, sluice_redis::Acquire::Acquired(_)));
        t.buffer(0, "r000").await;
        let asked = t.trigger.requests.lock().unwrap().len();
        assert_eq!(t.flush(0).await.next, FlushNext::Busy);
        let again: Vec<Duration> = t.trigger.requests.lock().unwrap()[asked..].iter().map(|(_, d)| *d).collect();
        assert_eq!(again.len(), 1, "one flush asked for: {again:?}");
        assert!(again[0] > Duration::from_secs(20) && again[0] <= Duration::from_secs(30), "{again:?}");
    })
    .await
    .unwrap();
}

/// An access token Google stops taking before its expiry is refreshed,
/// whichever call meets the 401 first: on a sheet not written yet that is
/// the header check, which used to park the credential at once.
#[tokio::test]
async fn a_refused_access_token_at_the_header_check_is_refreshed_not_parked() {
    tokio::time::timeout(LIMIT, async {
        let t = start("flush_header_check_refresh").await;
        t.buffer(0, "r000").await;
        t.flush_until_idle(0, 3).await;
        t.sandbox.expire_access_tokens(USER);
        t.buffer(7, "x000").await;
        let outs = t.flush_until_idle(7, 4).await;
        assert!(outs.iter().all(|o| o.next != FlushNext::Parked), "{outs:?}");
        assert_sheet(&t, 7, &["x000".to_owned()]);
        assert!(t.alerts.lock().unwrap().is_empty(), "no alert for a token a refresh fixed");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn flushes_delayed_three_times_in_a_row_alert_once_and_the_next_append_once_more() {
    tokio::time::timeout(LIMIT, async {
        let (t, rows) = start_buffered("flush_delayed_alerts", 0..3).await;
        // 503, 429, 500: three flushes in a row delayed by Google.
        let delayed = |status| SheetsFault::Status { op: SheetsOp::ValuesAppend, status, times: 1 };
        for (n, status) in [503, 429, 500].into_iter().enumerate() {
            t.sandbox.inject(delayed(status));
            let out = t.flush(0).await;
            assert_eq!((out.appended_rows, out.next), (0, FlushNext::Later), "{out:?}");
            let expected = usize::from(n == 2);
            assert_eq!(t.alerts.lock().unwrap().len(), expected, "after {} delayed flushes", n + 1);
        }
        // A fourth delay is the same episode.
        t.sandbox.inject(delayed(503));
        t.flush(0).await;
        assert_eq!(t.alerts.lock().unwrap().len(), 1, "one alert per episode");
        t.flush_until_idle(0, 4).await;
        assert_sheet(&t, 0, &rows);
        let alerts = t.alerts.lock().unwrap().clone();
        assert_eq!(alerts.len(), 2, "{alerts:?}");
        assert!(alerts[0].contains("delayed 3 times in a row") && alerts[0].contains(DOC), "{alerts:?}");
        assert!(alerts[1].contains("written again"), "{alerts:?}");
        assert!(alerts.iter().all(|a| !a.contains(&t.refresh_token)), "an alert never holds a token");
        // A later delay alone starts nothing.
        t.buffer(0, "r100").await;
        t.sandbox.inject(delayed(503));
        t.flush_until_idle(0, 4).await;
        assert_eq!(t.alerts.lock().unwrap().len(), 2);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_revoked_credential_parks_alerts_once_and_redrives_when_set() {
    tokio::time::timeout(LIMIT, async {
        let t = start("flush_credential_redrive").await;
        t.buffer(0, "r000").await;
        t.flush_until_idle(0, 3).await;
        t.sandbox.revoke_refresh_tokens(USER);
        t.sandbox.expire_access_tokens(USER);
        let held = ids(1..4);
        t.buffer_all(0, &held).await;
        let out = t.flush(0).await;
        assert_eq!(out.next, FlushNext::Parked, "{out:?}");
        assert!(out.parked.unwrap().starts_with("credential"));
        // Rows arriving while it is parked wait behind the held ones.
        t.buffer(0, "r004").await;
        assert_eq!(t.flush(0).await.next, FlushNext::Parked);
        t.buffer(7, "x000").await;
        assert_eq!(t.flush(7).await.next, FlushNext::Parked, "every sheet of the credential waits");
        let alerts = t.alerts.lock().unwrap().clone();
        assert_eq!(alerts.len(), 1, "one alert per storm: {alerts:?}");
        assert!(alerts[0].contains(USER) && !alerts[0].contains(&t.refresh_token));

        // A person sets a new refresh token: the sheets are asked for at once.
        let fresh = t.sandbox.add_user(sheet_support::CLIENT_ID, USER);
        let before = t.trigger.requests.lock().unwrap().len();
        t.steps.set_google_credential(USER, &sluice_cafe24::Secret::new(fresh), None).await.unwrap();
        let asked: HashSet<u64> =
            t.trigger.requests.lock().unwrap()[before..].iter().map(|(r, _)| r.sheet_gid).collect();
        assert_eq!(asked, HashSet::from([0, 7]));
        t.flush_until_idle(0, 4).await;
        t.flush_until_idle(7, 4).await;
        assert_sheet(&t, 0, &[vec!["r000".to_owned()], held, vec!["r004".to_owned()]].concat());
        assert_sheet(&t, 7, &["x000".to_owned()]);
        assert_eq!(DOC, "doc-1");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_deleted_sheet_parks_its_rows_and_alerts() {
    tokio::time::timeout(LIMIT, async {
        let t = start("flush_sheet_gone").await;
        t.sandbox.delete_sheet(DOC, 7);
        t.buffer(7, "x000").await;
        let out = t.flush(7).await;
        assert_eq!(out.next, FlushNext::Parked);
        assert!(out.parked.unwrap().starts_with("sheet"));
        assert_eq!(t.alerts.lock().unwrap().len(), 1);
        let buffers = SheetBuffers::new(t.redis.conn().await, t.redis.keyspace());
        let backlog = buffers.backlog(&Tag::for_sheet(&request(7).sheet)).await.unwrap();
        assert_eq!((backlog.parked, backlog.in_flight), (1, 0), "held, not lost");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_quotas_are_never_exceeded() {
    tokio::time::timeout(LIMIT, async {
        // 3 writes per 2 s per user on both sides; one row per append, so
        // ten rows need ten appends and must wait for the quota.
        let window = Duration::from_secs(2);
        let sandbox = SheetsSandboxConfig { write_per_user: 3, quota_window: window, ..SheetsSandboxConfig::default() };
        let settings = SheetConfig { per_credential: (3, window), max_rows: 1, ..fast() };
        let t = SheetTest::start("flush_quota", sandbox, settings, Duration::from_secs(1)).await;
        let rows = ids(0..10);
        t.buffer_all(0, &rows).await;
        t.flush_until_idle(0, 20).await;
        assert_sheet(&t, 0, &rows);
        let calls = t.sandbox.calls();
        assert!(calls.iter().all(|c| c.status != 429), "never throttled");
        assert!(t.sandbox.max_accepted_writes_in(window, Some(USER)) <= 3);
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_batch_found_partly_in_the_sheet_sends_only_the_rest() {
    tokio::time::timeout(LIMIT, async {
        let t = start("flush_partial").await;
        // The header and r000 are in the sheet already (an earlier append by
        // hand, say), while r000..r002 are in flight, their outcome unknown.
        let config = sheets_config(&t.sandbox, sheet_support::CLIENT_ID, sheet_support::CLIENT_SECRET);
        let client = sluice_sheets::SheetsClient::new(config).unwrap();
        let token = client.refresh(&sluice_cafe24::Secret::new(t.refresh_token.clone())).await.unwrap().access_token;
        let rows = vec![vec![serde_json::json!("row_id")], vec![serde_json::json!("r000")]];
        let input = sluice_sheets::values::ValueInputOption::Raw;
        assert!(client.append(&token, DOC, 0, &rows, input).await.ok().is_some());
        let all = ids(0..3);
        t.buffer_all(0, &all).await;
        let buffers = SheetBuffers::new(t.redis.conn().await, t.redis.keyspace());
        let sheet = Tag::for_sheet(&request(0).sheet);
        assert!(matches!(buffers.claim(&sheet, 5000, 2_000_000).await.unwrap(), Claim::Fresh(_)));
        t.flush_until_idle(0, 5).await;
        assert_sheet(&t, 0, &all);
    })
    .await
    .unwrap();
}
