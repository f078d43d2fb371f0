//! One flooding mall among quiet ones, on the whole local stack with the
//! SQS-faithful queue: the scenario `make bench` (bench/noisy.md) runs at
//! full scale and `tests/noisy_neighbour.rs` at a small one.
//!
//! Quiet malls each send one webhook a second (a new product each time)
//! for the whole run; in the flood modes, the hot mall sends a webhook for
//! each of `hot_events` distinct new resources as fast as ingest takes
//! them, spread over products, orders and customers: three FIFO groups, so
//! it holds as many pipes as one mall can (a group has one batch in flight
//! at a time). The pipe's workers are as many as the template deploys
//! pipes (`PipeCount`'s default), each waiting for its execution, or
//! scaled out (a pipe that runs many batches at once, as AWS's Pipes page
//! describes); the steps are held to the template's reserved concurrency
//! either way. Figures come from Redis's clock: a quiet event's latency runs
//! from its trace's `received` to its `stored`, the hot mall's rate
//! from its snapshots' stream entry ids.

use futures::StreamExt;
use sluice_cafe24::Secret;
use sluice_cafe24::{Change, topic_for};
use sluice_dev_stack::{DevConfig, DevStack, PipeConcurrency, PipeConfig};
use sluice_domain::{ResourceKind, ResourceRef, ShopEvent, ShopWork};
use sluice_ingest::{ApiKeys, IngestConfig};
use sluice_pipeline::{CatchUpConfig, PipelineConfig};
use sluice_redis::{BucketSpec, FlowControl, Keyspace};
use sluice_sandbox::cafe24::{BucketConfig, ChangeReport, WebhookTarget};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_sqs_emulator::GroupScan;
use sluice_testkit::pipeline::sandbox_token;
use sluice_testkit::sandbox::cafe24_config;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const API_KEY: &str = "noisy-key";
const HOT: &str = "hot";
/// infra/template.yaml's `PipeCount` default (`tests/noisy_neighbour.rs`
/// checks it): the pipes that read the FIFO queue in AWS.
pub(crate) const PIPE_COUNT: usize = 4;
/// The hot mall's resources, one FIFO group each.
const HOT_KINDS: [ResourceKind; 3] = [ResourceKind::Product, ResourceKind::Order, ResourceKind::Customer];

/// How big a run is.
#[derive(Debug, Clone)]
pub(crate) struct Scale {
    pub(crate) hot_events: usize,
    pub(crate) quiet_malls: usize,
    /// How long the quiet malls send (the flood starts after 2 s of it).
    pub(crate) quiet_seconds: u64,
    /// Every mall's bucket at the sandbox (the pipeline's has one unit
    /// less capacity, the same rate).
    pub(crate) bucket: (u32, f64),
    /// The FIFO queue's scan window (SQS: 120,000).
    pub(crate) scan_window: u32,
    /// Flow control's threshold, in the mode that has it.
    pub(crate) max_queued: u32,
    /// Webhook requests of the hot mall in flight at once.
    pub(crate) flood_concurrency: usize,
    /// The longest the run may take to store everything.
    pub(crate) limit: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Quiet malls alone.
    Quiet,
    /// The flood, every webhook a message (the design before flow control).
    Flood,
    /// The flood with flow control per mall.
    FloodWithFlowControl,
}

impl Mode {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Quiet => "(a) quiet malls alone",
            Self::Flood => "(b) flood, one message per webhook",
            Self::FloodWithFlowControl => "(c) flood, flow control per mall",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) mode: Mode,
    pub(crate) pipe: PipeConcurrency,
    /// Step invocations refused for their reserved concurrency.
    pub(crate) throttles: u64,
    /// The most batches the pipe ran at once.
    pub(crate) max_batches: u64,
    /// Quiet events' webhook → stored latencies, ms, sorted.
    pub(crate) quiet_ms: Vec<u64>,
    pub(crate) hot_stored: usize,
    /// The hot mall's stores per second past its first bucketful, over the
    /// bucket's rate (1.0 = every unit used).
    pub(crate) hot_rate_fraction: f64,
    /// Most messages in the FIFO queue (visible + in flight) at a sample.
    pub(crate) max_depth: u64,
    /// Most Redis memory above the run's start, bytes.
    pub(crate) peak_memory: i64,
    pub(crate) sent: usize,
    pub(crate) lost: usize,
    pub(crate) refused_by_upstream: u64,
    pub(crate) deferred: u64,
    /// Fetches that waited for their mall's bucket while holding a pipe:
    /// inline waits and Wait states (the fetch step's `limiter_waits`).
    pub(crate) pipe_waits: u64,
    /// Fetches handed over to their mall's dirty set instead.
    pub(crate) handed_over: u64,
    pub(crate) elapsed: Duration,
}

impl Outcome {
    pub(crate) fn quiet_percentile(&self, p: f64) -> u64 {
        if self.quiet_ms.is_empty() {
            return 0;
        }
        let rank = ((self.quiet_ms.len() as f64 * p).ceil() as usize).clamp(1, self.quiet_ms.len());
        self.quiet_ms[rank - 1]
    }
}

fn event_id(change: &ChangeReport) -> Option<String> {
    let delivery = change.webhook.as_ref()?;
    let topic = topic_for(change.kind, Change::Created).topic();
    let resource = ResourceRef { kind: change.kind, id: change.id.clone() };
    let event = ShopEvent::new(change.mall_id.clone(), topic, resource, delivery.trace_id.clone()).ok()?;
    Some(ShopWork::new(event, 0).event_id)
}

/// Runs one mode on its own stack (under `keyspace`) and sandbox.
pub(crate) async fn run(
    conn: sluice_redis::Connection,
    keyspace: Keyspace,
    scale: &Scale,
    mode: Mode,
    pipe: PipeConcurrency,
) -> Outcome {
    let quiet: Vec<String> = (0..scale.quiet_malls).map(|i| format!("quiet-{i}")).collect();
    let malls: Vec<String> = std::iter::once(HOT.to_owned()).chain(quiet.iter().cloned()).collect();
    let (capacity, rate) = scale.bucket;
    let sandbox = Cafe24Sandbox::start(Cafe24SandboxConfig {
        malls: malls.clone(),
        bucket: BucketConfig::new(capacity, rate),
        ..Cafe24SandboxConfig::default()
    })
    .await
    .expect("sandbox");
    let api_keys = ApiKeys::from_list(&Secret::new(API_KEY)).expect("keys");
    let ingest = IngestConfig { keyspace, ..IngestConfig::new(api_keys) };
    let flow = FlowControl { max_queued: scale.max_queued, ..FlowControl::default() };
    let config = DevConfig {
        group_scan: GroupScan::SqsFifo { window: scale.scan_window },
        flow_control: mode == Mode::FloodWithFlowControl,
        pipeline: PipelineConfig {
            bucket: BucketSpec::new(capacity, rate),
            catch_up: CatchUpConfig { flow, ..CatchUpConfig::default() },
            ..PipelineConfig::default()
        },
        pipe: PipeConfig { workers: PIPE_COUNT, concurrency: pipe, ..PipeConfig::default() },
        ..DevConfig::on_free_ports(ingest, cafe24_config(&sandbox), sluice_sheets::SheetsConfig::new("", ""))
    };
    let stack = DevStack::start(conn.clone(), config).await.expect("stack");
    for mall in &malls {
        stack.shop.set_token(mall, &sandbox_token(&sandbox, mall)).await.expect("token");
    }
    let url = stack.urls.iter().find(|(w, _)| *w == "Ingest").map(|(_, u)| u.clone()).expect("ingest url");
    sandbox.set_webhook_target(Some(WebhookTarget { url, api_key: Secret::new(API_KEY) }));
    let sandbox = Arc::new(sandbox);
    let started = Instant::now();
    let memory_at_start = used_memory(&conn).await;

    let done = Arc::new(AtomicBool::new(false));
    let (max_depth, peak_memory) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let sampler = {
        let (events, conn, done) = (stack.events.clone(), conn.clone(), done.clone());
        let (max_depth, peak_memory) = (max_depth.clone(), peak_memory.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Ok(a) = sluice_domain::Queue::attributes(&events).await {
                    max_depth.fetch_max(a.visible + a.in_flight, Ordering::Relaxed);
                }
                peak_memory.fetch_max(used_memory(&conn).await.max(0) as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    let quiet_senders = quiet.iter().map(|mall| {
        let (sandbox, mall, seconds) = (sandbox.clone(), mall.clone(), scale.quiet_seconds);
        tokio::spawn(async move {
            let mut ids = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            for n in 0..seconds {
                tick.tick().await;
                let change = sandbox.create(&mall, ResourceKind::Product, product(&format!("q{n}"))).await;
                ids.extend(change.ok().as_ref().and_then(event_id));
            }
            ids
        })
    });
    let quiet_senders: Vec<_> = quiet_senders.collect();
    let mut hot_ids = Vec::new();
    let mut flood_sent_ms = 0;
    if mode != Mode::Quiet {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let sandbox = sandbox.clone();
        let changes: Vec<Option<String>> = futures::stream::iter(0..scale.hot_events)
            .map(|n| {
                let sandbox = sandbox.clone();
                async move {
                    let kind = HOT_KINDS[n % HOT_KINDS.len()];
                    let change = sandbox.create(HOT, kind, product(&format!("h{n}"))).await;
                    change.ok().as_ref().and_then(event_id)
                }
            })
            .buffer_unordered(scale.flood_concurrency)
            .collect()
            .await;
        hot_ids = changes.into_iter().flatten().collect();
        flood_sent_ms = redis_ms(&conn).await;
    }
    let mut quiet_ids = Vec::new();
    for sender in quiet_senders {
        quiet_ids.extend(sender.await.expect("quiet sender"));
    }
    let sent = quiet_ids.len() + hot_ids.len() + if mode == Mode::Quiet { 0 } else { scale.hot_events - hot_ids.len() };

    let wanted: HashSet<&String> = quiet_ids.iter().chain(&hot_ids).collect();
    let deadline = Instant::now() + scale.limit;
    let stored = loop {
        let stored = stored_answers(stack.shop.snapshots()).await;
        let answered: HashSet<&String> = stored.iter().flat_map(|(_, _, ids)| ids).collect();
        if wanted.iter().all(|id| answered.contains(id)) || Instant::now() >= deadline {
            break stored;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let answered: HashSet<&String> = stored.iter().flat_map(|(_, _, ids)| ids).collect();
    let lost = wanted.iter().filter(|id| !answered.contains(*id)).count();

    let mut quiet_ms = Vec::new();
    for id in &quiet_ids {
        let trace = stack.shop.traces().read(id).await.expect("trace");
        let at = |stage: &str| trace.iter().find(|e| e.stage == stage).map(|e| e.at_ms);
        if let (Some(received), Some(stored)) = (at("received"), at("stored")) {
            quiet_ms.push(stored.saturating_sub(received));
        }
    }
    quiet_ms.sort_unstable();
    let mut hot_times: Vec<u64> = stored.iter().filter(|(mall, _, _)| mall == HOT).map(|(_, ms, _)| *ms).collect();
    hot_times.sort_unstable();
    let hot_rate_fraction = rate_fraction(&hot_times, flood_sent_ms, rate);
    let outcome = Outcome {
        mode,
        pipe,
        throttles: stack.step_throttles(),
        max_batches: stack.pipe.max_in_flight.load(Ordering::Relaxed),
        quiet_ms,
        hot_stored: hot_times.len(),
        hot_rate_fraction,
        max_depth: max_depth.load(Ordering::Relaxed),
        peak_memory: peak_memory.load(Ordering::Relaxed) as i64 - memory_at_start,
        sent,
        lost,
        refused_by_upstream: sandbox.counters().refused_bucket,
        deferred: stack.ingest.snapshot().deferred,
        pipe_waits: step_count(&stack, "limiter_waits"),
        handed_over: step_count(&stack, "fetches_handed_over"),
        elapsed,
    };
    stack.stop().await.expect("stop");
    if let Ok(sandbox) = Arc::try_unwrap(sandbox) {
        sandbox.stop().await;
    }
    outcome
}

/// The hot mall's stores per second once its whole flood was sent (from
/// then on its backlog, not its webhooks' arrival, bounds the rate), over
/// the bucket's rate.
fn rate_fraction(times_ms: &[u64], flood_sent_ms: u64, rate: f64) -> f64 {
    let after: Vec<u64> = times_ms.iter().copied().filter(|&ms| ms > flood_sent_ms).collect();
    let Some(last) = after.last() else { return 0.0 };
    let span = (last - flood_sent_ms) as f64 / 1000.0;
    if span <= 0.0 {
        return 0.0;
    }
    (after.len() as f64 / span) / rate
}

/// The fetch step's running total `name` (its `/metrics` name).
fn step_count(stack: &DevStack, name: &str) -> u64 {
    let metrics = stack.shop.metrics_handle();
    sluice_pipeline::step_metrics::COUNTERS.iter().filter(|c| c.name == name).map(|c| c.get(&metrics)).sum()
}

async fn redis_ms(conn: &sluice_redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.unwrap_or((0, 0));
    s * 1000 + us / 1000
}

/// Every stored snapshot's (mall, Redis ms of its store, events answered).
async fn stored_answers(
    store: &sluice_redis::SnapshotStore<sluice_redis::Connection>,
) -> Vec<(String, u64, Vec<String>)> {
    let mut out = Vec::new();
    for shard in 0..store.shards() {
        let mut after = "-".to_owned();
        loop {
            let entries = store.read(shard, &after, 1000).await.expect("XRANGE");
            let Some(last) = entries.last() else { break };
            after = last.id.clone();
            for entry in entries {
                let ms = entry.id.split('-').next().and_then(|ms| ms.parse().ok()).unwrap_or(0);
                let Ok(snapshot) = entry.snapshot() else { continue };
                let ids = serde_json::from_str(snapshot.event_ids.get()).unwrap_or_default();
                out.push((snapshot.mall_id.into_owned(), ms, ids));
            }
        }
    }
    out
}

async fn used_memory(conn: &sluice_redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn.clone()).await.unwrap_or_default();
    let field = info.lines().find_map(|l| l.strip_prefix("used_memory:"));
    field.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

fn product(name: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("product_name".into(), name.into());
    fields
}
