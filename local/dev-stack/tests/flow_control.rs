//! Flow control per mall, end to end on one machine: webhooks from the
//! sandbox Cafe24 through ingest; a mall with a backlog is deferred into
//! its dirty set and drained within its bucket by its catch-up chain, while
//! other malls go through the queue as before. Each test bounds its run.

use crate::support;

use sluice_cafe24::Secret;
use sluice_redis::{Backlogs, FlowControl, Tag};
use sluice_sandbox::cafe24::{ChangeReport, WebhookTarget};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use support::{KEY, PRODUCT, Setup, Stack, Stored, delivered_event_id, product};

const LIMIT: Duration = Duration::from_secs(60);

/// Waits until every id in `events` is answered by a stored snapshot.
async fn wait_until_answered(stack: &Stack, events: &HashSet<String>) -> Vec<Stored> {
    let deadline = Instant::now() + LIMIT;
    loop {
        let stored = stack.stored().await;
        let answered: HashSet<&String> = stored.iter().flat_map(|s| &s.event_ids).collect();
        let missing = events.iter().filter(|e| !answered.contains(e)).count();
        if missing == 0 {
            return stored;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {} events not stored after {LIMIT:?}; catch-up: {:?}",
            events.len(),
            stack.dev.catch_up
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flooding_mall_catches_up_from_its_dirty_set_within_its_bucket_and_loses_nothing() {
    let mut setup = Setup::new(&["hot", "quiet"]);
    setup.flow = FlowControl { max_queued: 5, ..FlowControl::default() };
    let stack = Stack::start("flow_control_e2e", setup).await;
    let target = WebhookTarget { url: stack.url("Ingest"), api_key: Secret::new(KEY) };
    stack.sandbox.set_webhook_target(Some(target));

    // 60 distinct products at once, then 5 edits of one of them while
    // the mall is deferred, and a quiet mall's few products.
    let creates =
        futures::future::join_all((0..60).map(|i| stack.sandbox.create("hot", PRODUCT, product(&format!("hot-{i}")))))
            .await;
    let mut changes: Vec<ChangeReport> = creates.into_iter().map(|c| c.expect("create")).collect();
    let edited = changes[30].id.clone();
    for n in 0..5 {
        changes.push(stack.sandbox.update("hot", PRODUCT, &edited, product(&format!("edit-{n}"))).await.unwrap());
    }
    for i in 0..5 {
        changes.push(stack.sandbox.create("quiet", PRODUCT, product(&format!("quiet-{i}"))).await.unwrap());
    }
    for change in &changes {
        assert_eq!(change.webhook.as_ref().and_then(|d| d.status), Some(202), "{change:?}");
    }
    let events: HashSet<String> = changes.iter().map(delivered_event_id).collect();
    assert_eq!(events.len(), changes.len());

    let stored = wait_until_answered(&stack, &events).await;
    let counts = stack.dev.ingest.snapshot();
    assert!(counts.deferred > 0, "the hot mall was never deferred: {counts:?}");
    assert!(counts.enqueued >= 5, "below its threshold a mall is enqueued as before: {counts:?}");
    assert_eq!(counts.enqueued + counts.coalesced + counts.deferred, changes.len() as u64, "{counts:?}");

    // Every resource's latest snapshot is the sandbox's state, the edited
    // one included (fetched at or after its last webhook).
    let mut latest: HashMap<(String, String), u64> = HashMap::new();
    for s in &stored {
        let version = s.version.unwrap_or(0);
        let entry = latest.entry((s.mall_id.clone(), s.id.clone())).or_insert(version);
        *entry = (*entry).max(version);
    }
    for change in &changes {
        let truth = stack.sandbox.resource(&change.mall_id, PRODUCT, &change.id).unwrap().unwrap();
        assert_eq!(latest.get(&(change.mall_id.clone(), change.id.clone())), Some(&truth.version), "{change:?}");
    }
    let sandbox = stack.sandbox.counters();
    assert_eq!(sandbox.refused_bucket, 0, "a call the bucket refused: {sandbox:?}");
    assert_eq!(sandbox.refused_quota, 0);

    // The quiet mall was never deferred; the hot mall's set is empty and
    // its chain has ended.
    let backlogs = Backlogs::new(stack.redis.conn().await, stack.redis.keyspace(), FlowControl::default()).unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        let hot = backlogs.size(&Tag::for_mall("hot")).await.unwrap();
        let idle = stack.dev.catch_up.idle.load(std::sync::atomic::Ordering::Relaxed);
        if hot.dirty == 0 && idle > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the hot mall's backlog never drained: {hot:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(backlogs.size(&Tag::for_mall("quiet")).await.unwrap().dirty, 0);

    // A deferred event's trace says where it waited and that it was stored.
    let deferred = changes[59..60].iter().chain(&changes[60..65]).map(delivered_event_id);
    let mut seen_deferred = false;
    for event in deferred {
        let trace = stack.dev.shop.traces().read(&event).await.unwrap();
        let stages: Vec<&str> = trace.iter().map(|e| e.stage.as_str()).collect();
        if stages.contains(&"deferred") {
            seen_deferred = true;
            assert!(stages.contains(&"stored"), "{event}: {stages:?}");
        }
    }
    assert!(seen_deferred, "none of the last webhooks was deferred");
    stack.stop().await;
}
