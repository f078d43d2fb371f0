//! Shared by the sheet flush tests: real Redis (per-test prefix), the
//! sandbox Google Sheets over real HTTP, the steps built on both, a flush
//! trigger that records what was asked (the flush queue's stand-in: the
//! tests run each requested flush themselves, so they decide when), and an
//! alert receiver on 127.0.0.1.

use axum::Router;
use axum::routing::post;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use sluice_cafe24::Secret;
use sluice_domain::{SheetRow, SheetWork, StepError, WorkItem};
use sluice_pipeline::flush_trigger::FlushTrigger;
use sluice_pipeline::sheet_io::{BufferInput, FlushNext, FlushOutput, FlushRequest};
use sluice_pipeline::step_io::{ItemKind, ItemPlan};
use sluice_pipeline::{PipelineConfig, ServiceCore, SheetConfig, SheetService};
use sluice_redis::Connection;
use sluice_sandbox::{SheetsSandbox, SheetsSandboxConfig};
use sluice_sheets::SheetsClient;
use sluice_testkit::sandbox::sheets_config;
use sluice_testkit::{TestRedis, now_ms};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const CLIENT_ID: &str = "test-client";
pub(crate) const CLIENT_SECRET: &str = "test-secret";
pub(crate) const USER: &str = "cred-1";
pub(crate) const DOC: &str = "doc-1";

/// Flush requests, in the order asked.
#[derive(Debug, Default)]
pub(crate) struct RecordingTrigger {
    pub requests: Mutex<Vec<(FlushRequest, Duration)>>,
}

impl FlushTrigger for RecordingTrigger {
    fn request(&self, request: &FlushRequest, delay: Duration) -> BoxFuture<'_, Result<(), StepError>> {
        self.requests.lock().unwrap().push((request.clone(), delay));
        Box::pin(async { Ok(()) })
    }
}

pub(crate) struct SheetTest {
    pub redis: TestRedis,
    pub sandbox: SheetsSandbox,
    pub steps: SheetService<Connection>,
    pub trigger: Arc<RecordingTrigger>,
    pub alerts: Arc<Mutex<Vec<String>>>,
    pub refresh_token: String,
}

impl SheetTest {
    /// A sandbox with one spreadsheet of `gids` sheets and one user, the
    /// steps configured with `settings` and a client timing out after
    /// `timeout`.
    pub(crate) async fn start(
        test: &str,
        sandbox: SheetsSandboxConfig,
        settings: SheetConfig,
        timeout: Duration,
    ) -> Self {
        let redis = TestRedis::new(test);
        let sandbox = SheetsSandbox::start(sandbox).await.unwrap();
        sandbox.add_client(CLIENT_ID, CLIENT_SECRET);
        let refresh_token = sandbox.add_user(CLIENT_ID, USER);
        sandbox.create_spreadsheet(DOC, &[(0, "Sheet1"), (7, "Other")]);
        let sheets = sheets_config(&sandbox, CLIENT_ID, CLIENT_SECRET).with_timeouts(timeout, Duration::from_secs(2));
        let alerts = Arc::new(Mutex::new(Vec::new()));
        let alert_url = alert_receiver(alerts.clone()).await;
        let trigger = Arc::new(RecordingTrigger::default());
        let conn = redis.conn().await;
        let config = PipelineConfig { sheets: settings, ..PipelineConfig::default() };
        let steps = SheetService::new(ServiceCore::new(conn, redis.keyspace(), config), trigger.clone())
            .with_sheets(SheetsClient::new(sheets).unwrap())
            .with_alert_url(Some(alert_url));
        steps.set_google_credential(USER, &Secret::new(refresh_token.clone()), None).await.unwrap();
        Self { redis, sandbox, steps, trigger, alerts, refresh_token }
    }

    /// Buffers row `id` of sheet `gid` as the state machine's BufferRow
    /// state does.
    pub(crate) async fn buffer(&self, gid: u64, id: &str) {
        self.buffer_output(gid, id).await;
    }

    /// [`buffer`](Self::buffer), answering the step's output.
    pub(crate) async fn buffer_output(&self, gid: u64, id: &str) -> sluice_pipeline::sheet_io::BufferOutput {
        let work = work(gid, id);
        let item = ItemPlan {
            item_id: format!("msg-{id}"),
            receive_count: 1,
            last_receive: false,
            kind: ItemKind::SheetRow,
            work: Some(WorkItem::SheetRow(work)),
            invalid: None,
        };
        self.steps.buffer_row(BufferInput { item }).await.unwrap()
    }

    /// Buffers each of `ids`, in order, as rows of sheet `gid`.
    pub(crate) async fn buffer_all(&self, gid: u64, ids: &[String]) {
        for id in ids {
            self.buffer(gid, id).await;
        }
    }

    /// A flush of sheet `gid`, as the flush queue would deliver the latest
    /// request for it (with its gate token).
    pub(crate) async fn flush(&self, gid: u64) -> FlushOutput {
        let latest = self.trigger.requests.lock().unwrap().iter().rev().find(|(r, _)| r.sheet_gid == gid).cloned();
        self.steps.flush_sheet(latest.map_or_else(|| request(gid), |(r, _)| r)).await.unwrap()
    }

    /// Flushes until the sheet is idle, as the trigger's requests would,
    /// giving up after `limit` runs.
    pub(crate) async fn flush_until_idle(&self, gid: u64, limit: usize) -> Vec<FlushOutput> {
        let mut outputs = Vec::new();
        for _ in 0..limit {
            let output = self.flush(gid).await;
            let next = output.next;
            let wait = Duration::from_secs(output.wait_seconds);
            outputs.push(output);
            match next {
                FlushNext::Idle | FlushNext::Parked => return outputs,
                // The request it left is due after `wait`: wait it out, as
                // the delayed message would.
                _ => tokio::time::sleep(wait).await,
            }
        }
        panic!("sheet {gid} still not idle after {limit} flushes: {outputs:?}");
    }

    /// Row ids in column A of sheet `gid`, header first.
    pub(crate) fn column_a(&self, gid: u64) -> Vec<String> {
        self.sandbox
            .sheet_values(DOC, gid)
            .unwrap_or_default()
            .iter()
            .map(|row| match row.first() {
                Some(Value::String(s)) => s.trim_start_matches('\'').to_owned(),
                Some(other) => other.to_string(),
                None => String::new(),
            })
            .collect()
    }
}

/// Row `id` of sheet `gid` as ingest reads it.
pub(crate) fn work(gid: u64, id: &str) -> SheetWork {
    let row = SheetRow {
        credential_id: USER.into(),
        spreadsheet_id: DOC.into(),
        sheet_gid: gid,
        submission_id: format!("sub-{id}"),
        row_id: id.into(),
        header: Some(vec!["name".into(), "n".into()]),
        values: vec![json!(format!("name {id}")), json!(1)],
    };
    SheetWork::new(row, now_ms())
}

pub(crate) fn request(gid: u64) -> FlushRequest {
    let row = SheetRow {
        credential_id: USER.into(),
        spreadsheet_id: DOC.into(),
        sheet_gid: gid,
        submission_id: "s".into(),
        row_id: "r".into(),
        header: None,
        values: vec![],
    };
    FlushRequest::for_row(&row, "test".into())
}

/// A Slack-compatible incoming webhook on 127.0.0.1 keeping each `text`.
pub(crate) async fn alert_receiver(texts: Arc<Mutex<Vec<String>>>) -> String {
    let app = Router::new().route(
        "/alerts",
        post(move |body: axum::Json<Value>| {
            let texts = texts.clone();
            async move {
                texts.lock().unwrap().push(body["text"].as_str().unwrap_or_default().to_owned());
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/alerts", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
