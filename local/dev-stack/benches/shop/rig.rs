//! A full local stack over a sandbox Cafe24, for the benchmarks.

use sluice_cafe24::Secret;
use sluice_dev_stack::{DevConfig, DevStack};
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_pipeline::PipelineConfig;
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::ConnectSettings;
use sluice_redis::{BucketSpec, Keyspace};
use sluice_sandbox::cafe24::{BucketConfig, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_testkit::pipeline::sandbox_token;
use sluice_testkit::sandbox::cafe24_config;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const API_KEY: &str = "bench-key";

pub(crate) struct Rig {
    pub(crate) stack: DevStack,
    pub(crate) sandbox: Arc<Cafe24Sandbox>,
    _redis: RedisProcess,
}

impl Rig {
    pub(crate) async fn start(malls: &[String], bucket: BucketConfig) -> Self {
        Self::start_with(malls, bucket, true).await
    }

    /// [`start`](Self::start), flow control on or off: off, a mall's
    /// fetches that find its bucket empty wait in the state machine (Wait
    /// states) rather than leave it for the mall's catch-up runs.
    pub(crate) async fn start_with(malls: &[String], bucket: BucketConfig, flow_control: bool) -> Self {
        let redis = RedisProcess::start(ServerOptions::default()).expect("redis-server");
        let conn = sluice_redis::connect(&ConnectSettings::new(redis.url())).await.expect("connect");
        let sandbox = Cafe24Sandbox::start(Cafe24SandboxConfig {
            malls: malls.to_vec(),
            bucket,
            ..Cafe24SandboxConfig::default()
        })
        .await
        .expect("sandbox");
        let keyspace = Keyspace::default();
        let ingest =
            IngestConfig { keyspace, ..IngestConfig::new(ApiKeys::from_list(&Secret::new(API_KEY)).expect("keys")) };
        let cafe24 = cafe24_config(&sandbox);
        let config = DevConfig {
            pipeline: PipelineConfig {
                bucket: BucketSpec::new(bucket.capacity, bucket.leak_per_sec),
                ..PipelineConfig::default()
            },
            flow_control,
            ..DevConfig::on_free_ports(ingest, cafe24, sluice_sheets::SheetsConfig::new("", ""))
        };
        let stack = DevStack::start(conn, config).await.expect("stack");
        for mall in malls {
            stack.shop.set_token(mall, &sandbox_token(&sandbox, mall)).await.expect("token");
        }
        Self { stack, sandbox: Arc::new(sandbox), _redis: redis }
    }

    /// Commands the rig's redis-server has processed so far (INFO stats):
    /// every part of the stack's, the queue standing in for SQS included.
    pub(crate) async fn redis_commands(&self) -> u64 {
        let client = redis::Client::open(self._redis.url()).expect("url");
        let mut conn = client.get_multiplexed_async_connection().await.expect("connect");
        sluice_testkit::server_info::commands_processed(&mut conn).await
    }

    pub(crate) fn ingest_url(&self) -> String {
        self.stack.urls.iter().find(|(w, _)| *w == "Ingest").map(|(_, u)| u.clone()).expect("ingest url")
    }

    /// Sends the sandbox's webhooks to our ingest from now on.
    pub(crate) fn connect_webhooks(&self) {
        self.sandbox.set_webhook_target(Some(WebhookTarget { url: self.ingest_url(), api_key: Secret::new(API_KEY) }));
    }

    /// Waits until every accepted webhook's work is done: the queue empty
    /// with nothing in flight, and no mall's dirty set waiting for a drain
    /// run (flow control defers a flooding mall's webhooks there), twice in
    /// a row.
    pub(crate) async fn wait_drained(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut quiet = 0;
        while quiet < 2 {
            assert!(Instant::now() < deadline, "not drained within {timeout:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (events, _) = self.stack.queues().await.expect("attributes");
            let drains = self.stack.catch_up_queue().await.expect("attributes");
            let idle =
                events.visible == 0 && events.in_flight == 0 && drains.visible + drains.in_flight + drains.delayed == 0;
            quiet = if idle { quiet + 1 } else { 0 };
        }
    }

    pub(crate) async fn stop(self) {
        self.stack.stop().await.expect("stop");
        if let Ok(sandbox) = Arc::try_unwrap(self.sandbox) {
            sandbox.stop().await;
        }
    }
}

pub(crate) fn fields(i: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("product_name".into(), format!("edit {i}").into());
    fields
}

/// Applies `edits` (product ids, in order) as sandbox updates from
/// `clients` concurrent clients; each update sends its webhook.
pub(crate) async fn send_updates(sandbox: &Arc<Cafe24Sandbox>, mall: &str, edits: Vec<String>, clients: usize) {
    let edits = Arc::new(edits);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (sandbox, edits, next, mall) = (sandbox.clone(), edits.clone(), next.clone(), mall.to_owned());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(id) = edits.get(i) else { break };
                let report =
                    sandbox.update(&mall, sluice_domain::ResourceKind::Product, id, fields(i)).await.expect("update");
                let status = report.webhook.as_ref().and_then(|w| w.status);
                assert_eq!(status, Some(202), "ingest refused a webhook: {report:?}");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}
