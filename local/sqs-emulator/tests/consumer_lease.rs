//! The consumer lease (`redis_store/lease.rs`): a consumer that takes over
//! from a dead one gets its in-flight messages back at once, not after the
//! visibility timeout; a living consumer keeps its lease and its messages.
//! A crash is a lease dropped without release (its renewals stop, the key
//! stays), held by a pid that is gone.

use sluice_domain::queue::{DelayedMessage, OutgoingMessage};
use sluice_domain::{DedupId, GroupKey};
use sluice_sqs_emulator::{
    LeaseError, LeaseOwner, LeaseSettings, QueueBackend, QueueConfig, QueueError, RedisBackend, RedrivePolicy,
};
use sluice_testkit::{TestRedis, key_slot};
use std::time::Duration;
use tokio::time::timeout;

type Conn = sluice_redis::Connection;

const VISIBILITY: Duration = Duration::from_secs(330);
/// Every wait of these tests is bounded by this.
const BOUND: Duration = Duration::from_secs(10);

fn message(group: &str, dedup: &str) -> OutgoingMessage {
    OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(dedup).unwrap(), format!("body of {dedup}"))
}

/// A pid that is gone: a child that ran and was reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().expect("spawn true");
    child.wait().expect("wait");
    child.id()
}

/// Short timings so the tests see renewals and lapses quickly.
fn quick() -> LeaseSettings {
    LeaseSettings {
        ttl: Duration::from_millis(1500),
        renew_every: Duration::from_millis(300),
        wait_at_most: Duration::from_secs(5),
        poll: Duration::from_millis(50),
    }
}

/// The dev stack's pair: a FIFO queue with a DLQ, and a standard queue.
async fn queues(backend: &RedisBackend<Conn>) {
    backend.create_queue("dlq.fifo", &QueueConfig::default()).await.unwrap();
    let redrive = Some(RedrivePolicy { dead_letter_queue: "dlq.fifo".into(), max_receive_count: 2 });
    let fifo = QueueConfig { visibility_timeout: VISIBILITY, redrive, ..QueueConfig::default() };
    backend.create_queue("events.fifo", &fifo).await.unwrap();
    backend
        .create_queue("flush", &QueueConfig { visibility_timeout: VISIBILITY, ..QueueConfig::default() })
        .await
        .unwrap();
    let sent = [message("g", "g0"), message("g", "g1"), message("h", "h0")];
    backend.send("events.fifo", &sent.iter().collect::<Vec<_>>()).await.unwrap();
    let flush = [DelayedMessage::new("due", Duration::ZERO), DelayedMessage::new("later", Duration::from_secs(600))];
    backend.send_delayed("flush", &flush.iter().collect::<Vec<_>>()).await.unwrap();
}

async fn bodies(backend: &RedisBackend<Conn>, queue: &str) -> Vec<(String, u32)> {
    let pulled = backend.pull(queue, 10, VISIBILITY).await.unwrap();
    pulled.messages.into_iter().map(|m| (m.body, m.receive_count)).collect()
}

#[tokio::test]
async fn a_consumer_taking_over_from_a_dead_one_gets_its_messages_back_at_once() {
    // Cluster mode: the release script must keep to one slot.
    let redis = TestRedis::cluster("a_consumer_taking_over_from_a_dead_one_gets_its_messages_back_at_once");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    queues(&backend).await;

    let dead = LeaseOwner::on_this_host(dead_pid());
    let a = timeout(BOUND, backend.take_consumer_lease(dead, LeaseSettings::default())).await.unwrap().unwrap();
    let held = bodies(&backend, "events.fifo").await;
    assert_eq!(held.len(), 3, "{held:?}");
    assert_eq!(bodies(&backend, "flush").await, [("due".to_owned(), 1)]);
    assert!(bodies(&backend, "events.fifo").await.is_empty(), "in flight for {VISIBILITY:?}");
    drop(a); // the crash: no release, renewals stop, the key stays

    let b = timeout(BOUND, backend.take_consumer_lease(LeaseOwner::this_process(), LeaseSettings::default()))
        .await
        .expect("a dead holder is replaced at once, not after the lease's TTL")
        .unwrap();
    assert!(b.taken_from().is_some());
    assert_eq!(backend.release_in_flight("events.fifo", &b).await.unwrap(), 3);
    assert_eq!(backend.release_in_flight("flush", &b).await.unwrap(), 1);
    // Back in their order, receive counts unchanged by the release (the
    // second receive makes them 2, as a timeout would have).
    let again = bodies(&backend, "events.fifo").await;
    let expected = [("body of g0", 2), ("body of g1", 2), ("body of h0", 2)];
    assert_eq!(again, expected.map(|(b, n)| (b.to_owned(), n)));
    assert_eq!(bodies(&backend, "flush").await, [("due".to_owned(), 2)]);
    let flush = backend.attributes("flush").await.unwrap();
    assert_eq!(flush.delayed, 1, "a delayed message keeps its delay: {flush:?}");

    // maxReceiveCount still holds: released again, the third receive
    // moves them to the dead-letter queue.
    assert_eq!(backend.release_in_flight("events.fifo", &b).await.unwrap(), 3);
    assert!(bodies(&backend, "events.fifo").await.is_empty());
    assert_eq!(backend.attributes("dlq.fifo").await.unwrap().visible, 3);

    // The lease key: the store's hash tag, a TTL, gone after a release.
    let mut conn = redis.conn().await;
    let key = backend.lease_key();
    assert_eq!(key_slot(&key), key_slot(&redis.keys().await[0]), "{key}");
    let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
    assert!(ttl > 0 && ttl <= 15_000, "{key}: {ttl}");
    b.release().await;
    let exists: i64 = redis::cmd("EXISTS").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(exists, 0);
}

#[tokio::test]
async fn a_living_consumer_keeps_its_lease_and_its_messages() {
    let redis = TestRedis::new("a_living_consumer_keeps_its_lease_and_its_messages");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    queues(&backend).await;
    // Another host: its pid cannot be checked, only its renewals.
    let a = backend.take_consumer_lease(LeaseOwner::new("elsewhere", 1), quick()).await.unwrap();
    assert_eq!(bodies(&backend, "events.fifo").await.len(), 3);

    for owner in [LeaseOwner::this_process(), LeaseOwner::on_this_host(dead_pid())] {
        let refused = timeout(BOUND, backend.take_consumer_lease(owner, quick())).await.unwrap();
        assert!(matches!(refused, Err(LeaseError::HeldByLiveConsumer { .. })), "{refused:?}");
    }
    assert!(a.guard().is_held());
    let attributes = backend.attributes("events.fifo").await.unwrap();
    assert_eq!((attributes.in_flight, attributes.visible), (3, 0), "nothing was taken from the living consumer");
}

#[tokio::test]
async fn a_lease_that_is_not_renewed_lapses_and_is_taken_over() {
    let redis = TestRedis::new("a_lease_that_is_not_renewed_lapses_and_is_taken_over");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    queues(&backend).await;
    let a = backend.take_consumer_lease(LeaseOwner::new("elsewhere", 1), quick()).await.unwrap();
    assert_eq!(bodies(&backend, "events.fifo").await.len(), 3);
    drop(a); // a host that died: nothing tells us but the TTL

    let b = timeout(BOUND, backend.take_consumer_lease(LeaseOwner::this_process(), quick())).await.unwrap().unwrap();
    assert_eq!(b.taken_from().map(|h| h.starts_with("elsewhere|1|")), Some(true), "{:?}", b.taken_from());
    assert_eq!(backend.release_in_flight("events.fifo", &b).await.unwrap(), 3);
    assert_eq!(bodies(&backend, "events.fifo").await.len(), 3);
}

#[tokio::test]
async fn a_consumer_that_lost_its_lease_receives_and_releases_nothing() {
    let redis = TestRedis::new("a_consumer_that_lost_its_lease_receives_and_releases_nothing");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    queues(&backend).await;
    let a = backend.take_consumer_lease(LeaseOwner::this_process(), quick()).await.unwrap();
    let fenced = backend.clone().fenced(a.guard());
    assert_eq!(fenced.pull("events.fifo", 1, VISIBILITY).await.unwrap().messages.len(), 1);

    // Someone else holds it now (as after A was paused past its TTL).
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("SET").arg(backend.lease_key()).arg("other|1|x").query_async(&mut conn).await.unwrap();
    timeout(BOUND, a.guard().lost()).await.expect("the next renewal notices");
    assert!(matches!(fenced.pull("events.fifo", 10, VISIBILITY).await, Err(QueueError::ConsumerLeaseLost)));
    assert!(matches!(backend.release_in_flight("events.fifo", &a).await, Err(QueueError::ConsumerLeaseLost)));
    assert_eq!(backend.attributes("events.fifo").await.unwrap().in_flight, 1, "g0 stays in flight");
}

#[tokio::test]
async fn a_lease_that_lapsed_while_redis_was_unreachable_is_taken_again() {
    let redis = TestRedis::new("a_lease_that_lapsed_while_redis_was_unreachable_is_taken_again");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    queues(&backend).await;
    let a = backend.take_consumer_lease(LeaseOwner::this_process(), quick()).await.unwrap();
    let fenced = backend.clone().fenced(a.guard());
    let mut conn = redis.conn().await;
    let taken: Option<String> = redis::cmd("GET").arg(backend.lease_key()).query_async(&mut conn).await.unwrap();

    // The key gone with nobody holding it: what a holder cut off for longer
    // than the TTL finds once Redis is back.
    let _: () = redis::cmd("DEL").arg(backend.lease_key()).query_async(&mut conn).await.unwrap();
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let holder: Option<String> = redis::cmd("GET").arg(backend.lease_key()).query_async(&mut conn).await.unwrap();
        // '<host>|<pid>|<token>': ours, with the token this lease was taken with.
        if holder.as_deref() == taken.as_deref() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not taken again within {BOUND:?}: {holder:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a.guard().is_held());
    assert!(futures::FutureExt::now_or_never(a.guard().lost()).is_none(), "a lapse is not a loss");
    assert_eq!(fenced.pull("events.fifo", 1, VISIBILITY).await.unwrap().messages.len(), 1);
}
