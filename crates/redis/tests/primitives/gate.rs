//! Gates and pending marks against a real redis-server.

use redis::AsyncCommands;
use sluice_redis::{Coalescing, Entry, Gates, MarkTimes, Tag, Taken};
use sluice_testkit::TestRedis;
use std::time::Duration;

type Conn = sluice_redis::Connection;

async fn gates(redis: &TestRedis) -> Gates<Conn> {
    Gates::new(redis.conn().await, redis.keyspace())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_caller_passes_per_window() {
    let redis = TestRedis::new("gate_once");
    let gates = gates(&redis).await;
    let tag = Tag::new("user-1");
    let entries =
        futures::future::join_all((0..32).map(|_| gates.pass(&tag, "symbol:005930", Duration::from_millis(200)))).await;
    let passed = entries.iter().filter(|e| e.as_ref().unwrap().passed()).count();
    assert_eq!(passed, 1, "{passed} callers passed one gate");
    for entry in entries {
        if let Entry::Closed { holder, reopens_in } = entry.unwrap() {
            assert_eq!(holder, "1");
            assert!(reopens_in <= Duration::from_secs(30));
        }
    }
    // Other keys are other gates.
    assert!(gates.pass(&tag, "symbol:000660", Duration::from_secs(1)).await.unwrap().passed());
    // When the window is over, the gate opens again.
    assert!(gates.pass(&tag, "symbol:035720", Duration::from_millis(20)).await.unwrap().passed());
    assert!(!gates.pass(&tag, "symbol:035720", Duration::from_millis(20)).await.unwrap().passed());
    let key = redis.keyspace().key(&tag, "gate", "symbol:035720");
    let mut conn = redis.conn().await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while conn.exists::<_, bool>(&key).await.unwrap() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("gate window ended");
    assert!(gates.pass(&tag, "symbol:035720", Duration::from_secs(1)).await.unwrap().passed());
}

#[tokio::test]
async fn pending_marks_coalesce_until_the_owner_clears_them() {
    let redis = TestRedis::new("pending");
    let gates = gates(&redis).await;
    let mall = Tag::new("acme");
    let timeout = Duration::from_secs(60);
    assert_eq!(gates.mark_pending(&mall, "product:42", "event-1", timeout).await.unwrap(), Entry::Passed);
    // A second webhook for the same product coalesces into event-1's fetch.
    match gates.mark_pending(&mall, "product:42", "event-2", timeout).await.unwrap() {
        Entry::Closed { holder, reopens_in } => {
            assert_eq!(holder, "event-1");
            assert!(reopens_in > Duration::from_secs(59));
        }
        Entry::Passed => panic!("two fetches pending for one product"),
    }
    // Only the owner can clear; a stranger's clear leaves the mark.
    assert!(!gates.clear(&mall, "product:42", "event-2").await.unwrap());
    // The fetch clears before calling upstream: a webhook arriving during
    // the call gets through and is fetched again afterwards.
    assert!(gates.clear(&mall, "product:42", "event-1").await.unwrap());
    assert_eq!(gates.mark_pending(&mall, "product:42", "event-3", timeout).await.unwrap(), Entry::Passed);
    // The late clear of an older owner does not remove the newer mark.
    assert!(!gates.clear(&mall, "product:42", "event-1").await.unwrap());
    assert!(matches!(
        gates.mark_pending(&mall, "product:42", "event-4", timeout).await.unwrap(),
        Entry::Closed { holder, .. } if holder == "event-3"
    ));
}

#[tokio::test]
async fn a_zero_window_is_refused() {
    let redis = TestRedis::new("gate_config");
    let gates = gates(&redis).await;
    let err = gates.pass(&Tag::new("t"), "k", Duration::ZERO).await.unwrap_err();
    assert!(err.to_string().contains("shorter than 1 ms"), "{err}");
    assert!(redis.keys().await.is_empty());
}

const TIMES: MarkTimes = MarkTimes { lease: Duration::from_secs(30), pending: Duration::from_secs(60) };

#[tokio::test]
async fn joiners_are_handed_to_the_owner_when_its_work_starts() {
    let redis = TestRedis::new("join_take");
    let gates = gates(&redis).await;
    let mall = Tag::new("mall:acme");
    assert_eq!(gates.claim(&mall, "product:7", "ev-1", true, TIMES).await.unwrap(), Coalescing::Owner);
    assert!(gates.confirm(&mall, "product:7", "ev-1", TIMES.pending).await.unwrap());
    for joiner in ["ev-2", "ev-3"] {
        let entry = gates.claim(&mall, "product:7", joiner, true, TIMES).await.unwrap();
        assert!(matches!(entry, Coalescing::Joined { ref owner, .. } if owner == "ev-1"), "{entry:?}");
    }
    // A stranger cannot take the owner's joiners.
    assert_eq!(
        gates.take(&mall, "product:7", "ev-2").await.unwrap(),
        Taken::NotOwner { lapsed: false, joined: vec![] }
    );
    let joiners: Vec<String> = vec!["ev-2".into(), "ev-3".into()];
    assert_eq!(gates.take(&mall, "product:7", "ev-1").await.unwrap(), Taken::Owned { joined: joiners.clone() });
    // The owner's work died after its take: its redelivery takes the same
    // joiners again, though the mark is gone.
    assert_eq!(
        gates.take(&mall, "product:7", "ev-1").await.unwrap(),
        Taken::NotOwner { lapsed: true, joined: joiners }
    );
    // After the take, the next event starts new pending work, with nobody joined yet.
    assert_eq!(gates.claim(&mall, "product:7", "ev-4", true, TIMES).await.unwrap(), Coalescing::Owner);
    assert_eq!(gates.take(&mall, "product:7", "ev-4").await.unwrap(), Taken::Owned { joined: vec![] });
    assert_eq!(gates.take(&mall, "product:7", "ev-4").await.unwrap(), Taken::NotOwner { lapsed: true, joined: vec![] });
    // What is left is the one owner's taken ids, which expire.
    let keys = redis.keys().await;
    assert_eq!(keys.len(), 1, "take left keys behind: {keys:?}");
    assert!(keys[0].ends_with(":taken:ev-1"), "{keys:?}");
    let ttl: i64 = redis::cmd("PTTL").arg(&keys[0]).query_async(&mut redis.conn().await).await.unwrap();
    assert!(ttl > 0 && ttl <= sluice_redis::coalescing::TAKEN_TTL.as_millis() as i64, "{ttl}");
}

#[tokio::test]
async fn nobody_joins_a_mark_before_its_owner_is_enqueued() {
    let redis = TestRedis::new("lease_unjoinable");
    let gates = gates(&redis).await;
    let mall = Tag::new("mall:acme");
    let short = MarkTimes { lease: Duration::from_secs(5), pending: Duration::from_secs(60) };
    assert_eq!(gates.claim(&mall, "product:7", "ev-1", true, short).await.unwrap(), Coalescing::Owner);
    // While ev-1's enqueue is unconfirmed, others go to the queue on their own.
    assert_eq!(gates.claim(&mall, "product:7", "ev-2", true, short).await.unwrap(), Coalescing::Unmarked);
    let joined = redis.keyspace().key(&mall, "joined", "product:7");
    assert!(!redis.keys().await.contains(&joined), "nobody joined a lease");
    // The lease's owner may take it over again (its own retry).
    assert_eq!(gates.claim(&mall, "product:7", "ev-1", false, short).await.unwrap(), Coalescing::Owner);
    // ev-1 dies: its lease ends on its own and the next event takes the mark.
    let mark = redis.keyspace().key(&mall, "gate", "product:7");
    let mut conn = redis.conn().await;
    let pttl: i64 = redis::cmd("PTTL").arg(&mark).query_async(&mut conn).await.unwrap();
    assert!((1..=5_000).contains(&pttl), "a lease lasts one lease: {pttl} ms");
    redis::cmd("PEXPIRE").arg(&mark).arg(1).exec_async(&mut conn).await.unwrap();
    wait_gone(&mut conn, &mark).await;
    assert_eq!(gates.claim(&mall, "product:7", "ev-3", true, short).await.unwrap(), Coalescing::Owner);
    // ev-1 comes back to life: its confirm does not touch ev-3's lease.
    assert!(!gates.confirm(&mall, "product:7", "ev-1", short.pending).await.unwrap());
    assert!(gates.confirm(&mall, "product:7", "ev-3", short.pending).await.unwrap());
    let pttl: i64 = redis::cmd("PTTL").arg(&mark).query_async(&mut conn).await.unwrap();
    assert!(pttl > 5_000, "a confirmed mark waits the pending timeout: {pttl} ms");
    // Its own confirmed mark tells a redelivery of ev-3 it is in the queue.
    assert_eq!(gates.claim(&mall, "product:7", "ev-3", false, short).await.unwrap(), Coalescing::OwnMarkConfirmed);
}

#[tokio::test]
async fn a_retry_never_starts_a_mark_and_a_fetch_takes_an_unconfirmed_lease() {
    let redis = TestRedis::new("retry_unmarked");
    let gates = gates(&redis).await;
    let mall = Tag::new("mall:acme");
    // A retry's message may be one the queue drops as a duplicate: no mark.
    assert_eq!(gates.claim(&mall, "product:7", "ev-1", false, TIMES).await.unwrap(), Coalescing::Unmarked);
    assert!(redis.keys().await.is_empty());
    // The owner's message reached the queue but the confirm never came: the
    // fetch still clears the lease, so it never outlives its message.
    assert_eq!(gates.claim(&mall, "product:7", "ev-2", true, TIMES).await.unwrap(), Coalescing::Owner);
    assert_eq!(gates.take(&mall, "product:7", "ev-2").await.unwrap(), Taken::Owned { joined: vec![] });
    assert!(!gates.confirm(&mall, "product:7", "ev-2", TIMES.pending).await.unwrap(), "a late confirm marks nothing");
    // A released lease is gone at once.
    assert_eq!(gates.claim(&mall, "product:7", "ev-3", true, TIMES).await.unwrap(), Coalescing::Owner);
    assert!(gates.release(&mall, "product:7", "ev-3").await.unwrap());
    assert!(redis.keys().await.is_empty(), "{:?}", redis.keys().await);
}

async fn wait_gone(conn: &mut sluice_redis::Connection, key: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let exists: i64 = redis::cmd("EXISTS").arg(key).query_async(conn).await.unwrap();
        if exists == 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{key} never expired");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
