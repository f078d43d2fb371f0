//! What only the Redis store has to prove: its keys (one hash tag, a TTL or
//! an owner that deletes them), that every script runs on a cluster of
//! three masters and over TLS as an ACL user, and that long polling waits
//! without spinning on Redis.

use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{DedupId, GroupKey, Queue, WorkQueue};
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::Keyspace;
use sluice_sqs_emulator::{EmbeddedQueue, QueueBackend, QueueConfig, RedisBackend, RedrivePolicy};
use sluice_testkit::{TestRedis, key_slot};
use std::time::{Duration, Instant};

type Conn = sluice_redis::Connection;

fn message(group: &str, dedup: &str) -> OutgoingMessage {
    OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(dedup).unwrap(), format!("body of {dedup}"))
}

fn request(max: u8, visibility_s: u64, wait_s: u64) -> ReceiveRequest {
    ReceiveRequest::new(max, Duration::from_secs(visibility_s), Duration::from_secs(wait_s)).unwrap()
}

/// A queue with a DLQ after one receive; sends, receives, a DLQ move, a
/// delete, a visibility change, the attributes, a purge: every script but
/// the redrive's and the consumer lease's (run by the cluster tests that
/// need them).
async fn exercise(backend: &RedisBackend<Conn>) {
    backend.create_queue("dlq.fifo", &QueueConfig::default()).await.unwrap();
    let config = QueueConfig {
        redrive: Some(RedrivePolicy { dead_letter_queue: "dlq.fifo".into(), max_receive_count: 1 }),
        ..QueueConfig::default()
    };
    backend.create_queue("q.fifo", &config).await.unwrap();
    let queue = EmbeddedQueue::new(backend.clone(), "q.fifo");
    let sent = queue.send_batch(&[message("a", "a0"), message("a", "a1"), message("b", "b0")]).await;
    assert!(sent.iter().all(|o| o.is_accepted()), "{sent:?}");
    let got = queue.receive(request(10, 0, 0)).await.unwrap();
    assert_eq!(got.len(), 3);
    // Visibility 0: the next receive moves all three to the DLQ.
    assert!(queue.receive(request(10, 30, 0)).await.unwrap().is_empty());
    let dlq = EmbeddedQueue::new(backend.clone(), "dlq.fifo");
    let dead = dlq.receive(request(10, 30, 0)).await.unwrap();
    assert_eq!(dead.len(), 3);
    dlq.delete(&dead[0].receipt).await.unwrap();
    backend.change_visibility("dlq.fifo", &dead[1].receipt, Duration::from_secs(60)).await.unwrap();
    let attributes = backend.attributes("dlq.fifo").await.unwrap();
    assert_eq!((attributes.in_flight, attributes.visible), (2, 0), "{attributes:?}");
    assert_eq!(backend.list_queues().await.unwrap(), ["dlq.fifo", "q.fifo"]);
    let _ = queue.send_batch(&[message("c", "c0")]).await;
    backend.purge_queue("q.fifo").await.unwrap();
    assert_eq!(backend.attributes("q.fifo").await.unwrap().visible, 0);
}

#[tokio::test]
async fn every_key_shares_one_hash_tag_and_has_a_ttl_or_an_owner() {
    let redis = TestRedis::new("every_key_shares_one_hash_tag_and_has_a_ttl_or_an_owner");
    let mut conn = redis.conn().await;
    let backend = RedisBackend::new(conn.clone(), redis.keyspace());
    exercise(&backend).await;
    let keys = redis.keys().await;
    assert!(!keys.is_empty());
    let slot = key_slot(&keys[0]);
    for key in &keys {
        assert!(key.contains("{sqs}:"), "{key}");
        assert_eq!(key_slot(key), slot, "{key}");
        let ttl: i64 = redis::cmd("PTTL").arg(key).query_async(&mut conn).await.unwrap();
        if [":dedup", ":dedupx", ":rx", ":rxx"].iter().any(|end| key.ends_with(end)) {
            assert!(ttl > 0 && ttl <= 300_000, "{key}: dedup and receive attempt keys expire within 5 minutes ({ttl})");
        } else {
            assert_eq!(ttl, -1, "{key}: queue keys are owned, not expiring");
        }
    }
    // The owners: deleting the queues leaves only the expiring dedup keys.
    backend.delete_queue("q.fifo").await.unwrap();
    backend.delete_queue("dlq.fifo").await.unwrap();
    let left = redis.keys().await;
    assert!(left.iter().all(|k| k.ends_with(":dedup") || k.ends_with(":dedupx")), "{left:?}");
}

#[tokio::test]
async fn the_store_runs_on_a_cluster_dead_letter_moves_included() {
    let redis = TestRedis::cluster("the_store_runs_on_a_cluster_dead_letter_moves_included");
    let conn = redis.conn().await;
    assert!(conn.is_cluster());
    let backend = RedisBackend::new(conn, redis.keyspace());
    exercise(&backend).await;
    backend.move_messages("dlq.fifo", "q.fifo", Some("q.fifo")).await.expect("redrive on a cluster");
    // Every queue key shares the `{sqs}` tag: one slot, so one master.
    let by_node = redis.keys_by_node().await;
    assert_eq!(by_node.iter().filter(|keys| !keys.is_empty()).count(), 1, "{by_node:?}");
}

#[tokio::test]
async fn the_store_runs_over_tls_as_an_acl_user() {
    let redis = TestRedis::tls("the_store_runs_over_tls_as_an_acl_user");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    exercise(&backend).await;
    backend.move_messages("dlq.fifo", "q.fifo", Some("q.fifo")).await.expect("redrive over TLS");
}

#[tokio::test]
async fn a_new_connection_finds_every_acknowledged_message() {
    let redis = TestRedis::new("a_new_connection_finds_every_acknowledged_message");
    let first = RedisBackend::new(redis.conn().await, redis.keyspace());
    first.create_queue("q.fifo", &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedQueue::new(first, "q.fifo");
    assert!(queue.send_batch(&[message("g", "1"), message("g", "2")]).await.iter().all(|o| o.is_accepted()));
    drop(queue);
    // Another process's view: a fresh connection and an empty cache.
    let second = RedisBackend::new(redis.conn().await, redis.keyspace());
    let got = EmbeddedQueue::new(second, "q.fifo").receive(request(10, 30, 0)).await.unwrap();
    assert_eq!(got.iter().map(|m| m.dedup.as_str()).collect::<Vec<_>>(), ["1", "2"]);
}

/// EVALSHA calls the server has answered so far.
async fn script_calls(conn: &mut (impl redis::aio::ConnectionLike + Send)) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn an_idle_long_poll_does_not_spin_and_a_send_wakes_it_at_once() {
    // A server of its own, so no other test's calls are counted.
    let server = RedisProcess::start(ServerOptions::default()).unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let backend = RedisBackend::new(conn.clone(), Keyspace::default());
    backend.create_queue("q.fifo", &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedQueue::new(backend.clone(), "q.fifo");

    let before = script_calls(&mut conn).await;
    let started = Instant::now();
    let got = tokio::time::timeout(Duration::from_secs(10), queue.receive(request(1, 30, 3))).await.unwrap().unwrap();
    assert!(got.is_empty());
    assert!(started.elapsed() >= Duration::from_secs(3), "the long poll waited its 3 s");
    let pulls = script_calls(&mut conn).await - before;
    // Backoff 25 ms doubling to 1 s: about 8 pulls in 3 s, not thousands.
    assert!(pulls <= 12, "an idle 3 s long poll made {pulls} script calls");

    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.receive(request(1, 30, 20)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent_at = Instant::now();
    assert!(queue.send_batch(&[message("g", "wake")]).await[0].is_accepted());
    let got = tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(got.len(), 1);
    assert!(sent_at.elapsed() < Duration::from_secs(5), "woken by the send, not by the 20 s wait's end");
}

#[tokio::test]
async fn a_long_poll_wakes_when_an_in_flight_message_becomes_visible() {
    let redis = TestRedis::new("a_long_poll_wakes_when_an_in_flight_message_becomes_visible");
    let backend = RedisBackend::new(redis.conn().await, redis.keyspace());
    backend.create_queue("q.fifo", &QueueConfig::default()).await.unwrap();
    let queue = EmbeddedQueue::new(backend, "q.fifo");
    assert!(queue.send_batch(&[message("g", "x")]).await[0].is_accepted());
    assert_eq!(queue.receive(request(1, 1, 0)).await.unwrap().len(), 1);
    let started = Instant::now();
    let again =
        tokio::time::timeout(Duration::from_secs(15), queue.receive(request(1, 30, 20))).await.unwrap().unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].receive_count, 2);
    assert!(started.elapsed() < Duration::from_secs(5), "woken when the 1 s visibility timeout ended");
}
