//! A mall whose Cafe24 refresh token is revoked mid-stream, through `sluice
//! dev`'s whole pipeline (the deployed state machine, the real steps, the
//! catch-up worker): its events are held in order, none goes to the
//! dead-letter queue, one alert says it is parked; another mall goes on
//! meanwhile; storing a new token (`CatchUpService::set_token`, what
//! `sluice tokens set` runs) releases them by themselves, all stored in
//! arrival order, and one alert says it is back.

use crate::support;

use sluice_aws::{SqsDelayQueue, SqsEndpoint, sqs_client};
use sluice_domain::{Queue, QueueCatchUpRequests};
use sluice_pipeline::CatchUpService;
use sluice_redis::{ParkedMalls, Tag};
use sluice_sandbox::cafe24::ChangeReport;
use sluice_testkit::pipeline::sandbox_token;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{PRODUCT, Setup, Stack, alert_receiver, product};

const LIMIT: Duration = Duration::from_secs(30);
const PARKED: &str = "mall `mall-r` is parked";
const BACK: &str = "mall `mall-r` is back";

async fn create(stack: &Stack, mall: &str, n: usize, from: usize) -> Vec<ChangeReport> {
    let mut changes = Vec::new();
    for i in from..from + n {
        changes.push(stack.sandbox.create(mall, PRODUCT, product(&format!("{mall}-{i}"))).await.unwrap());
    }
    changes
}

/// Polls `check` until it holds; panics after [`LIMIT`].
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + LIMIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn count(alerts: &Mutex<Vec<String>>, text: &str) -> usize {
    alerts.lock().unwrap().iter().filter(|a| a.contains(text)).count()
}

/// The ids of `mall`'s events sent so far, in the order sent.
fn sent_ids(stack: &Stack, mall: &str) -> Vec<String> {
    stack.sent().iter().filter(|w| w.event.mall_id == mall).map(|w| w.event_id.clone()).collect()
}

/// The events `mall`'s stored snapshots answer, in stream order.
async fn stored_ids(stack: &Stack, mall: &str) -> Vec<String> {
    stack.stored().await.into_iter().filter(|s| s.mall_id == mall).flat_map(|s| s.event_ids).collect()
}

async fn dlq_depth(stack: &Stack) -> u64 {
    let attributes = stack.dev.dlq.attributes().await.unwrap();
    attributes.visible + attributes.in_flight
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_mall_is_parked_in_order_and_resumes_by_itself_after_a_new_token() {
    let (alert_url, alerts) = alert_receiver().await;
    let mut setup = Setup::new(&["mall-r", "mall-ok"]);
    setup.alert_url = Some(alert_url);
    let mut stack = Stack::start("e2e_parked_mall", setup).await;
    let holds = ParkedMalls::new(stack.redis.conn().await, stack.redis.keyspace());
    let tag = Tag::for_mall("mall-r");

    // Both malls work; then Cafe24 revokes mall-r's tokens mid-stream.
    let before = [create(&stack, "mall-r", 3, 0).await, create(&stack, "mall-ok", 3, 0).await].concat();
    stack.enqueue(&before).await;
    stack.wait_until_stored(LIMIT).await;
    stack.sandbox.expire_access_tokens("mall-r").unwrap();
    stack.sandbox.expire_refresh_token("mall-r").unwrap();
    let during = [create(&stack, "mall-r", 10, 3).await, create(&stack, "mall-ok", 10, 3).await].concat();
    stack.enqueue(&during).await;

    // mall-ok is stored in full while mall-r's events wait, each held.
    let ok_sent: HashSet<String> = sent_ids(&stack, "mall-ok").into_iter().collect();
    until("mall-ok is stored", || async {
        stored_ids(&stack, "mall-ok").await.into_iter().collect::<HashSet<_>>() == ok_sent
    })
    .await;
    until("mall-r's 10 events are held", || async {
        holds.state(&tag).await.unwrap().is_some_and(|held| held.parked && held.held == 10)
    })
    .await;
    assert_eq!(stored_ids(&stack, "mall-r").await, sent_ids(&stack, "mall-r")[..3], "nothing of mall-r went on");
    until("the parked alert", || async { count(&alerts, PARKED) == 1 }).await;
    assert_eq!(dlq_depth(&stack).await, 0, "nothing of the parked mall goes to the dead-letter queue");
    let parked_alert = alerts.lock().unwrap().iter().find(|a| a.contains(PARKED)).cloned().unwrap();
    assert!(parked_alert.contains("sluice tokens set mall-r"), "{parked_alert}");
    assert!(parked_alert.contains("invalid_grant"), "it says why: {parked_alert}");

    // More events while parked join the held ones, behind them.
    let late = create(&stack, "mall-r", 2, 13).await;
    stack.enqueue(&late).await;
    until("the late events are held", || async { holds.state(&tag).await.unwrap().is_some_and(|h| h.held == 12) })
        .await;

    // A person stores a new token, as `sluice tokens set` does.
    let token = sandbox_token(&stack.sandbox, "mall-r");
    assert!(!parked_alert.contains(&token.refresh_token), "an alert never holds a token");
    let queue_url = stack.url("Catch-up queue");
    let client = sqs_client(&SqsEndpoint::Local(stack.url("SQS endpoint"))).await;
    let requests = Arc::new(QueueCatchUpRequests::new(SqsDelayQueue::new(client, queue_url)));
    let drain = CatchUpService::new(stack.dev.shop.clone(), requests);
    assert!(drain.set_token("mall-r", &token).await.unwrap(), "the mall was parked");

    stack.wait_until_stored(LIMIT).await;
    assert_eq!(stored_ids(&stack, "mall-r").await, sent_ids(&stack, "mall-r"), "all stored once, in arrival order");
    until("the recovery alert", || async { count(&alerts, BACK) == 1 }).await;
    assert_eq!(holds.state(&tag).await.unwrap(), None, "the hold ended");
    assert_eq!(count(&alerts, PARKED), 1, "one parked alert: {:?}", alerts.lock().unwrap());
    assert_eq!(count(&alerts, BACK), 1);
    assert_eq!(dlq_depth(&stack).await, 0);
    assert!(alerts.lock().unwrap().iter().all(|a| a.contains("mall-r")), "mall-ok raised nothing: {alerts:?}");

    // Back to normal: a new event goes straight through.
    let after = create(&stack, "mall-r", 1, 15).await;
    stack.enqueue(&after).await;
    stack.wait_until_stored(LIMIT).await;
    assert_eq!(stored_ids(&stack, "mall-r").await, sent_ids(&stack, "mall-r"));
    stack.stop().await;
}
