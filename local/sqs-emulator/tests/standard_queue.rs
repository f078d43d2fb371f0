//! What the stores' standard queues must prove beyond the conformance
//! suite: a pull reports when the earliest delayed message comes due (what
//! a long poll sleeps until), the Redis store's standard-queue scripts keep
//! to one hash tag (they run on a cluster, dead-letter moves and redrive
//! included) and leave no key behind their queues, and the two kinds never
//! mix.

use sluice_domain::queue::DelayedMessage;
use sluice_domain::{DelayQueue, Queue, WorkQueue};
use sluice_sqs_emulator::{
    EmbeddedDelayQueue, EmbeddedQueue, MemoryBackend, QueueBackend, QueueConfig, QueueError, RedisBackend,
    RedrivePolicy,
};
use sluice_testkit::{TestRedis, key_slot};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

async fn a_pull_says_when_the_earliest_delayed_message_is_due<B: QueueBackend>(backend: B) {
    backend.create_queue("flush", &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedDelayQueue::new(backend.clone(), "flush");
    let late = [DelayedMessage::new("later", 3 * SECOND), DelayedMessage::new("sooner", SECOND)];
    assert!(queue.send_delayed_batch(&late).await.iter().all(Result::is_ok));
    let pulled = backend.pull("flush", 10, 30 * SECOND).await.unwrap();
    assert!(pulled.messages.is_empty(), "nothing is due yet: {:?}", pulled.messages);
    let due_in = pulled.next_visible_in.expect("a pull says when the next delayed message is due");
    assert!(due_in <= SECOND && due_in > SECOND / 2, "the sooner one, in about 1 s: {due_in:?}");
    let attributes = queue.attributes().await.unwrap();
    assert_eq!((attributes.visible, attributes.in_flight, attributes.delayed), (0, 0, 2));
}

#[tokio::test]
async fn a_memory_pull_says_when_the_earliest_delayed_message_is_due() {
    a_pull_says_when_the_earliest_delayed_message_is_due(MemoryBackend::new()).await;
}

#[tokio::test]
async fn a_redis_pull_says_when_the_earliest_delayed_message_is_due() {
    let redis = TestRedis::new("a_redis_pull_says_when_the_earliest_delayed_message_is_due");
    a_pull_says_when_the_earliest_delayed_message_is_due(RedisBackend::new(redis.conn().await, redis.keyspace())).await;
}

#[tokio::test]
async fn standard_queues_run_on_a_cluster_and_leave_no_key_behind() {
    let redis = TestRedis::cluster("standard_queues_run_on_a_cluster_and_leave_no_key_behind");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    backend.create_queue("dead", &QueueConfig::default()).await.unwrap();
    let redrive = Some(RedrivePolicy { dead_letter_queue: "dead".into(), max_receive_count: 1 });
    let config = QueueConfig { delay: SECOND, redrive, ..QueueConfig::default() };
    backend.create_queue("flush", &config).await.unwrap();
    let queue = EmbeddedDelayQueue::new(backend.clone(), "flush");
    let sent = [DelayedMessage::new("a", Duration::ZERO), DelayedMessage::queue_default("b")];
    assert!(queue.send_delayed_batch(&sent).await.iter().all(Result::is_ok));
    // Received once (visibility 0), then moved to the DLQ by the next pull.
    assert_eq!(backend.pull("flush", 10, Duration::ZERO).await.unwrap().messages.len(), 1);
    assert!(backend.pull("flush", 10, 30 * SECOND).await.unwrap().messages.is_empty());
    assert_eq!(backend.move_messages("dead", "flush", Some("flush")).await.unwrap(), 1, "redriven back");

    let keys = redis.keys().await;
    let slot = key_slot(&keys[0]);
    for key in &keys {
        assert_eq!(key_slot(key), slot, "{key}");
        assert!(!key.ends_with(":dedup") && !key.ends_with(":dedupx"), "a standard queue deduplicates nothing: {key}");
    }
    backend.delete_queue("flush").await.unwrap();
    backend.delete_queue("dead").await.unwrap();
    assert_eq!(redis.keys().await, Vec::<String>::new(), "the queues own every key they wrote");
}

#[tokio::test]
async fn the_kinds_never_mix() {
    let backend = MemoryBackend::new();
    backend.create_queue("flush", &QueueConfig::default()).await.unwrap();
    backend.create_queue("work.fifo", &QueueConfig::default()).await.unwrap();

    let err = backend.move_messages("flush", "work.fifo", None).await.unwrap_err();
    assert!(matches!(err, QueueError::InvalidParameter(ref m) if m.contains("standard")), "{err}");

    let to_fifo_dlq = QueueConfig {
        redrive: Some(RedrivePolicy { dead_letter_queue: "work.fifo".into(), max_receive_count: 3 }),
        ..QueueConfig::default()
    };
    let err = backend.create_queue("other", &to_fifo_dlq).await.unwrap_err();
    assert!(err.to_string().contains("dead-letter queue of a standard queue must be standard"), "{err}");

    let delayed_fifo = QueueConfig { delay: SECOND, ..QueueConfig::default() };
    let err = backend.create_queue("delayed.fifo", &delayed_fifo).await.unwrap_err();
    assert!(err.to_string().contains("DelaySeconds"), "{err}");

    // Receiving through the port of the other kind is refused too: a
    // standard queue's messages have no group to report.
    let request = sluice_domain::queue::ReceiveRequest::new(1, SECOND, Duration::ZERO).unwrap();
    let err = EmbeddedQueue::new(backend.clone(), "flush").receive(request).await.unwrap_err();
    assert!(matches!(err, QueueError::WrongKind { .. }), "{err}");
    let err = EmbeddedDelayQueue::new(backend, "work.fifo").receive(request).await.unwrap_err();
    assert!(err.to_string().contains("is a FIFO queue"), "{err}");
}
