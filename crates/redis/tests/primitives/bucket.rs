//! The GCRA leaky bucket against a real redis-server.

use sluice_redis::{Admission, Bucket, BucketLevel, BucketSpec, Buckets, DenyCache, Error, Tag};
use sluice_testkit::TestRedis;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Conn = sluice_redis::Connection;

async fn buckets(redis: &TestRedis) -> Buckets<Conn> {
    Buckets::new(redis.conn().await, redis.keyspace(), Arc::new(DenyCache::new()))
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[tokio::test]
async fn a_full_bucket_says_exactly_when_the_next_unit_fits() {
    let redis = TestRedis::new("bucket_exact");
    let buckets = buckets(&redis).await;
    // 5 units, leaking 2 per second: one unit every 500 ms.
    let bucket =
        buckets.bucket(&Tag::new("mall-a"), "admin", BucketSpec::new(5, 2.0).with_margin(Duration::ZERO)).unwrap();
    let first = buckets.acquire(&bucket, 1).await.unwrap().server_time_us().unwrap();
    for _ in 0..4 {
        assert!(buckets.acquire(&bucket, 1).await.unwrap().is_admitted(), "a fresh bucket holds 5");
    }
    let Admission::Denied { wait, server_time_us: Some(at) } = buckets.acquire(&bucket, 1).await.unwrap() else {
        panic!("a 6th unit fit in a bucket of 5");
    };
    // Five units were poured in from `first` on; the first drains 500 ms later.
    assert_eq!(at + us(wait), first + 500_000);
    // The deny cache repeats the denial without asking Redis.
    let cached = buckets.acquire(&bucket, 1).await.unwrap();
    assert!(matches!(cached, Admission::Denied { server_time_us: None, .. }), "{cached:?}");
    tokio::time::sleep(wait).await;
    assert!(buckets.acquire(&bucket, 1).await.unwrap().is_admitted(), "the unit did not fit after the wait given");
}

/// The bucket's theoretical arrival time: what observe may raise, never lower.
fn tat(level: BucketLevel) -> u64 {
    level.server_time_us + us(level.backlog)
}

#[tokio::test]
async fn observe_only_ever_tightens() {
    let redis = TestRedis::new("observe");
    let buckets = buckets(&redis).await;
    // 40 units leaking 2 per second: one unit is 500 ms of backlog.
    let bucket =
        buckets.bucket(&Tag::new("mall-b"), "admin", BucketSpec::default().with_margin(Duration::ZERO)).unwrap();
    for _ in 0..10 {
        buckets.acquire(&bucket, 1).await.unwrap();
    }
    let ours = buckets.level(&bucket).await.unwrap();
    assert!(ours.units > 5.0 && ours.units <= 10.0, "level {}", ours.units);
    // The upstream says it holds less than we think: we keep our count.
    let after_low = buckets.observe(&bucket, 3, 40).await.unwrap();
    assert_eq!(tat(after_low), tat(ours), "a low report loosened the bucket");
    // The upstream says it holds more (someone else spends this mall's
    // budget): we adopt its count, as of the moment we heard it.
    let after_high = buckets.observe(&bucket, 30, 40).await.unwrap();
    assert_eq!(tat(after_high), after_high.server_time_us + 30 * 500_000);
    // A late, out-of-order response with an older, lower count is ignored.
    let after_late = buckets.observe(&bucket, 12, 40).await.unwrap();
    assert_eq!(tat(after_late), tat(after_high), "a late report loosened the bucket");
    // An upstream with a smaller bucket leaves us only its headroom.
    let small =
        buckets.bucket(&Tag::new("mall-b"), "small", BucketSpec::default().with_margin(Duration::ZERO)).unwrap();
    let level = buckets.observe(&small, 5, 10).await.unwrap();
    assert_eq!(tat(level), level.server_time_us + 35 * 500_000, "5/10 upstream leaves 5 of our 40");
    assert!(buckets.acquire(&small, 5).await.unwrap().is_admitted());
    assert!(!buckets.acquire(&small, 1).await.unwrap().is_admitted());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn penalize_holds_every_caller_back_for_its_whole_duration() {
    const PENALTY: Duration = Duration::from_millis(300);
    let redis = TestRedis::new("penalize");
    let spec = BucketSpec::new(4, 20.0).with_margin(Duration::ZERO);
    let punisher = buckets(&redis).await;
    let bucket = punisher.bucket(&Tag::new("mall-c"), "admin", spec).unwrap();
    let imposed = punisher.penalize(&bucket, PENALTY).await.unwrap().server_time_us;
    let ends = imposed + us(PENALTY);
    // Callers in other processes (their own deny caches) keep trying.
    let admitted = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (redis, bucket, admitted) = (redis.clone(), bucket.clone(), admitted.clone());
        tasks.push(tokio::spawn(async move { hammer(&redis, &bucket, ends, &admitted).await }));
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("callers finished");
    let admitted = admitted.lock().unwrap().clone();
    assert!(!admitted.is_empty(), "nobody got through after the penalty");
    let earliest = admitted.iter().min().unwrap();
    assert!(*earliest >= ends, "admitted {}µs before the penalty ended", ends - earliest);
}

/// Tries until one unit is admitted, checking that every denial during the
/// penalty points exactly at its end.
async fn hammer(redis: &TestRedis, bucket: &Bucket, ends: u64, admitted: &Mutex<Vec<u64>>) {
    let buckets = buckets(redis).await;
    loop {
        match buckets.acquire(bucket, 1).await.unwrap() {
            Admission::Admitted { server_time_us } => {
                admitted.lock().unwrap().push(server_time_us);
                return;
            }
            Admission::Denied { wait, server_time_us } => {
                if let Some(at) = server_time_us
                    && at < ends
                {
                    assert_eq!(at + us(wait), ends, "a denial during the penalty pointed elsewhere");
                }
                tokio::time::sleep(wait).await;
            }
        }
    }
}

#[tokio::test]
async fn impossible_buckets_are_refused_with_their_reason() {
    let redis = TestRedis::new("bucket_config");
    let buckets = buckets(&redis).await;
    let tag = Tag::new("m");
    let err = |spec| buckets.bucket(&tag, "b", spec).unwrap_err().to_string();
    assert!(err(BucketSpec::new(0, 2.0).with_margin(Duration::ZERO)).contains("capacity"));
    assert!(err(BucketSpec::new(40, 0.0).with_margin(Duration::ZERO)).contains("leak rate"));
    assert!(err(BucketSpec::new(40, f64::NAN).with_margin(Duration::ZERO)).contains("leak rate"));
    let bucket = buckets.bucket(&tag, "b", BucketSpec::default()).unwrap();
    let too_many: Error = buckets.acquire(&bucket, 41).await.unwrap_err();
    assert!(too_many.to_string().contains("41 units can never fit"), "{too_many}");
    assert!(redis.keys().await.is_empty());
}

#[tokio::test]
async fn a_margin_keeps_room_for_calls_that_arrive_late_and_one_call_always_fits() {
    let redis = TestRedis::new("bucket_margin");
    let buckets = buckets(&redis).await;
    // 5 units leaking 2 /s (500 ms each) with 250 ms kept back: 4.5 units
    // of room, so a burst takes 4 and the 5th waits until half a unit has
    // drained (250 ms after the first).
    let spec = BucketSpec::new(5, 2.0).with_margin(Duration::from_millis(250));
    let bucket = buckets.bucket(&Tag::new("mall-m"), "admin", spec).unwrap();
    let first = buckets.acquire(&bucket, 1).await.unwrap().server_time_us().unwrap();
    for _ in 0..3 {
        assert!(buckets.acquire(&bucket, 1).await.unwrap().is_admitted(), "4 units fit under the margin");
    }
    let Admission::Denied { wait, server_time_us: Some(at) } = buckets.acquire(&bucket, 1).await.unwrap() else {
        panic!("a 5th unit fit though the margin keeps half a unit back");
    };
    assert_eq!(at + us(wait), first + 250_000);
    // A margin of more than all but one unit is capped: one call still fits.
    let tiny = BucketSpec::new(2, 2.0).with_margin(Duration::from_secs(60));
    let tiny = buckets.bucket(&Tag::new("mall-t"), "admin", tiny).unwrap();
    assert!(buckets.acquire(&tiny, 1).await.unwrap().is_admitted(), "a capped margin still lets one call in");
    assert!(buckets.acquire(&tiny, 2).await.unwrap_err().to_string().contains("can never fit"));
}
