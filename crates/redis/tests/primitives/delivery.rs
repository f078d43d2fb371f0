//! Ingest's memory of each delivery, against a real redis-server: a lease
//! per attempt that ends on its own, and a settled delivery that makes the
//! rest duplicates.

use sluice_redis::{Begun, Deliveries, DeliveryTimes, Tag, Traces};
use sluice_testkit::TestRedis;
use std::time::{Duration, Instant};

type Conn = sluice_redis::Connection;

async fn deliveries(redis: &TestRedis, lease: Duration) -> Deliveries<Conn> {
    let times = DeliveryTimes { lease, window: Duration::from_secs(300) };
    Deliveries::new(redis.conn().await, redis.keyspace(), times)
}

async fn pttl(redis: &TestRedis, event: &str) -> i64 {
    let key = redis.keyspace().key(&Tag::for_event(event), "gate", "ingest");
    redis::cmd("PTTL").arg(key).query_async(&mut redis.conn().await).await.unwrap()
}

#[tokio::test]
async fn a_dead_attempt_holds_its_delivery_for_one_lease_and_its_successor_is_a_retry() {
    let redis = TestRedis::new("delivery_lease");
    let lease = Duration::from_millis(1_000);
    let d = deliveries(&redis, lease).await;
    assert!(matches!(d.begin("ev-1").await.unwrap(), Begun::First(_)));
    let started = Instant::now();
    // The first attempt dies without a word. Its sender's retries wait...
    let ends_in = match d.begin("ev-1").await.unwrap() {
        Begun::InProgress { ends_in } => ends_in,
        other => panic!("{other:?}"),
    };
    assert!(ends_in <= lease, "{ends_in:?}");
    // ...until the lease ends (polled, bounded), not for the whole window.
    let retry = loop {
        match d.begin("ev-1").await.unwrap() {
            Begun::InProgress { .. } => {
                assert!(started.elapsed() < Duration::from_secs(5), "the lease never ended");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => break other,
        }
    };
    assert!(matches!(retry, Begun::Retry(_)), "an unsettled earlier attempt makes this a retry: {retry:?}");
    assert!(started.elapsed() >= lease - Duration::from_millis(50));
    // The gate is kept past the window, whatever the attempts did.
    assert!(pttl(&redis, "ev-1").await > 300_000);
    d.settle("ev-1").await.unwrap();
    assert_eq!(d.begin("ev-1").await.unwrap(), Begun::Accepted);
    assert!((1..=300_000).contains(&pttl(&redis, "ev-1").await));
}

#[tokio::test]
async fn a_released_attempt_lets_the_retry_in_at_once() {
    let redis = TestRedis::new("delivery_release");
    let d = deliveries(&redis, Duration::from_secs(30)).await;
    let Begun::First(first) = d.begin("ev-1").await.unwrap() else { panic!("first") };
    assert!(d.release("ev-1", &first).await.unwrap());
    let Begun::Retry(second) = d.begin("ev-1").await.unwrap() else { panic!("a retry") };
    // The first attempt's release cannot end the second's lease.
    assert!(!d.release("ev-1", &first).await.unwrap());
    assert!(matches!(d.begin("ev-1").await.unwrap(), Begun::InProgress { .. }));
    assert!(d.release("ev-1", &second).await.unwrap());
    // Other events are other deliveries.
    assert!(matches!(d.begin("ev-2").await.unwrap(), Begun::First(_)));
}

/// Ingest pays one call for the gate and its trace entry: what each
/// outcome of `begin_traced` and `settle_traced` leaves in the trace.
#[tokio::test]
async fn beginning_and_settling_write_the_trace_entry_the_outcome_calls_for() {
    let redis = TestRedis::new("delivery_traced");
    let d = deliveries(&redis, Duration::from_millis(50)).await;
    let traces = Traces::new(redis.conn().await, redis.keyspace(), Duration::from_secs(60));
    let slot = traces.slot("ev-1");
    let received = serde_json::json!({"mall_id": "m1"});
    let received = received.as_object().unwrap();
    let stages = || async {
        let entries = traces.read("ev-1").await.unwrap();
        entries.into_iter().map(|e| (e.stage, e.detail)).collect::<Vec<_>>()
    };

    assert!(matches!(d.begin_traced("ev-1", &slot, received).await.unwrap(), Begun::First(_)));
    // Another attempt while the lease runs: answered 503, nothing traced.
    assert!(matches!(d.begin_traced("ev-1", &slot, received).await.unwrap(), Begun::InProgress { .. }));
    assert_eq!(stages().await, vec![("received".into(), serde_json::json!({"mall_id": "m1", "retry": false}))]);

    // The lease ends unsettled: the next attempt is a retry, and says so.
    let retried = loop {
        match d.begin_traced("ev-1", &slot, received).await.unwrap() {
            Begun::InProgress { ends_in } => tokio::time::sleep(ends_in).await,
            other => break other,
        }
    };
    assert!(matches!(retried, Begun::Retry(_)), "{retried:?}");
    d.settle_traced("ev-1", &slot, "enqueued", &serde_json::json!({"marked": true})).await.unwrap();
    assert_eq!(d.begin_traced("ev-1", &slot, received).await.unwrap(), Begun::Accepted);
    assert_eq!(
        stages().await,
        vec![
            ("received".into(), serde_json::json!({"mall_id": "m1", "retry": false})),
            ("received".into(), serde_json::json!({"mall_id": "m1", "retry": true})),
            ("enqueued".into(), serde_json::json!({"marked": true})),
            ("duplicate".into(), serde_json::json!({})),
        ]
    );
    // The trace is kept for its retention, the gate for the window.
    let ttl: i64 = redis::cmd("PTTL")
        .arg(redis.keyspace().key(&Tag::for_event("ev-1"), "trace", ""))
        .query_async(&mut redis.conn().await)
        .await
        .unwrap();
    assert!(ttl > 50_000 && ttl <= 60_000, "trace pttl {ttl}");
    assert!(pttl(&redis, "ev-1").await > 250_000);
}
