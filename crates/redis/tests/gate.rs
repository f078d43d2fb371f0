//! Gates and pending marks against a real redis-server.

use redis::AsyncCommands;
use sluice_redis::{Entry, Gates, Tag, Taken};
use sluice_testkit::TestRedis;
use std::time::Duration;

type Conn = redis::aio::MultiplexedConnection;

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
            tokio::task::yield_now().await;
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

#[tokio::test]
async fn joiners_are_handed_to_the_owner_when_its_work_starts() {
    let redis = TestRedis::new("join_take");
    let gates = gates(&redis).await;
    let mall = Tag::new("mall:acme");
    let timeout = Duration::from_secs(60);
    assert_eq!(gates.join_pending(&mall, "product:7", "ev-1", timeout).await.unwrap(), Entry::Passed);
    for joiner in ["ev-2", "ev-3"] {
        let entry = gates.join_pending(&mall, "product:7", joiner, timeout).await.unwrap();
        assert!(matches!(entry, Entry::Closed { ref holder, .. } if holder == "ev-1"), "{entry:?}");
    }
    // A stranger cannot take the owner's joiners.
    assert_eq!(gates.take(&mall, "product:7", "ev-2").await.unwrap(), Taken::NotOwner { lapsed: false });
    assert_eq!(
        gates.take(&mall, "product:7", "ev-1").await.unwrap(),
        Taken::Owned { joined: vec!["ev-2".into(), "ev-3".into()] }
    );
    // After the take, the next event starts new pending work, with nobody joined yet.
    assert_eq!(gates.join_pending(&mall, "product:7", "ev-4", timeout).await.unwrap(), Entry::Passed);
    assert_eq!(gates.take(&mall, "product:7", "ev-4").await.unwrap(), Taken::Owned { joined: vec![] });
    assert_eq!(gates.take(&mall, "product:7", "ev-4").await.unwrap(), Taken::NotOwner { lapsed: true });
    assert!(redis.keys().await.is_empty(), "take left keys behind: {:?}", redis.keys().await);
}
