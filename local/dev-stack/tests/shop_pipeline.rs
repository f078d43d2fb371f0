//! The shop path behind the queue, end to end on one machine: the deployed
//! state machine, the real steps, real Redis, the sandbox Cafe24 over real
//! HTTP. Each test bounds its own run time.

use crate::support;

use sluice_domain::Queue;
use sluice_sandbox::FaultConfig;
use sluice_sandbox::TimeoutMode;
use sluice_testkit::now_ms;
use sluice_testkit::pipeline::sandbox_token;
use std::collections::HashMap;
use std::time::Duration;
use support::{PRODUCT, Setup, Stack, Stored, big_product, product};

const LIMIT: Duration = Duration::from_secs(60);

/// The latest stored snapshot of each (mall, kind, id).
fn latest(stored: &[Stored]) -> HashMap<(String, String, String), &Stored> {
    let mut latest = HashMap::new();
    for s in stored {
        let key = (s.mall_id.clone(), s.kind.clone(), s.id.clone());
        let newer = latest.get(&key).is_none_or(|old: &&Stored| s.version > old.version);
        if newer {
            latest.insert(key, s);
        }
    }
    latest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_event_is_stored_within_the_malls_budgets_without_a_429() {
    let mut stack = Stack::start("e2e_budget", Setup::new(&["mall-a", "mall-b", "mall-c"])).await;
    let mut changes = Vec::new();
    for mall in ["mall-a", "mall-b", "mall-c"] {
        for i in 0..8 {
            let created = stack.sandbox.create(mall, PRODUCT, product(&format!("p{i}"))).await.unwrap();
            changes.push(created.clone());
            changes.push(stack.sandbox.update(mall, PRODUCT, &created.id, product(&format!("p{i}'"))).await.unwrap());
        }
    }
    stack.enqueue(&changes).await;
    let stored = stack.wait_until_stored(LIMIT).await;
    let counters = stack.sandbox.counters();
    assert_eq!(counters.refused_bucket, 0, "the pipeline made calls the bucket refused");
    assert_eq!(counters.refused_quota, 0);
    // 48 events over 3 malls of 10 at 20/s: most had to wait for budget.
    assert!(counters.ok >= 48, "{counters:?}");
    // Each batch ran as an execution the pipe started through aws-sdk-sfn.
    let executions = stack.executions(LIMIT).await;
    assert!(!executions.is_empty());
    for execution in &executions {
        assert_eq!(execution.status().as_str(), "SUCCEEDED", "{execution:?}");
        assert!(execution.execution_arn().contains(":execution:sluice-dev-pipeline:"), "{execution:?}");
    }
    // The stored state of every resource is the sandbox's.
    for ((mall, _, id), snapshot) in latest(&stored) {
        let truth = stack.sandbox.resource(&mall, PRODUCT, &id).unwrap().unwrap();
        assert_eq!(snapshot.version, Some(truth.version), "{mall}/{id}");
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faults_lose_nothing_and_keep_each_groups_order() {
    let mut setup = Setup::new(&["mall-f"]);
    setup.faults = FaultConfig {
        server_error_rate: 0.2,
        timeout_rate: 0.1,
        timeout_mode: TimeoutMode::Drop,
        seed: 7,
        ..FaultConfig::default()
    };
    setup.max_receive_count = 50;
    let mut stack = Stack::start("e2e_faults", setup).await;
    let mut changes = Vec::new();
    for i in 0..20 {
        changes.push(stack.sandbox.create("mall-f", PRODUCT, product(&format!("f{i}"))).await.unwrap());
    }
    stack.enqueue(&changes).await;
    let stored = stack.wait_until_stored(LIMIT).await;
    let counters = stack.sandbox.counters();
    assert!(counters.server_errors + counters.dropped_connections > 0, "no fault was injected: {counters:?}");
    // One group (mall-f, product created): its snapshots in arrival order.
    let order: Vec<usize> =
        stored.iter().filter_map(|s| stack.sent().iter().position(|w| s.event_ids.contains(&w.event_id))).collect();
    let mut first_seen = Vec::new();
    for i in order {
        if !first_seen.contains(&i) {
            first_seen.push(i);
        }
    }
    assert_eq!(first_seen, (0..20).collect::<Vec<_>>(), "a group's events were stored out of order");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_token_is_refreshed_once_however_many_items_need_it() {
    let mut setup = Setup::new(&["mall-t"]);
    setup.workers = 6;
    let mut stack = Stack::start("e2e_token_race", setup).await;
    // Items in six different groups (topics), so they run at once.
    let mut changes = Vec::new();
    for i in 0..6 {
        let created = stack.sandbox.create("mall-t", PRODUCT, product(&format!("t{i}"))).await.unwrap();
        changes.push(created.clone());
    }
    let works: Vec<_> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut work = support::work_for(c);
            work.event.topic = sluice_domain::Topic(90001 + i as u32 * 1000);
            sluice_domain::ShopWork::new(work.event, work.received_at_ms)
        })
        .collect();
    // The upstream no longer takes the token, though we think it is good.
    stack.sandbox.expire_access_tokens("mall-t").unwrap();
    stack.enqueue_works(works).await;
    stack.wait_until_stored(LIMIT).await;
    assert_eq!(stack.sandbox.refresh_count("mall-t").unwrap(), 1, "two refreshes raced");
    // And once more with a token we know is expired.
    let mut expired = sandbox_token(&stack.sandbox, "mall-t");
    expired.access_expires_ms = now_ms() - 1;
    stack.dev.shop.set_token("mall-t", &expired).await.unwrap();
    let before = stack.sandbox.refresh_count("mall-t").unwrap();
    let more: Vec<_> = changes.iter().map(support::work_for).collect();
    stack.enqueue_works(more).await;
    stack.wait_until_stored(LIMIT).await;
    assert_eq!(stack.sandbox.refresh_count("mall-t").unwrap(), before + 1);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn throttled_calls_are_retried_never_dropped() {
    // The pipeline believes in a bigger bucket than the upstream has: 429s
    // happen, and every event still gets stored.
    let mut setup = Setup::new(&["mall-429"]);
    setup.upstream_bucket = sluice_sandbox::cafe24::BucketConfig::new(3, 20.0);
    setup.pipeline_bucket = sluice_redis::BucketSpec::new(20, 40.0).with_margin(std::time::Duration::ZERO);
    let mut stack = Stack::start("e2e_429", setup).await;
    let mut changes = Vec::new();
    for i in 0..25 {
        changes.push(stack.sandbox.create("mall-429", PRODUCT, product(&format!("x{i}"))).await.unwrap());
    }
    stack.enqueue(&changes).await;
    stack.wait_until_stored(LIMIT).await;
    assert!(stack.sandbox.counters().refused_bucket > 0, "the test setup should provoke 429s");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_that_is_not_a_work_item_is_dead_lettered_with_its_reason() {
    let mut setup = Setup::new(&["mall-x"]);
    setup.max_receive_count = 2;
    let stack = Stack::start("e2e_poison", setup).await;
    stack.enqueue_raw("gs:mall-x:90002", "poison-1", "{\"not\": \"a work item\"}").await;
    let dead = stack.wait_for_dlq(1, LIMIT).await;
    assert_eq!(dead[0].body, "{\"not\": \"a work item\"}");
    let trace = stack.dev.shop.traces().read(&format!("message:{}", dead[0].message_id)).await.unwrap();
    let failures: Vec<_> = trace.iter().filter(|e| e.stage == "failed").collect();
    assert_eq!(failures.len(), 2, "{trace:?}");
    assert_eq!(failures[0].detail["error"], "Sluice.InvalidRequest");
    assert_eq!(failures[1].detail["next"], "dead-letter queue");
    assert!(failures[1].detail["cause"].as_str().unwrap().contains("not a work item"), "{trace:?}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_resource_is_stored_as_a_tombstone() {
    let mut stack = Stack::start("e2e_tombstone", Setup::new(&["mall-d"])).await;
    let created = stack.sandbox.create("mall-d", PRODUCT, product("gone soon")).await.unwrap();
    let deleted = stack.sandbox.delete("mall-d", PRODUCT, &created.id).await.unwrap();
    stack.enqueue(&[deleted]).await;
    let stored = stack.wait_until_stored(LIMIT).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].status, "deleted");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_300_kb_product_goes_through_the_state_machine_and_is_stored_whole() {
    let mut stack = Stack::start("e2e_big", Setup::new(&["mall-big"])).await;
    let created = stack.sandbox.create("mall-big", PRODUCT, big_product(300 * 1024)).await.unwrap();
    let truth = stack.sandbox.resource("mall-big", PRODUCT, &created.id).unwrap().unwrap();
    let served = truth.body.to_string();
    assert!(served.len() > sluice_asl::MAX_PAYLOAD_BYTES, "the product must exceed a state's limit");
    // A small one beside it, in the same group, after it: the group goes on.
    let small = stack.sandbox.create("mall-big", PRODUCT, product("small")).await.unwrap();
    stack.enqueue(&[created, small]).await;
    let stored = stack.wait_until_stored(LIMIT).await;
    assert_eq!(stored.len(), 2);
    let big = stored.iter().find(|s| s.id == truth.id).expect("the big product is stored");
    let body: serde_json::Value = serde_json::from_str(&big.body).unwrap();
    assert_eq!(body, truth.body, "stored whole, as the sandbox serves it");
    // First time through: no execution failed (a body in the payload
    // would have failed it with States.DataLimitExceeded), no item retried.
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    assert_eq!(stack.dev.pipe.executions_failed.load(relaxed), 0, "{:?}", stack.dev.pipe);
    assert_eq!(stack.dev.pipe.items_failed.load(relaxed), 0, "{:?}", stack.dev.pipe);
    assert_eq!(stack.dev.dlq.attributes().await.unwrap().visible, 0, "nothing dead-lettered");
    stack.stop().await;
}
