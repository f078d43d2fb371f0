//! A shop pipeline on one machine for tests: `sluice dev`'s [`DevStack`]
//! over a sandbox Cafe24 and a private Redis, its state machine on a
//! faster clock, fed by the tests straight through its queue.

// Each test binary compiles this module and uses only part of it.

use sluice_asl::Clock;
use sluice_cafe24::{Cafe24Config, Secret, topic_for};
use sluice_dev_stack::{DevConfig, DevStack, DrainSetup, PipeConcurrency, PipeConfig};
use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{Queue, ResourceKind, ResourceRef, ShopEvent, ShopWork, WorkQueue};
use sluice_ingest::{ApiKeys, IngestConfig, KeyScope};
use sluice_pipeline::{CatchUpConfig, PipelineConfig};
use sluice_redis::{BucketSpec, FlowControl};
use sluice_sandbox::cafe24::{BucketConfig, ChangeReport};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig, FaultConfig};
use sluice_sheets::SheetsConfig;
use sluice_testkit::pipeline::sandbox_token;
use sluice_testkit::sandbox::cafe24_config;
use sluice_testkit::{TestRedis, now_ms};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The API key the stack's ingest takes.
pub(crate) const KEY: &str = "test-key";

/// `sluice dev`'s stack on free ports under `redis`'s keyspace, ingest
/// taking [`KEY`].
pub(crate) fn dev_config(redis: &TestRedis, cafe24: Cafe24Config, sheets: SheetsConfig) -> DevConfig {
    let api_keys = ApiKeys::scoped([(Secret::new(KEY), KeyScope::any_route())]).expect("api keys");
    let ingest = IngestConfig { keyspace: redis.keyspace(), ..IngestConfig::new(api_keys) };
    DevConfig::on_free_ports(ingest, cafe24, sheets)
}

/// Starts `config`'s stack on `redis`.
pub(crate) async fn start(redis: &TestRedis, config: DevConfig) -> DevStack {
    DevStack::start(redis.conn().await, config).await.expect("stack")
}

/// What a test may vary.
pub(crate) struct Setup {
    pub malls: Vec<String>,
    /// The sandbox's bucket (the upstream's truth).
    pub upstream_bucket: BucketConfig,
    /// The pipeline's idea of it (normally the same).
    pub pipeline_bucket: BucketSpec,
    pub faults: FaultConfig,
    pub max_receive_count: u32,
    pub workers: usize,
    /// The drain to PostgreSQL, and where alerts go.
    pub drain: Option<DrainSetup>,
    pub alert_url: Option<String>,
    /// Flow control per mall (only webhooks through ingest are deferred).
    pub flow: FlowControl,
    /// How many batches the pipe runs at once.
    pub pipe_concurrency: PipeConcurrency,
    /// Each step's reserved concurrency (`None`: unlimited).
    pub step_concurrency: Option<usize>,
    /// The state machine's waits on the wall clock, as in AWS, instead of
    /// [`FastClock`]'s tenth of them.
    pub real_clock: bool,
}

impl Setup {
    pub(crate) fn new(malls: &[&str]) -> Self {
        Self {
            malls: malls.iter().map(|m| m.to_string()).collect(),
            upstream_bucket: BucketConfig::new(10, 20.0),
            pipeline_bucket: BucketSpec::new(10, 20.0),
            faults: FaultConfig::default(),
            max_receive_count: 5,
            workers: 4,
            drain: None,
            alert_url: None,
            flow: FlowControl::default(),
            pipe_concurrency: PipeConcurrency::OneBatchPerWorker,
            step_concurrency: Some(sluice_dev_stack::STEP_CONCURRENCY),
            real_clock: false,
        }
    }
}

pub(crate) struct Stack {
    pub redis: TestRedis,
    pub sandbox: Cafe24Sandbox,
    pub dev: DevStack,
    sent: Vec<ShopWork>,
}

impl Stack {
    pub(crate) async fn start(test: &str, setup: Setup) -> Self {
        let redis = TestRedis::new(test);
        let sandbox = Cafe24Sandbox::start(Cafe24SandboxConfig {
            malls: setup.malls.clone(),
            bucket: setup.upstream_bucket,
            faults: setup.faults,
            ..Cafe24SandboxConfig::default()
        })
        .await
        .expect("sandbox");
        let cafe24 = cafe24_config(&sandbox).with_timeouts(Duration::from_secs(2), Duration::from_secs(1));
        let config = DevConfig {
            max_receive_count: setup.max_receive_count,
            pipeline: PipelineConfig {
                bucket: setup.pipeline_bucket,
                max_receive_count: setup.max_receive_count,
                snapshot_shards: 4,
                catch_up: CatchUpConfig { flow: setup.flow, ..CatchUpConfig::default() },
                ..PipelineConfig::default()
            },
            pipe: PipeConfig {
                wait: Duration::from_secs(1),
                workers: setup.workers,
                concurrency: setup.pipe_concurrency,
                retry_after: Some(Duration::from_millis(200)),
                ..PipeConfig::default()
            },
            step_concurrency: setup.step_concurrency,
            clock: if setup.real_clock { Arc::new(sluice_asl::SystemClock) } else { Arc::new(FastClock) },
            drain: setup.drain,
            alert_url: setup.alert_url,
            ..dev_config(&redis, cafe24, SheetsConfig::new("", ""))
        };
        let dev = start(&redis, config).await;
        for mall in &setup.malls {
            dev.shop.set_token(mall, &sandbox_token(&sandbox, mall)).await.expect("seed token");
        }
        Self { redis, sandbox, dev, sent: Vec::new() }
    }

    /// Enqueues the event of each change, as ingest would (without
    /// coalescing: every event is its own message).
    pub(crate) async fn enqueue(&mut self, changes: &[ChangeReport]) {
        let works: Vec<ShopWork> = changes.iter().map(work_for).collect();
        self.enqueue_works(works).await;
    }

    pub(crate) async fn enqueue_works(&mut self, works: Vec<ShopWork>) {
        let messages: Vec<OutgoingMessage> = works.iter().map(ShopWork::to_message).collect();
        for outcome in self.dev.events.send_batch(&messages).await {
            assert!(outcome.is_accepted(), "{outcome:?}");
        }
        self.sent.extend(works);
    }

    pub(crate) async fn enqueue_raw(&self, group: &str, dedup: &str, body: &str) {
        let message = OutgoingMessage::new(
            sluice_domain::GroupKey::parse(group).unwrap(),
            sluice_domain::DedupId::parse(dedup).unwrap(),
            body,
        );
        assert!(self.dev.events.send_batch(&[message]).await[0].is_accepted());
    }

    pub(crate) fn sent(&self) -> &[ShopWork] {
        &self.sent
    }

    /// Every stored snapshot, in stream order per shard.
    pub(crate) async fn stored(&self) -> Vec<Stored> {
        let mut conn = self.redis.conn().await;
        let mut out = Vec::new();
        for shard in 0..4 {
            let key = format!("{}{{store:{shard}}}:stream:", self.redis.keyspace().prefix());
            let entries: Vec<(String, Vec<(String, String)>)> =
                redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(&mut conn).await.expect("XRANGE");
            for (id, fields) in entries {
                let entry = sluice_redis::StoredEntry { id, fields: fields.into_iter().collect() };
                if entry.is_outcome() {
                    continue; // a dead-lettered event, no snapshot
                }
                let snapshot = entry.snapshot().expect("a snapshot");
                out.push(Stored {
                    mall_id: snapshot.mall_id.into_owned(),
                    kind: snapshot.kind.into_owned(),
                    id: snapshot.id.into_owned(),
                    status: snapshot.status.into_owned(),
                    version: snapshot.version,
                    event_ids: serde_json::from_str(snapshot.event_ids.get()).expect("event ids"),
                    body: snapshot.body.get().to_owned(),
                });
            }
        }
        out
    }

    /// Waits until every sent event is answered by a stored snapshot.
    pub(crate) async fn wait_until_stored(&self, timeout: Duration) -> Vec<Stored> {
        let deadline = Instant::now() + timeout;
        loop {
            let stored = self.stored().await;
            let answered: std::collections::HashSet<&String> = stored.iter().flat_map(|s| &s.event_ids).collect();
            if self.sent.iter().all(|w| answered.contains(&w.event_id)) {
                return stored;
            }
            assert!(
                Instant::now() < deadline,
                "only {} of {} events stored after {timeout:?}; pipe: {:?}",
                self.sent.iter().filter(|w| answered.contains(&w.event_id)).count(),
                self.sent.len(),
                self.dev.pipe
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the DLQ holds `n` messages and returns them.
    pub(crate) async fn wait_for_dlq(&self, n: usize, timeout: Duration) -> Vec<sluice_domain::queue::ReceivedMessage> {
        let deadline = Instant::now() + timeout;
        loop {
            let attributes = self.dev.dlq.attributes().await.expect("attributes");
            if attributes.visible as usize >= n {
                let request = ReceiveRequest::new(10, Duration::from_secs(30), Duration::ZERO).unwrap();
                return self.dev.dlq.receive(request).await.expect("receive");
            }
            assert!(Instant::now() < deadline, "DLQ holds {} of {n} after {timeout:?}", attributes.visible);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The stack's URL for `what` (as `sluice dev` prints it).
    pub(crate) fn url(&self, what: &str) -> String {
        self.dev.urls.iter().find(|(w, _)| *w == what).map(|(_, url)| url.clone()).expect(what)
    }

    /// The pipeline's executions the Step Functions endpoint remembers,
    /// newest first, once the pipe has started none that it does not list
    /// and all have ended.
    pub(crate) async fn executions(&self, timeout: Duration) -> Vec<aws_sdk_sfn::types::ExecutionListItem> {
        let endpoint = sluice_aws::SfnEndpoint::Local(self.url("Step Functions endpoint"));
        let client = sluice_aws::sfn_client(&endpoint).await;
        let deadline = Instant::now() + timeout;
        loop {
            let listed = client.list_executions().state_machine_arn(self.url("State machine")).max_results(1000);
            let listed = listed.send().await.expect("ListExecutions").executions().to_vec();
            let batches = self.dev.pipe.batches.load(std::sync::atomic::Ordering::Relaxed);
            let running = listed.iter().any(|e| e.status().as_str() == "RUNNING");
            if listed.len() as u64 == batches && !running {
                return listed;
            }
            assert!(Instant::now() < deadline, "{} executions for {batches} batches after {timeout:?}", listed.len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn stop(self) {
        self.dev.stop().await.expect("stop");
        self.sandbox.stop().await;
    }
}

/// A stored snapshot, as the drain worker would read it.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub mall_id: String,
    pub kind: String,
    pub id: String,
    pub status: String,
    pub version: Option<u64>,
    pub event_ids: Vec<String>,
    /// The resource as fetched (JSON text).
    pub body: String,
}

/// A Slack-compatible webhook on 127.0.0.1 keeping each alert's text.
pub(crate) async fn alert_receiver() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let alerts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = alerts.clone();
    let app = axum::Router::new().route(
        "/alerts",
        axum::routing::post(move |body: axum::Json<serde_json::Value>| async move {
            kept.lock().unwrap().push(body["text"].as_str().unwrap_or_default().to_owned());
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/alerts", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, alerts)
}

/// The event id ingest gave the webhook the sandbox sent for `change`.
pub(crate) fn delivered_event_id(change: &ChangeReport) -> String {
    let delivery = change.webhook.as_ref().expect("the sandbox sent a webhook");
    let topic = topic_for(change.kind, change.change).topic();
    let resource = ResourceRef { kind: change.kind, id: change.id.clone() };
    let event = ShopEvent::new(change.mall_id.clone(), topic, resource, delivery.trace_id.clone()).expect("event");
    ShopWork::new(event, 0).event_id
}

/// The event a change's webhook carries, with a unique delivery id.
pub(crate) fn work_for(change: &ChangeReport) -> ShopWork {
    static DELIVERIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let delivery = DELIVERIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let topic = topic_for(change.kind, change.change).topic();
    let event = ShopEvent::new(
        change.mall_id.clone(),
        topic,
        ResourceRef { kind: change.kind, id: change.id.clone() },
        format!("delivery-{delivery}"),
    )
    .expect("event");
    ShopWork::new(event, now_ms())
}

pub(crate) fn product(name: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("product_name".into(), name.into());
    fields
}

/// A product with enough variants to make its body at least `bytes` long.
pub(crate) fn big_product(bytes: usize) -> serde_json::Map<String, serde_json::Value> {
    let variant = |i: usize| serde_json::json!({"variant_code": format!("V{i:07}"), "options": [{"name": "size", "value": "x".repeat(180)}]});
    let mut fields = product("many variants");
    fields.insert("variants".into(), (0..bytes / 200 + 1).map(variant).collect());
    fields
}

pub(crate) const PRODUCT: ResourceKind = ResourceKind::Product;

/// The state machine's own waits (Retry intervals, Wait states) ten times
/// faster, so fault tests do not sit out seconds of backoff. What the steps
/// wait for (the mall's bucket) runs on real time, as the sandbox does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastClock;

impl Clock for FastClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, duration: Duration) -> futures_sleep::BoxFuture {
        Box::pin(tokio::time::sleep(duration / 10))
    }
}

mod futures_sleep {
    pub(crate) type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;
}
