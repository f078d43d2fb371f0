//! A whole local stack with the sandbox Google Sheets, for the benchmarks:
//! rows go in over HTTP and are found in the sandbox's sheets.

use serde_json::{Value, json};
use sluice_cafe24::{Cafe24Config, Secret};
use sluice_dev_stack::{DevConfig, DevStack};
use sluice_ingest::{ApiKeys, IngestConfig, KeyScope};
use sluice_pipeline::{PipelineConfig, SheetConfig};
use sluice_sandbox::{SheetsSandbox, SheetsSandboxConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::sandbox::sheets_config;
use std::time::{Duration, Instant};

pub(crate) const KEY: &str = "bench-key";
pub(crate) const DOC: &str = "bench-doc";
pub(crate) const USER: &str = "bench-cred";

pub(crate) struct Rig {
    pub(crate) stack: DevStack,
    pub(crate) sandbox: SheetsSandbox,
    pub(crate) rows_url: String,
    pub(crate) http: reqwest::Client,
    redis: TestRedis,
}

impl Rig {
    pub(crate) async fn start(name: &str, sandbox: SheetsSandboxConfig, settings: SheetConfig) -> Self {
        let redis = TestRedis::new(name);
        let sandbox = SheetsSandbox::start(sandbox).await.expect("sandbox");
        sandbox.add_client("client", "secret");
        let refresh = sandbox.add_user("client", USER);
        sandbox.create_spreadsheet(DOC, &[(0, "Sheet1")]);
        let conn = redis.conn().await;
        let sheets = sheets_config(&sandbox, "client", "secret");
        let ingest = IngestConfig {
            keyspace: redis.keyspace(),
            ..IngestConfig::new(ApiKeys::scoped([(Secret::new(KEY), KeyScope::any_route())]).unwrap())
        };
        let cafe24 = Cafe24Config::new("unused", Secret::new("unused"));
        let config = DevConfig {
            pipeline: PipelineConfig { sheets: settings, ..PipelineConfig::default() },
            ..DevConfig::on_free_ports(ingest, cafe24, sheets)
        };
        let stack = DevStack::start(conn, config).await.expect("stack");
        stack.sheet.set_google_credential(USER, &Secret::new(refresh), None).await.expect("credential");
        let rows_url = stack.urls.iter().find(|(w, _)| *w == "Sheet rows").unwrap().1.clone();
        Self { stack, sandbox, rows_url, http: sluice_http::client(), redis }
    }

    pub(crate) async fn send(&self, id: &str) {
        let body = json!({"credential_id": USER, "spreadsheet_id": DOC, "sheet_id": 0, "submission_id": id,
            "row_id": id, "values": [id, "bench"]});
        let answer = self.http.post(&self.rows_url).header("X-API-Key", KEY).json(&body).send().await.expect("send");
        assert!(answer.status().is_success(), "ingest refused a row");
    }

    /// Commands the Redis server has processed so far (INFO stats): every
    /// part of the stack's, the queue standing in for SQS included.
    pub(crate) async fn redis_commands(&self) -> u64 {
        sluice_testkit::server_info::commands_processed(&mut self.redis.conn().await).await
    }

    /// Rows in the sheet.
    pub(crate) fn rows(&self) -> usize {
        self.sandbox.sheet_values(DOC, 0).map_or(0, |v| v.len())
    }

    /// Waits until the sheet holds `n` rows; false after `limit`.
    pub(crate) async fn wait_rows(&self, n: usize, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while self.rows() < n {
            if Instant::now() > until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    pub(crate) async fn stop(self) {
        self.stack.stop().await.expect("stop");
        self.sandbox.stop().await;
    }
}

/// Whether `row`'s first cell is `id`.
pub(crate) fn has_id(row: &[Value], id: &str) -> bool {
    row.first().and_then(Value::as_str).is_some_and(|c| c.trim_start_matches('\'') == id)
}
