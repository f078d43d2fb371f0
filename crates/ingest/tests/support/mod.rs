//! A real ingest on 127.0.0.1: real HTTP, a real Redis (its own key prefix
//! per test), the embedded queue in memory behind a [`TestQueue`] that
//! counts send calls and fails or holds them on demand.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sluice_cafe24::Secret;
use sluice_domain::queue::{
    OutgoingMessage, QueueAttributes, ReceiptHandle, ReceiveRequest, ReceivedMessage, SendFailure, SendOutcome,
};
use sluice_domain::{Queue, WorkQueue};
use sluice_ingest::{ApiKeys, Ingest, IngestConfig, TenantPolicy};
use sluice_redis::{ConnectSettings, Connection};
use sluice_redis::{Keyspace, TraceEntry, Traces};
use sluice_sqs_emulator::{EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig, QueueError};
use sluice_testkit::TestRedis;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

pub(crate) const KEY: &str = "test-key-0123456789";
pub(crate) const OTHER_KEY: &str = "rotated-key-9876543210";
/// A key for rows only, for credential `cred-1`'s spreadsheet `1Sheet_id`.
pub(crate) const FORM_KEY: &str = "form-key-cred-1-only";
pub(crate) const QUEUE: &str = "events.fifo";
/// Every wait in these tests is bounded by this.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

/// What the test queue does with the next send calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Mode {
    Accept = 0,
    /// Every entry fails with a retryable (server-side) error.
    Unavailable = 1,
    /// Every entry fails as malformed (the sender's fault).
    Refuse = 2,
}

/// Shared knobs and counts of a [`TestQueue`].
#[derive(Debug)]
pub(crate) struct Control {
    mode: AtomicU8,
    pub calls: AtomicUsize,
    pub entries: AtomicUsize,
    /// While true, send calls wait before reaching the queue.
    held: watch::Sender<bool>,
}

impl Control {
    pub(crate) fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    pub(crate) fn hold(&self) {
        self.held.send_replace(true);
    }

    pub(crate) fn release(&self) {
        self.held.send_replace(false);
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// The embedded queue, wrapped.
#[derive(Debug, Clone)]
pub(crate) struct TestQueue {
    pub inner: EmbeddedQueue<MemoryBackend>,
    pub control: Arc<Control>,
}

impl WorkQueue for TestQueue {
    async fn send_call(&self, entries: &[&OutgoingMessage]) -> Result<Vec<SendOutcome>, QueueError> {
        self.control.calls.fetch_add(1, Ordering::SeqCst);
        self.control.entries.fetch_add(entries.len(), Ordering::SeqCst);
        let mut held = self.control.held.subscribe();
        held.wait_for(|held| !held).await.expect("the control outlives the queue");
        let fail = |sender_fault| {
            let code = if sender_fault { "InvalidParameterValue" } else { "ServiceUnavailable" };
            Ok(entries
                .iter()
                .map(|_| SendOutcome::Failed(SendFailure::new(code, "test queue says no", sender_fault)))
                .collect())
        };
        match self.control.mode.load(Ordering::SeqCst) {
            0 => self.inner.send_call(entries).await,
            1 => fail(false),
            _ => fail(true),
        }
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<Vec<ReceivedMessage>, QueueError> {
        self.inner.receive(request).await
    }
}

impl Queue for TestQueue {
    type Error = QueueError;

    async fn delete(&self, receipt: &ReceiptHandle) -> Result<(), QueueError> {
        self.inner.delete(receipt).await
    }

    async fn change_visibility(&self, receipt: &ReceiptHandle, timeout: Duration) -> Result<(), QueueError> {
        self.inner.change_visibility(receipt, timeout).await
    }

    async fn attributes(&self) -> Result<QueueAttributes, QueueError> {
        self.inner.attributes().await
    }
}

/// A running ingest and everything a test looks at.
pub(crate) struct Harness<C = Connection> {
    pub url: String,
    pub http: reqwest::Client,
    pub redis: TestRedis,
    pub queue: TestQueue,
    pub ingest: Ingest<C>,
    pub traces: Traces<C>,
    /// Cancelled by [`Harness::shutdown`], or when the harness is dropped.
    stop: Option<DropGuard>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl Harness {
    pub(crate) async fn start(test: &str) -> Self {
        Self::start_with(test, |_| {}).await
    }

    /// A harness whose config `tweak` may change (keys and keyspace set).
    pub(crate) async fn start_with(test: &str, tweak: impl FnOnce(&mut IngestConfig)) -> Self {
        let redis = TestRedis::new(test);
        let conn = connection(redis.settings()).await;
        Self::start_on(redis, conn, tweak).await
    }
}

impl<C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static> Harness<C> {
    /// As [`start_with`](Harness::start_with), over a given Redis connection.
    pub(crate) async fn start_on(redis: TestRedis, conn: C, tweak: impl FnOnce(&mut IngestConfig)) -> Self {
        let backend = MemoryBackend::new();
        backend.create_queue(QUEUE, &QueueConfig::default()).await.unwrap();
        let (held, _) = watch::channel(false);
        let control = Arc::new(Control {
            mode: AtomicU8::new(0),
            calls: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            held,
        });
        let queue = TestQueue { inner: EmbeddedQueue::new(backend, QUEUE), control };
        // KEY and OTHER_KEY post webhooks and rows anywhere; FORM_KEY rows
        // for one credential's one spreadsheet.
        let keys = ApiKeys::from_list(&Secret::from(format!(
            r#"{{"webhooks": ["{KEY}", "{OTHER_KEY}"], "sheets": [
                {{"key": "{KEY}", "credentials": "*"}}, {{"key": "{OTHER_KEY}", "credentials": "*"}},
                {{"key": "{FORM_KEY}", "credentials": ["cred-1"], "spreadsheets": ["1Sheet_id"]}}]}}"#
        )))
        .unwrap();
        let mut config = IngestConfig::new(keys);
        config.keyspace = redis.keyspace();
        // These tests are of acceptance itself and invent malls freely;
        // `tests/tenants.rs` runs the default, which refuses them.
        config.tenants = TenantPolicy::Any;
        tweak(&mut config);
        let traces = Traces::new(conn.clone(), redis.keyspace(), Duration::from_secs(60));
        let ingest = Ingest::new(config, queue.clone(), conn).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        let server = tokio::spawn(sluice_ingest::serve(listener, ingest.clone(), stop.clone().cancelled_owned()));
        let stop = Some(stop.drop_guard());
        Self { url, http: sluice_http::client(), redis, queue, ingest, traces, stop, server: Some(server) }
    }

    pub(crate) fn keyspace(&self) -> Keyspace {
        self.redis.keyspace()
    }

    /// Posts `body` (a JSON value, or raw text) to the webhook route.
    pub(crate) async fn post(
        &self,
        body: impl Into<reqwest::Body>,
        key: Option<&str>,
        trace: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .post(format!("{}/webhooks/cafe24", self.url))
            .header("content-type", "application/json")
            .body(body);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        if let Some(trace) = trace {
            request = request.header("x-trace-id", trace);
        }
        let response = tokio::time::timeout(BOUND, request.send()).await.expect("answered in time").unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text:?}"));
        (status, json)
    }

    /// Posts a sheet row with `key`.
    pub(crate) async fn post_row(&self, body: &Value, key: Option<&str>) -> (StatusCode, Value) {
        let mut request = self.http.post(format!("{}/sheets/rows", self.url)).body(body.to_string());
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        let response = tokio::time::timeout(BOUND, request.send()).await.expect("answered in time").unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text:?}")))
    }

    /// Posts a webhook with the right key.
    pub(crate) async fn send(&self, body: &Value, trace: Option<&str>) -> (StatusCode, Value) {
        self.post(body.to_string(), Some(KEY), trace).await
    }

    /// Every message waiting in the queue, in delivery order (receiving
    /// them: each group is served whole before it blocks).
    pub(crate) async fn drain(&self) -> Vec<ReceivedMessage> {
        let mut all = Vec::new();
        loop {
            let request = ReceiveRequest::new(10, Duration::from_secs(300), Duration::ZERO).unwrap();
            let batch = self.queue.inner.receive(request).await.unwrap();
            if batch.is_empty() {
                return all;
            }
            for message in &batch {
                self.queue.inner.delete(&message.receipt).await.unwrap();
            }
            all.extend(batch);
        }
    }

    pub(crate) async fn visible(&self) -> u64 {
        self.queue.inner.backend().attributes(QUEUE).await.unwrap().visible
    }

    pub(crate) async fn trace(&self, event_id: &str) -> Vec<TraceEntry> {
        self.traces.read(event_id).await.unwrap()
    }

    /// The group ledger `sluice status` reads.
    #[allow(dead_code)]
    pub(crate) async fn ledger(&self) -> sluice_redis::GroupLedger<sluice_redis::Connection> {
        sluice_redis::GroupLedger::new(self.redis.conn().await, self.redis.keyspace())
    }

    /// Every key but the group ledger's record of which groups were active
    /// lately (`{groups:<n>}:seen:` and `:about:` of each shard, kept 14
    /// days by design).
    #[allow(dead_code)]
    pub(crate) async fn keys_but_group_activity(&self) -> Vec<String> {
        let ledger = self.redis.keyspace().prefix().to_owned() + "{groups:";
        let is_activity = |k: &str| k.starts_with(&ledger) && (k.ends_with("}:seen:") || k.ends_with("}:about:"));
        self.redis.keys().await.into_iter().filter(|k| !is_activity(k)).collect()
    }

    pub(crate) async fn stages(&self, event_id: &str) -> Vec<String> {
        self.trace(event_id).await.into_iter().map(|e| e.stage).collect()
    }

    /// Stops the server gracefully and waits for it (and the batcher).
    pub(crate) async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.disarm().cancel();
        }
        if let Some(server) = self.server.take() {
            tokio::time::timeout(BOUND, server).await.expect("shuts down in time").unwrap().unwrap();
        }
    }
}

/// A connection as `settings` say, failing fast (one reconnect attempt,
/// 2 s timeouts) so an outage test does not wait long.
pub(crate) async fn connection(mut settings: ConnectSettings) -> Connection {
    settings.reconnect_retries = 1;
    settings.connect_timeout = Duration::from_secs(2);
    settings.response_timeout = Duration::from_secs(2);
    sluice_redis::connect(&settings).await.unwrap()
}

/// A product webhook as Cafe24 sends it.
pub(crate) fn product(mall: &str, product_no: u64) -> Value {
    json!({"event_no": 90002, "resource": {"mall_id": mall, "event_shop_no": "1", "product_no": product_no}})
}

/// The one event id a 202 names.
pub(crate) fn event_id(answer: &Value) -> String {
    let ids = answer["event_ids"].as_array().expect("event_ids");
    assert_eq!(ids.len(), 1, "{answer}");
    ids[0].as_str().unwrap().to_owned()
}
