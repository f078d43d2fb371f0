//! The group ledger against a real redis-server: which groups have events
//! waiting, how many and since when; what a duplicate send does to it.

use sluice_redis::{GroupLedger, Limit, SlidingWindowLimiter, Tag};
use sluice_testkit::TestRedis;
use std::sync::Arc;
use std::time::Duration;

type Conn = redis::aio::MultiplexedConnection;

async fn ledger(redis: &TestRedis) -> GroupLedger<Conn> {
    GroupLedger::new(redis.conn().await, redis.keyspace())
}

#[tokio::test]
async fn groups_are_listed_by_their_oldest_waiting_event() {
    let redis = TestRedis::new("ledger_order");
    let ledger = ledger(&redis).await;
    // Group a's first event is sent first; b's after it.
    ledger.enter("a", r#"{"n":"a"}"#, "a1").await.unwrap();
    ledger.enter("b", r#"{"n":"b"}"#, "b1").await.unwrap();
    ledger.enter("a", r#"{"n":"a"}"#, "a2").await.unwrap();
    let (lagging, total) = ledger.lagging(10).await.unwrap();
    assert_eq!(total, 2);
    let names: Vec<(&str, u64)> = lagging.iter().map(|g| (g.group.as_str(), g.pending)).collect();
    assert_eq!(names, [("a", 2), ("b", 1)]);
    assert_eq!(lagging[0].about.as_deref(), Some(r#"{"n":"a"}"#));
    assert!(lagging[0].oldest_age >= lagging[1].oldest_age);

    // a1 done: a's oldest is now a2, sent after b1, so b leads.
    assert!(ledger.done("a", "a1").await.unwrap());
    let (lagging, _) = ledger.lagging(10).await.unwrap();
    let names: Vec<(&str, u64)> = lagging.iter().map(|g| (g.group.as_str(), g.pending)).collect();
    assert_eq!(names, [("b", 1), ("a", 1)]);

    // The top n only.
    let (top, total) = ledger.lagging(1).await.unwrap();
    assert_eq!((top.len(), total), (1, 2));

    // Both done: nothing waits, but both were seen, the latest first.
    ledger.done("a", "a2").await.unwrap();
    ledger.done("b", "b1").await.unwrap();
    assert_eq!(ledger.lagging(10).await.unwrap(), (vec![], 0));
    let seen: Vec<String> = ledger.seen(10).await.unwrap().into_iter().map(|g| g.group).collect();
    assert_eq!(seen, ["b", "a"]);
}

#[tokio::test]
async fn a_resend_the_queue_drops_as_a_duplicate_is_not_counted() {
    let redis = TestRedis::new("ledger_dedup");
    let ledger = ledger(&redis).await;
    assert!(ledger.enter("g", "{}", "e1").await.unwrap());
    // Sent twice while pending: one event, one message.
    assert!(ledger.enter("g", "{}", "e1").await.unwrap());
    assert_eq!(ledger.lagging(10).await.unwrap().0[0].pending, 1);
    assert!(ledger.done("g", "e1").await.unwrap());
    // Sent again within SQS's five minutes: the queue drops it, so must we.
    assert!(!ledger.enter("g", "{}", "e1").await.unwrap());
    assert_eq!(ledger.lagging(10).await.unwrap().1, 0);
    // Done twice is harmless.
    assert!(!ledger.done("g", "e1").await.unwrap());
}

#[tokio::test]
async fn events_older_than_the_retention_are_dropped() {
    let redis = TestRedis::new("ledger_retention");
    let ledger = ledger(&redis).await.with_retention(Duration::from_millis(50));
    ledger.enter("g", "{}", "lost").await.unwrap();
    // Wait on Redis's clock, the one the scripts stamp with.
    let mut conn = redis.conn().await;
    let start = redis_ms(&mut conn).await;
    while redis_ms(&mut conn).await < start + 60 {
        tokio::task::yield_now().await;
    }
    ledger.enter("g", "{}", "next").await.unwrap();
    let (lagging, _) = ledger.lagging(10).await.unwrap();
    assert_eq!(lagging[0].pending, 1, "the lost event is past the retention: no queue still holds it");
}

async fn redis_ms(conn: &mut Conn) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    s * 1000 + us / 1000
}

#[tokio::test]
async fn window_usage_reads_what_the_limiter_admitted() {
    let redis = TestRedis::new("window_usage");
    let limiter = SlidingWindowLimiter::new(redis.conn().await, redis.keyspace(), Arc::default());
    let set = limiter
        .limits(
            &Tag::new("project"),
            &[Limit::new("cred:a", 5, Duration::from_secs(60)), Limit::new("project", 20, Duration::from_secs(60))],
        )
        .unwrap();
    let empty = limiter.usage(&set).await.unwrap();
    assert_eq!(empty.iter().map(|u| (u.used, u.max)).collect::<Vec<_>>(), [(0, 5), (0, 20)]);
    assert_eq!(empty[0].next_free, Duration::ZERO);
    for _ in 0..3 {
        assert!(limiter.acquire(&set, 1).await.unwrap().is_admitted());
    }
    let used = limiter.usage(&set).await.unwrap();
    assert_eq!(used.iter().map(|u| (u.used, u.max)).collect::<Vec<_>>(), [(3, 5), (3, 20)]);
    assert!(used[0].next_free > Duration::from_secs(59) && used[0].next_free <= Duration::from_secs(60));
}
