//! The steps one at a time, against real Redis and the sandbox Cafe24.

use crate::sheet_support;

use serde_json::json;
use sluice_domain::{ErrorKind, ResourceKind};
use sluice_pipeline::step_io::{
    FetchInput, FetchNext, ItemKind, ItemPlan, PipeAttributes, PipeMessage, PlanInput, StoreInput, TokenInput,
};
use sluice_pipeline::{PipelineConfig, ServiceCore, ShopService};
use sluice_redis::Connection;
use sluice_redis::{BucketSpec, Coalescing, Gates, MarkTimes, ParkedMalls, Tag};
use sluice_sandbox::cafe24::BucketConfig;
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig, FaultConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::pipeline::{item_plan, sandbox_token};
use sluice_testkit::sandbox::cafe24_client;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn steps(redis: &TestRedis, sandbox: &Cafe24Sandbox, config: PipelineConfig) -> ShopService<Connection> {
    let core = ServiceCore::new(redis.conn().await, redis.keyspace(), config);
    ShopService::new(core, cafe24_client(sandbox)).unwrap()
}

async fn sandbox(malls: &[&str], bucket: BucketConfig) -> Cafe24Sandbox {
    let config = Cafe24SandboxConfig {
        malls: malls.iter().map(|m| m.to_string()).collect(),
        bucket,
        ..Cafe24SandboxConfig::default()
    };
    Cafe24Sandbox::start(config).await.unwrap()
}

fn item(mall: &str, id: &str, delivery: &str) -> ItemPlan {
    item_plan(mall, id, delivery, 1)
}

fn message(id: &str, group: &str, body: String) -> PipeMessage {
    PipeMessage {
        message_id: id.into(),
        receipt_handle: String::new(),
        body,
        attributes: PipeAttributes {
            approximate_receive_count: "2".into(),
            message_group_id: group.into(),
            message_deduplication_id: None,
            sent_timestamp: None,
        },
    }
}

#[tokio::test]
async fn plan_groups_a_mixed_batch_in_arrival_order() {
    let redis = TestRedis::new("plan");
    let sandbox = sandbox(&[], BucketConfig::default()).await;
    let last = PipelineConfig { max_receive_count: 2, ..PipelineConfig::default() };
    let last_steps = steps(&redis, &sandbox, last).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    let body = |i: &ItemPlan| serde_json::to_string(i.work.as_ref().unwrap()).unwrap();
    let (a1, b1, a2) = (item("a", "1", "d1"), item("b", "1", "d2"), item("a", "2", "d3"));
    let input = PlanInput {
        messages: vec![
            message("m1", "gs:a:90002", body(&a1)),
            message("m2", "gs:b:90002", body(&b1)),
            message("m3", "gs:a:90002", body(&a2)),
            message("m4", "gs:a:90002", "not json".into()),
        ],
    };
    let plan = steps.core().plan_batch(input).await.unwrap();
    assert_eq!(plan.max_concurrency, 10);
    assert_eq!(plan.groups.len(), 2);
    let a = &plan.groups[0];
    assert_eq!((a.group.as_str(), a.count, a.position), ("gs:a:90002", 3, 0));
    let ids: Vec<&str> = a.items.iter().map(|i| i.item_id.as_str()).collect();
    assert_eq!(ids, ["m1", "m3", "m4"]);
    assert_eq!(a.items[0].receive_count, 2);
    assert!(!a.items[0].last_receive, "receive 2 of 5 is not the last");
    assert_eq!(a.items[2].kind, ItemKind::Invalid);
    assert!(a.items[2].invalid.as_deref().unwrap().contains("not a work item"));
    // Item i failing reports it and every later item of its group.
    let tails: Vec<Vec<&str>> =
        a.remaining.iter().map(|r| r.iter().map(|f| f.item_identifier.as_str()).collect()).collect();
    assert_eq!(tails, vec![vec!["m1", "m3", "m4"], vec!["m3", "m4"], vec!["m4"]]);
    assert_eq!(plan.groups[1].items[0].item_id, "m2");
    // At maxReceiveCount 2, the second receive is the last before the
    // dead-letter queue: a throttle then records the failure (the definition's SendBackOrRecord).
    let input = PlanInput { messages: vec![message("m5", "gs:a:90002", body(&a1))] };
    assert!(last_steps.core().plan_batch(input).await.unwrap().groups[0].items[0].last_receive);
    sandbox.stop().await;
}

#[tokio::test]
async fn fetch_waits_short_waits_itself_and_hands_long_ones_back() {
    let redis = TestRedis::new("fetch_wait");
    // One call per 4 s: the second fetch must come back later.
    let sandbox = sandbox(&["slow"], BucketConfig::new(1, 0.25)).await;
    let config = PipelineConfig { bucket: BucketSpec::new(1, 0.25), ..PipelineConfig::default() };
    let steps = steps(&redis, &sandbox, config).await;
    steps.set_token("slow", &sandbox_token(&sandbox, "slow")).await.unwrap();
    let created = sandbox.create("slow", ResourceKind::Product, serde_json::Map::new()).await.unwrap();
    let first = steps.fetch(FetchInput::new(item("slow", &created.id, "w1"))).await.unwrap();
    assert_eq!(first.outcome, FetchNext::Fetched);
    let second = steps.fetch(FetchInput::new(item("slow", &created.id, "w2"))).await.unwrap();
    assert_eq!(second.outcome, FetchNext::Wait);
    assert_eq!(second.wait_seconds, 4, "a 4 s wait, rounded up to whole seconds");
    assert_eq!(sandbox.counters().calls, 1, "the second fetch must not call");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_fetch_answers_the_events_coalesced_into_it_and_store_is_idempotent() {
    let redis = TestRedis::new("coalesced");
    let sandbox = sandbox(&["shop"], BucketConfig::default()).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    steps.set_token("shop", &sandbox_token(&sandbox, "shop")).await.unwrap();
    let created = sandbox.create("shop", ResourceKind::Product, serde_json::Map::new()).await.unwrap();
    let owner = item("shop", &created.id, "o1");
    let owner_id = owner.work.as_ref().unwrap().event_id().to_owned();
    // Ingest marked the fetch pending; two later webhooks joined it.
    let gates = Gates::new(redis.conn().await, redis.keyspace());
    let tag = Tag::for_mall("shop");
    let gate = format!("product:{}", created.id);
    let times = MarkTimes { lease: Duration::from_secs(30), pending: Duration::from_secs(60) };
    assert_eq!(gates.claim(&tag, &gate, &owner_id, true, times).await.unwrap(), Coalescing::Owner);
    assert!(gates.confirm(&tag, &gate, &owner_id, times.pending).await.unwrap());
    for id in ["joined-1", "joined-2"] {
        gates.claim(&tag, &gate, id, true, times).await.unwrap();
    }
    let fetched = steps.fetch(FetchInput::new(owner.clone())).await.unwrap();
    let snapshot = fetched.snapshot.unwrap();
    assert_eq!(snapshot.answers, 3);
    assert_eq!(snapshot.version, Some(created.version));
    // The mark is gone: the next webhook starts a new fetch.
    assert_eq!(gates.claim(&tag, &gate, "later", true, times).await.unwrap(), Coalescing::Owner);
    let first = steps.store(StoreInput { item: owner.clone(), snapshot: snapshot.clone() }).await.unwrap();
    let again = steps.store(StoreInput { item: owner, snapshot }).await.unwrap();
    assert!(!first.duplicate && again.duplicate);
    assert_eq!(first.entry_id, again.entry_id);
    let entries = steps.snapshots().read(first.shard, "-", 10).await.unwrap();
    assert_eq!(entries.len(), 1);
    let answered: Vec<String> = serde_json::from_str(entries[0].snapshot().unwrap().event_ids.get()).unwrap();
    assert_eq!(answered, [owner_id.as_str(), "joined-1", "joined-2"]);
    let trace = steps.traces().read("joined-2").await.unwrap();
    let stages: Vec<&str> = trace.iter().map(|e| e.stage.as_str()).collect();
    assert_eq!(stages, ["fetch", "stored", "stored"]);
    assert_eq!(trace[0].detail, json!({"by": owner_id}));
    sandbox.stop().await;
}

#[tokio::test]
async fn a_300_kb_product_passes_from_fetch_to_store_by_key() {
    let redis = TestRedis::new("big_product");
    let sandbox = sandbox(&["big"], BucketConfig::default()).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    steps.set_token("big", &sandbox_token(&sandbox, "big")).await.unwrap();
    let created = sandbox.create("big", ResourceKind::Product, big_product(300 * 1024)).await.unwrap();
    let item = item("big", &created.id, "b1");
    let fetched = steps.fetch(FetchInput::new(item.clone())).await.unwrap();
    // What goes back to the state machine is a key and a summary.
    let output = serde_json::to_string(&fetched).unwrap();
    assert!(output.len() < 1024, "the fetch step's output carries the body: {} bytes", output.len());
    let snapshot = fetched.snapshot.unwrap();
    assert!(snapshot.body_bytes > 300 * 1024, "{snapshot:?}");
    let mut conn = redis.conn().await;
    let ttl: i64 = redis::cmd("PTTL").arg(&snapshot.key).query_async(&mut conn).await.unwrap();
    assert!(ttl > 0 && ttl <= 15 * 60 * 1000, "the fetched snapshot's TTL: {ttl}");
    // The store step's input is as small, and it stores the whole body.
    let input = StoreInput { item: item.clone(), snapshot: snapshot.clone() };
    assert!(serde_json::to_string(&input).unwrap().len() < 2048);
    let stored = steps.store(input).await.unwrap();
    let entries = steps.snapshots().read(stored.shard, "-", 10).await.unwrap();
    // One field: the whole snapshot, its body embedded.
    assert_eq!(entries[0].fields.keys().collect::<Vec<_>>(), [sluice_redis::SNAPSHOT_FIELD]);
    let entry = entries[0].snapshot().unwrap();
    let body: serde_json::Value = serde_json::from_str(entry.body.get()).unwrap();
    let truth = sandbox.resource("big", ResourceKind::Product, &created.id).unwrap().unwrap();
    assert_eq!(body, truth.body, "the stored body is the upstream's, whole");
    assert_eq!(entry.body.get().len() as u64, snapshot.body_bytes);
    assert_eq!(serde_json::from_str::<Vec<String>>(entry.event_ids.get()).unwrap().len(), 1, "the event it answers");
    // Stored: the hash keeps its small fields (for a retried store) but
    // not the snapshot.
    let fields: Vec<String> = redis::cmd("HKEYS").arg(&snapshot.key).query_async(&mut conn).await.unwrap();
    assert!(!fields.contains(&sluice_redis::SNAPSHOT_FIELD.to_owned()), "the body outlives its store: {fields:?}");
    assert!(fields.contains(&"event_ids".to_owned()), "{fields:?}");
    let again = steps.store(StoreInput { item, snapshot }).await.unwrap();
    assert!(again.duplicate && again.entry_id == stored.entry_id);
    sandbox.stop().await;
}

#[tokio::test]
async fn a_store_whose_fetched_snapshot_is_gone_fails_for_a_redelivery() {
    let redis = TestRedis::new("gone_snapshot");
    let sandbox = sandbox(&["shop"], BucketConfig::default()).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    steps.set_token("shop", &sandbox_token(&sandbox, "shop")).await.unwrap();
    let created = sandbox.create("shop", ResourceKind::Product, serde_json::Map::new()).await.unwrap();
    let item = item("shop", &created.id, "g1");
    let snapshot = steps.fetch(FetchInput::new(item.clone())).await.unwrap().snapshot.unwrap();
    // As if the key had expired (or Redis had lost it).
    let mut conn = redis.conn().await;
    let () = redis::cmd("DEL").arg(&snapshot.key).query_async(&mut conn).await.unwrap();
    let err = steps.store(StoreInput { item, snapshot }).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::StoreUnavailable);
    assert!(err.cause.contains("is gone"), "{err}");
    assert!(steps.snapshots().read(0, "-", 10).await.unwrap().is_empty());
    sandbox.stop().await;
}

/// A product with enough variants to make its body `bytes` long at least.
fn big_product(bytes: usize) -> serde_json::Map<String, serde_json::Value> {
    let variant =
        |i: usize| json!({"variant_code": format!("V{i:07}"), "options": [{"name": "size", "value": "x".repeat(180)}]});
    let count = bytes / 200 + 1;
    let mut fields = serde_json::Map::new();
    fields.insert("product_name".into(), "many variants".into());
    fields.insert("variants".into(), (0..count).map(variant).collect());
    fields
}

/// Steps whose alerts go to a receiver on 127.0.0.1, and what it received.
async fn alerting_steps(
    redis: &TestRedis,
    sandbox: &Cafe24Sandbox,
) -> (ShopService<Connection>, Arc<Mutex<Vec<String>>>) {
    let alerts = Arc::new(Mutex::new(Vec::new()));
    let url = sheet_support::alert_receiver(alerts.clone()).await;
    let steps = steps(redis, sandbox, PipelineConfig::default()).await.with_alert_url(Some(url));
    (steps, alerts)
}

#[tokio::test]
async fn a_revoked_refresh_token_parks_the_mall_and_holds_its_events_with_one_alert() {
    let redis = TestRedis::new("revoked_token");
    let sandbox = sandbox(&["gone"], BucketConfig::default()).await;
    let (steps, alerts) = alerting_steps(&redis, &sandbox).await;
    let mut expired = sandbox_token(&sandbox, "gone");
    expired.access_expires_ms = sluice_testkit::now_ms() - 1;
    steps.set_token("gone", &expired).await.unwrap();
    sandbox.expire_refresh_token("gone").unwrap();
    let before = sandbox.calls().len();
    for delivery in ["g1", "g2", "g3"] {
        let input = TokenInput { item: item("gone", "1", delivery), stale_token: None, rejected: false };
        let output = steps.ensure_token(input).await.unwrap();
        assert!(output.held && output.wait_seconds == 0, "{output:?}");
    }
    let held = ParkedMalls::new(redis.conn().await, redis.keyspace()).state(&Tag::for_mall("gone")).await;
    let held = held.unwrap().unwrap();
    assert!(held.parked && held.held == 3, "{held:?}");
    assert!(held.reason.contains("invalid_grant"), "{held:?}");
    let calls = sandbox.calls_after(0).split_off(before);
    assert_eq!(calls.len(), 1, "one refresh refused, then no call for the held events: {calls:?}");
    let alerts = alerts.lock().unwrap().clone();
    assert_eq!(alerts.len(), 1, "one alert for the episode: {alerts:?}");
    assert!(alerts[0].contains("sluice tokens set gone") && !alerts[0].contains(&expired.refresh_token), "{alerts:?}");
    sandbox.stop().await;
}

#[tokio::test]
async fn a_malls_fetches_failing_in_a_row_alert_once_and_once_more_when_they_work() {
    let redis = TestRedis::new("fetch_failures_alert");
    let sandbox = sandbox(&["flaky"], BucketConfig::default()).await;
    let (steps, alerts) = alerting_steps(&redis, &sandbox).await;
    steps.set_token("flaky", &sandbox_token(&sandbox, "flaky")).await.unwrap();
    let created = sandbox.create("flaky", ResourceKind::Product, serde_json::Map::new()).await.unwrap();
    let threshold = PipelineConfig::default().fetch_failures_alert_after as usize;
    sandbox.set_faults(FaultConfig { server_error_rate: 1.0, ..FaultConfig::default() }).unwrap();
    for attempt in 1..=threshold + 2 {
        let err = steps.fetch(FetchInput::new(item("flaky", &created.id, &format!("f{attempt}")))).await;
        assert_eq!(err.unwrap_err().kind, ErrorKind::UpstreamUnavailable);
        let expected = usize::from(attempt >= threshold);
        assert_eq!(alerts.lock().unwrap().len(), expected, "after {attempt} failures in a row");
    }
    sandbox.set_faults(FaultConfig::default()).unwrap();
    for delivery in ["ok1", "ok2"] {
        let fetched = steps.fetch(FetchInput::new(item("flaky", &created.id, delivery))).await.unwrap();
        assert_eq!(fetched.outcome, FetchNext::Fetched);
    }
    let alerts = alerts.lock().unwrap().clone();
    assert_eq!(alerts.len(), 2, "one alert when it started, one when it ended: {alerts:?}");
    assert!(alerts[0].contains(&format!("failed {threshold} times in a row")), "{alerts:?}");
    assert!(alerts[1].contains("work again"), "{alerts:?}");
    sandbox.stop().await;
}

/// The fetch runs the token step's checks itself, so the common case is
/// one Lambda: a mall without a usable token goes to the token step, a
/// parked mall's item is held, neither with a call.
#[tokio::test]
async fn a_fetch_sends_a_missing_or_expiring_token_to_the_token_step_and_holds_a_parked_malls_item() {
    let redis = TestRedis::new("fetch_checks");
    let sandbox = sandbox(&["shop", "parked"], BucketConfig::default()).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    let created = sandbox.create("shop", ResourceKind::Product, serde_json::Map::new()).await.unwrap();

    // No token stored yet.
    let fetched = steps.fetch(FetchInput::new(item("shop", &created.id, "n1"))).await.unwrap();
    assert_eq!(fetched.outcome, FetchNext::NeedsToken);
    // One that expires within the refresh margin (60 s).
    let mut expiring = sandbox_token(&sandbox, "shop");
    expiring.access_expires_ms = expiring.access_expires_ms.min(sluice_testkit::now_ms() + 30_000);
    steps.set_token("shop", &expiring).await.unwrap();
    let fetched = steps.fetch(FetchInput::new(item("shop", &created.id, "n2"))).await.unwrap();
    assert_eq!(fetched.outcome, FetchNext::NeedsToken);
    assert_eq!(sandbox.counters().calls, 0, "no call without a usable token");
    // After the token step the fetch calls with what is stored, even a
    // token inside the margin: asking again could never make it fresher.
    let checked = FetchInput { token_checked: true, ..FetchInput::new(item("shop", &created.id, "n3")) };
    assert_eq!(steps.fetch(checked).await.unwrap().outcome, FetchNext::Fetched);
    steps.set_token("shop", &sandbox_token(&sandbox, "shop")).await.unwrap();
    assert_eq!(
        steps.fetch(FetchInput::new(item("shop", &created.id, "n4"))).await.unwrap().outcome,
        FetchNext::Fetched
    );

    // A parked mall: the item joins its held events.
    steps.set_token("parked", &sandbox_token(&sandbox, "parked")).await.unwrap();
    let holds = ParkedMalls::new(redis.conn().await, redis.keyspace());
    holds.park(&Tag::for_mall("parked"), "a test parked it", None).await.unwrap();
    let calls = sandbox.counters().calls;
    let fetched = steps.fetch(FetchInput::new(item("parked", "1", "p1"))).await.unwrap();
    assert_eq!(fetched.outcome, FetchNext::Held);
    assert_eq!(sandbox.counters().calls, calls);
    assert_eq!(holds.state(&Tag::for_mall("parked")).await.unwrap().unwrap().held, 1);
    sandbox.stop().await;
}
