//! The steps one at a time, against real Redis and the sandbox Cafe24.

use redis::aio::MultiplexedConnection;
use serde_json::json;
use sluice_domain::{ErrorKind, ResourceKind};
use sluice_pipeline::step_io::{FetchInput, ItemPlan, PipeAttributes, PipeMessage, PlanInput, StoreInput, TokenInput};
use sluice_pipeline::{PipelineConfig, ServiceCore, ShopService};
use sluice_redis::{BucketSpec, Coalescing, Gates, MarkTimes, Tag};
use sluice_sandbox::cafe24::BucketConfig;
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_testkit::TestRedis;
use sluice_testkit::pipeline::{item_plan, sandbox_token};
use sluice_testkit::sandbox::cafe24_client;
use std::time::Duration;

async fn steps(
    redis: &TestRedis,
    sandbox: &Cafe24Sandbox,
    config: PipelineConfig,
) -> ShopService<MultiplexedConnection> {
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
    let plan = steps.plan_batch(input).await.unwrap();
    assert_eq!(plan.max_concurrency, 10);
    assert_eq!(plan.groups.len(), 2);
    let a = &plan.groups[0];
    assert_eq!((a.group.as_str(), a.count, a.position), ("gs:a:90002", 3, 0));
    let ids: Vec<&str> = a.items.iter().map(|i| i.item_id.as_str()).collect();
    assert_eq!(ids, ["m1", "m3", "m4"]);
    assert_eq!(a.items[0].receive_count, 2);
    assert_eq!(a.items[2].kind, "invalid");
    assert!(a.items[2].invalid.as_deref().unwrap().contains("not a work item"));
    // Item i failing reports it and every later item of its group.
    let tails: Vec<Vec<&str>> =
        a.remaining.iter().map(|r| r.iter().map(|f| f.item_identifier.as_str()).collect()).collect();
    assert_eq!(tails, vec![vec!["m1", "m3", "m4"], vec!["m3", "m4"], vec!["m4"]]);
    assert_eq!(plan.groups[1].items[0].item_id, "m2");
    sandbox.stop().await;
}

#[tokio::test]
async fn fetch_waits_short_waits_itself_and_hands_long_ones_back() {
    let redis = TestRedis::new("fetch_wait");
    // One call per 4 s: the second fetch must come back later.
    let sandbox = sandbox(&["slow"], BucketConfig::new(1, 0.25)).await;
    let config =
        PipelineConfig { bucket: BucketSpec { capacity: 1, drain_per_sec: 0.25 }, ..PipelineConfig::default() };
    let steps = steps(&redis, &sandbox, config).await;
    steps.set_token("slow", &sandbox_token(&sandbox, "slow")).await.unwrap();
    let created = sandbox.create("slow", ResourceKind::Product, serde_json::Map::new()).await.unwrap();
    let first = steps.fetch(FetchInput { item: item("slow", &created.id, "w1") }).await.unwrap();
    assert_eq!(first.outcome, "fetched");
    let second = steps.fetch(FetchInput { item: item("slow", &created.id, "w2") }).await.unwrap();
    assert_eq!(second.outcome, "wait");
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
    let fetched = steps.fetch(FetchInput { item: owner.clone() }).await.unwrap();
    let snapshot = fetched.snapshot.unwrap();
    assert_eq!(snapshot.answers, [owner_id.as_str(), "joined-1", "joined-2"]);
    assert_eq!(snapshot.version, Some(created.version));
    // The mark is gone: the next webhook starts a new fetch.
    assert_eq!(gates.claim(&tag, &gate, "later", true, times).await.unwrap(), Coalescing::Owner);
    let first = steps.store(StoreInput { item: owner.clone(), snapshot: snapshot.clone() }).await.unwrap();
    let again = steps.store(StoreInput { item: owner, snapshot }).await.unwrap();
    assert!(!first.duplicate && again.duplicate);
    assert_eq!(first.entry_id, again.entry_id);
    let trace = steps.traces().read("joined-2").await.unwrap();
    let stages: Vec<&str> = trace.iter().map(|e| e.stage.as_str()).collect();
    assert_eq!(stages, ["fetch", "stored", "stored"]);
    assert_eq!(trace[0].detail, json!({"by": owner_id}));
    sandbox.stop().await;
}

#[tokio::test]
async fn a_mall_without_a_token_is_a_credential_problem_not_a_retry() {
    let redis = TestRedis::new("no_token");
    let sandbox = sandbox(&["new-mall"], BucketConfig::default()).await;
    let steps = steps(&redis, &sandbox, PipelineConfig::default()).await;
    let err =
        steps.ensure_token(TokenInput { item: item("new-mall", "1", "n1"), stale_token: None }).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::CredentialRejected);
    assert!(err.cause.contains("sluice tokens set new-mall"), "{err}");
    sandbox.stop().await;
}
