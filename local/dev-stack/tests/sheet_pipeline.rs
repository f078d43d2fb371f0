//! The sheet path end to end, as `sluice dev` runs it: rows POSTed over
//! HTTP to ingest, the FIFO queue, the deployed state machine's BufferRow
//! state, the flush queue with its delayed requests, the flush worker, and
//! the sandbox Google Sheets enforcing Google's quotas.

use crate::support;

use serde_json::{Value, json};
use sluice_cafe24::{Cafe24Config, Secret};
use sluice_dev_stack::DevStack;
use sluice_pipeline::StatusReader;
use sluice_sandbox::{SheetsOp, SheetsSandbox, SheetsSandboxConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::sandbox::sheets_config;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::KEY;

const DOC: &str = "doc";

async fn stack(redis: &TestRedis, sandbox: &SheetsSandbox) -> DevStack {
    let sheets = sheets_config(sandbox, "client", "secret");
    let config = support::dev_config(redis, Cafe24Config::new("unused", Secret::new("unused")), sheets);
    support::start(redis, config).await
}

fn row(gid: u64, id: &str) -> Value {
    json!({"credential_id": "cred", "spreadsheet_id": DOC, "sheet_id": gid, "submission_id": format!("s-{id}"),
        "row_id": id, "header": ["name"], "values": [format!("name {id}")]})
}

fn column_a(sandbox: &SheetsSandbox, gid: u64) -> Vec<String> {
    let values = sandbox.sheet_values(DOC, gid).unwrap_or_default();
    values.iter().map(|r| r.first().and_then(Value::as_str).unwrap_or("").trim_start_matches('\'').to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rows_land_exactly_once_in_arrival_order_within_googles_quotas() {
    let redis = TestRedis::new("sheet_e2e");
    let sandbox = SheetsSandbox::start(SheetsSandboxConfig::default()).await.unwrap();
    sandbox.add_client("client", "secret");
    let refresh = sandbox.add_user("client", "cred");
    sandbox.create_spreadsheet(DOC, &[(0, "Burst"), (1, "Ordered")]);
    let stack = stack(&redis, &sandbox).await;
    stack.sheet.set_google_credential("cred", &Secret::new(refresh), None).await.unwrap();
    let url = stack.urls.iter().find(|(w, _)| *w == "Sheet rows").unwrap().1.clone();
    let http = sluice_http::client();

    tokio::time::timeout(Duration::from_secs(90), async {
        // A burst from 20 concurrent clients to one sheet...
        let burst: Vec<String> = (0..300).map(|i| format!("b{i:03}")).collect();
        let mut clients = tokio::task::JoinSet::new();
        for chunk in burst.chunks(15) {
            let (http, url, chunk) = (http.clone(), url.clone(), chunk.to_vec());
            clients.spawn(async move {
                for id in chunk {
                    let answer = http.post(&url).header("X-API-Key", KEY).json(&row(0, &id)).send().await.unwrap();
                    assert!(answer.status().is_success(), "{}", answer.text().await.unwrap());
                }
            });
        }
        // ...while one client sends to another sheet, one row after another.
        let ordered: Vec<String> = (0..40).map(|i| format!("o{i:03}")).collect();
        for id in &ordered {
            let answer = http.post(&url).header("X-API-Key", KEY).json(&row(1, id)).send().await.unwrap();
            assert!(answer.status().is_success());
        }
        while let Some(done) = clients.join_next().await {
            done.unwrap();
        }
        // A bad row is refused with a JSON error naming the field.
        let bad = http.post(&url).header("X-API-Key", KEY).json(&json!({"row_id": "x"})).send().await.unwrap();
        assert_eq!(bad.status(), 400);
        let body = bad.json::<Value>().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_field", "{body}");

        let started = Instant::now();
        while column_a(&sandbox, 0).len() < 301 || column_a(&sandbox, 1).len() < 41 {
            assert!(started.elapsed() < Duration::from_secs(60), "rows still missing");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut counts: HashMap<String, usize> = HashMap::new();
        for id in column_a(&sandbox, 0) {
            *counts.entry(id).or_default() += 1;
        }
        assert_eq!(counts.remove("row_id"), Some(1), "one header");
        assert_eq!(counts.len(), 300);
        assert!(counts.values().all(|n| *n == 1), "no row twice");
        assert_eq!(column_a(&sandbox, 1)[1..], ordered[..], "one client's rows in the order sent");
    })
    .await
    .unwrap();

    let calls = sandbox.calls();
    assert!(calls.iter().all(|c| c.status != 429), "never throttled");
    assert!(sandbox.max_accepted_writes_in(Duration::from_secs(60), Some("cred")) <= 60);
    let appends = calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend).count();
    assert!(appends < 340 / 2, "rows were batched: {appends} appends for 340 rows");
    // The same counts at GET /metrics, as Prometheus text.
    let metrics_url = stack.urls.iter().find(|(w, _)| *w == "Metrics").unwrap().1.clone();
    // (A flush counts its rows when it returns, just after its last append.)
    let started = Instant::now();
    let text = loop {
        let text = http.get(&metrics_url).send().await.unwrap().text().await.unwrap();
        if text.lines().any(|l| l == "sluice_sheet_rows_appended_total 340") {
            break text;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(text.contains("sluice_queue_messages{queue=\"flush_dlq\",state=\"waiting\"} 0"), "{text}");
    assert!(text.contains("sluice_ingest_rejected_total{reason=\"invalid_field\"} 1"), "{text}");
    // The steps' counts, the ones the functions send as EMF.
    assert!(text.lines().any(|l| l == "sluice_steps_sheet_rows_buffered_total 340"), "{text}");
    let value = |name: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}: {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    // Each row came in a pipe batch, or was held in its sheet's overflow
    // (flow control per sheet: the burst passed 100 rows in the queue).
    let held = value("sluice_ingest_deferred_total ");
    assert!(
        value("sluice_steps_pipe_batch_messages_total ") + held >= 340,
        "every row came in a pipe batch or was held"
    );
    assert_eq!(value("sluice_steps_upstream_429_total{upstream=\"sheets\"} "), 0);
    assert!(value("sluice_steps_upstream_calls_total{upstream=\"sheets\"} ") >= appends as u64);
    // Traced by row id all the way.
    let stages: Vec<String> =
        stack.sheet.traces().read("row:cred:o000").await.unwrap().into_iter().map(|e| e.stage).collect();
    assert_eq!(stages.first().map(String::as_str), Some("INIT"));
    assert_eq!(stages.last().map(String::as_str), Some("COMPLETED"), "{stages:?}");

    // What `sluice status` reads: nothing waits in the queue's groups any
    // more, both sheets were active, the credential is usable, its write
    // window holds its appends and its sheets hold no rows.
    let ledger = stack.sheet.core().group_ledger();
    let (lagging, waiting) = ledger.lagging(10).await.unwrap();
    assert_eq!(waiting, 0, "{lagging:?}");
    assert_eq!(ledger.seen(10).await.unwrap().len(), 2);
    let status = StatusReader::new(stack.sheet.core().clone()).credential_status("cred").await.unwrap();
    assert!(status.rejected.is_none() && status.token.is_some(), "{status:?}");
    let [credential, project] = status.writes;
    assert!((1..=60).contains(&credential.used) && credential.max == 60, "{credential:?}");
    assert_eq!(project.used, credential.used, "one credential: the project's writes are its writes");
    assert_eq!(status.sheets.len(), 2);
    assert!(status.sheets.iter().all(|s| s.backlog == Default::default()), "{:?}", status.sheets);
    stack.stop().await.unwrap();
    sandbox.stop().await;
}
