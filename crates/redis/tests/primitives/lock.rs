//! The fenced lock against a real redis-server.

use redis::AsyncCommands;
use sluice_redis::{Acquire, Error, Lease, Locks, StaleReason, Tag};
use sluice_testkit::TestRedis;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Conn = sluice_redis::Connection;

async fn locks(redis: &TestRedis) -> Locks<Conn> {
    Locks::new(redis.conn().await, redis.keyspace())
}

async fn take(locks: &Locks<Conn>, name: &str, lease: Duration) -> Lease {
    match locks.acquire(&Tag::new("mall"), name, lease).await.unwrap() {
        Acquire::Acquired(lease) => lease,
        Acquire::Busy { .. } => panic!("lock {name} is busy"),
    }
}

/// Waits, by asking Redis, until `key` has expired.
async fn until_gone(redis: &TestRedis, key: &str) {
    let mut conn = redis.conn().await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while conn.exists::<_, bool>(key).await.unwrap() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("key expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_holder_at_a_time_and_fences_strictly_increase() {
    const ROUNDS: usize = 300;
    let redis = TestRedis::new("exclusive");
    let inside = Arc::new(AtomicUsize::new(0));
    let fences = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (redis, inside, fences) = (redis.clone(), inside.clone(), fences.clone());
        tasks.push(tokio::spawn(async move {
            let locks = locks(&redis).await;
            while fences.lock().unwrap().len() < ROUNDS {
                let Acquire::Acquired(lease) =
                    locks.acquire(&Tag::new("mall"), "sync", Duration::from_secs(10)).await.unwrap()
                else {
                    tokio::task::yield_now().await;
                    continue;
                };
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                fences.lock().unwrap().push(lease.fence());
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                locks.release(&lease).await.unwrap();
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(30), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("contention finished");
    let fences = fences.lock().unwrap().clone();
    assert!(fences.len() >= ROUNDS);
    // Pushed inside the critical section, so in acquisition order.
    for pair in fences.windows(2) {
        assert!(pair[1] > pair[0], "fence went from {} to {}", pair[0], pair[1]);
    }
}

#[tokio::test]
async fn a_held_lock_is_busy_until_its_lease_ends() {
    let redis = TestRedis::new("busy");
    let locks = locks(&redis).await;
    let _held = take(&locks, "a", Duration::from_secs(30)).await;
    let Acquire::Busy { retry_after } = locks.acquire(&Tag::new("mall"), "a", Duration::from_secs(1)).await.unwrap()
    else {
        panic!("a held lock was taken again");
    };
    assert!(retry_after > Duration::from_secs(29) && retry_after <= Duration::from_secs(30));
}

#[tokio::test]
async fn a_stale_lease_can_neither_release_nor_extend() {
    let redis = TestRedis::new("stale");
    let locks = locks(&redis).await;
    let old = take(&locks, "b", Duration::from_millis(30)).await;
    until_gone(&redis, old.key()).await;
    let expired = locks.release(&old).await.unwrap_err();
    assert!(matches!(expired, Error::StaleLease { reason: StaleReason::Gone, .. }), "{expired}");
    assert!(matches!(
        locks.extend(&old, Duration::from_secs(1)).await,
        Err(Error::StaleLease { reason: StaleReason::Gone, .. })
    ));

    let new = take(&locks, "b", Duration::from_secs(30)).await;
    assert!(new.fence() > old.fence());
    let stolen = locks.extend(&old, Duration::from_secs(60)).await.unwrap_err();
    assert!(matches!(stolen, Error::StaleLease { reason: StaleReason::HeldByAnother, .. }), "{stolen}");
    assert!(stolen.to_string().contains("another holder"), "{stolen}");
    assert!(matches!(locks.release(&old).await, Err(Error::StaleLease { reason: StaleReason::HeldByAnother, .. })));
    // The new holder is untouched by the stale calls, and can extend and release.
    let mut conn = redis.conn().await;
    let ttl: i64 = conn.pttl(new.key()).await.unwrap();
    assert!(ttl > 0 && ttl <= 30_000, "the stale extend changed the new lease: {ttl} ms");
    locks.extend(&new, Duration::from_secs(60)).await.unwrap();
    let ttl: i64 = conn.pttl(new.key()).await.unwrap();
    assert!(ttl > 30_000, "extend did not extend: {ttl} ms");
    locks.release(&new).await.unwrap();
    assert!(!conn.exists::<_, bool>(new.key()).await.unwrap());
}

#[tokio::test]
async fn fences_keep_increasing_after_the_fence_key_is_gone() {
    let redis = TestRedis::new("fence_expiry");
    let locks = locks(&redis).await;
    let first = take(&locks, "c", Duration::from_secs(5)).await;
    locks.release(&first).await.unwrap();
    // The fence key expires after a week idle; remove it to be that week later.
    let mut conn = redis.conn().await;
    let removed: usize = conn.del(redis.keyspace().key(&Tag::new("mall"), "fence", "c")).await.unwrap();
    assert_eq!(removed, 1);
    let second = take(&locks, "c", Duration::from_secs(5)).await;
    assert!(second.fence() > first.fence(), "{} then {}", first.fence(), second.fence());
    locks.release(&second).await.unwrap();
    // Should Redis's clock step back (a failover to a node whose clock is
    // behind), fences still increase: they never go below the last one + 1.
    let ahead = second.fence() + 3_600_000_000;
    let fence_key = redis.keyspace().key(&Tag::new("mall"), "fence", "c");
    let _: () = conn.set(&fence_key, ahead).await.unwrap();
    let third = take(&locks, "c", Duration::from_secs(5)).await;
    assert_eq!(third.fence(), ahead + 1);
}
