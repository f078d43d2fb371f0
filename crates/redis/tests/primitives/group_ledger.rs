//! The group ledger against a real redis-server: which groups have events
//! waiting, how many and since when; what a duplicate send does to it.

use sluice_redis::group_ledger::SHARDS;
use sluice_redis::{GroupLedger, Limit, SlidingWindowLimiter, Tag};
use sluice_testkit::{TestRedis, key_slot};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

type Conn = sluice_redis::Connection;

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
async fn groups_spread_over_the_shards_each_call_in_one_slot() {
    let redis = TestRedis::new("ledger_spread");
    let ledger = ledger(&redis).await;
    let groups: Vec<String> = (0..64).map(|i| format!("gs:mall-{i}:products")).collect();
    for group in &groups {
        ledger.enter(group, "{}", &format!("{group}/e1")).await.unwrap();
        ledger.enter(group, "{}", &format!("{group}/e2")).await.unwrap();
        ledger.done(group, &format!("{group}/e1")).await.unwrap();
    }
    // Slots written, by shard tag: a group's pending set shares its slot
    // with its shard's indexes (the scripts touch both at once).
    let prefix = redis.keyspace().prefix().to_owned();
    let mut slots_by_tag: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for key in redis.keys().await {
        let tag = key.strip_prefix(&prefix).and_then(|k| k.split_once('}')).map(|(tag, _)| tag.to_owned());
        let tag = tag.unwrap_or_else(|| panic!("{key} has no hash tag"));
        assert!(tag.starts_with("{groups:"), "{key} is not under a ledger shard tag");
        slots_by_tag.entry(tag).or_default().insert(key_slot(&key));
    }
    assert!(slots_by_tag.values().all(|slots| slots.len() == 1), "a shard's keys span slots: {slots_by_tag:?}");
    let slots: BTreeSet<u16> = slots_by_tag.values().flatten().copied().collect();
    // 64 groups over 16 shards: all but a few shards are hit, and the
    // shards' tags land on distinct slots (no hot slot left).
    assert!(slots_by_tag.len() >= 12, "64 groups hit only {} shards: {:?}", slots_by_tag.len(), slots_by_tag.keys());
    assert_eq!(slots.len(), slots_by_tag.len(), "two shard tags share a slot: {slots_by_tag:?}");
    // The shard of a group is stable and in range.
    for group in &groups {
        assert_eq!(GroupLedger::<Conn>::shard_of(group), GroupLedger::<Conn>::shard_of(group));
        assert!(GroupLedger::<Conn>::shard_of(group) < SHARDS);
    }
}

#[tokio::test]
async fn readers_see_the_groups_of_every_shard_in_order() {
    let redis = TestRedis::new("ledger_readers");
    let ledger = ledger(&redis).await;
    // Names sort in entering order, so a tie on Redis's µs clock orders
    // them the same way.
    let groups: Vec<String> = (0..40).map(|i| format!("g{i:02}")).collect();
    for group in &groups {
        ledger.enter(group, &format!(r#"{{"n":"{group}"}}"#), &format!("{group}/e")).await.unwrap();
    }
    let shards: BTreeSet<u32> = groups.iter().map(|g| GroupLedger::<Conn>::shard_of(g)).collect();
    assert!(shards.len() > 1, "the test needs groups in several shards");

    let (lagging, total) = ledger.lagging(usize::MAX).await.unwrap();
    assert_eq!(total, 40);
    let names: Vec<&str> = lagging.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, groups.iter().map(String::as_str).collect::<Vec<_>>(), "oldest first, across shards");
    assert!(
        lagging.iter().all(|g| g.pending == 1 && g.about.as_deref() == Some(&*format!(r#"{{"n":"{}"}}"#, g.group)))
    );

    let (top, total) = ledger.lagging(5).await.unwrap();
    assert_eq!(total, 40, "the count covers every shard, not just the top");
    assert_eq!(top.iter().map(|g| g.group.as_str()).collect::<Vec<_>>(), ["g00", "g01", "g02", "g03", "g04"]);

    let seen: Vec<String> = ledger.seen(3).await.unwrap().into_iter().map(|g| g.group).collect();
    assert_eq!(seen, ["g39", "g38", "g37"], "newest first, across shards");
    let all = ledger.seen(usize::MAX).await.unwrap();
    assert_eq!(all.len(), 40);
    assert!(all.iter().all(|g| g.about.is_some()));
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
