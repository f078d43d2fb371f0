//! A receive whose answer is lost (Redis slower than the connection's
//! answer timeout, so the client gives up while Redis still runs the
//! script) is asked again with the same attempt id: the caller gets the
//! messages that call took, instead of an error while they stay hidden
//! for the visibility timeout (`redis_store/receive_retry.rs`).

use sluice_domain::queue::OutgoingMessage;
use sluice_domain::{DedupId, GroupKey};
use sluice_sqs_emulator::{QueueBackend, QueueConfig, RedisBackend};
use sluice_testkit::{LatencyProxy, TestRedis};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const VISIBILITY: Duration = Duration::from_secs(330);
/// Every wait of this test is bounded by this.
const BOUND: Duration = Duration::from_secs(10);

fn message(dedup: &str) -> OutgoingMessage {
    OutgoingMessage::new(GroupKey::parse("g").unwrap(), DedupId::parse(dedup).unwrap(), format!("body of {dedup}"))
}

#[tokio::test]
async fn a_receive_whose_answer_was_lost_answers_what_it_took_when_asked_again() {
    let redis = TestRedis::plain("lost_receive");
    let direct = RedisBackend::new(redis.conn().await, redis.keyspace());
    let config = QueueConfig { visibility_timeout: VISIBILITY, ..QueueConfig::default() };
    direct.create_queue("events.fifo", &config).await.unwrap();

    let upstream: SocketAddr = redis.url().trim_start_matches("redis://").trim_end_matches('/').parse().unwrap();
    let proxy = LatencyProxy::start(upstream).await.unwrap();
    let settings = sluice_redis::ConnectSettings {
        url: proxy.redis_url(),
        response_timeout: Duration::from_millis(300),
        ..redis.settings()
    };
    let slow = RedisBackend::new(sluice_redis::connect(&settings).await.unwrap(), redis.keyspace());
    // The queue's settings read while Redis answers quickly: what follows
    // is the receive script alone.
    assert!(slow.pull("events.fifo", 10, VISIBILITY).await.unwrap().messages.is_empty());
    direct.send("events.fifo", &[&message("m0"), &message("m1")]).await.unwrap();

    // Each round trip now takes twice the answer timeout: the receive is
    // given up on while Redis still runs it.
    proxy.set_delay(Duration::from_millis(600));
    let receive = tokio::spawn(async move { slow.pull("events.fifo", 10, VISIBILITY).await });
    let deadline = Instant::now() + BOUND;
    while direct.attributes("events.fifo").await.unwrap().in_flight < 2 {
        assert!(Instant::now() < deadline, "the receive never reached Redis");
        tokio::task::yield_now().await;
    }
    // Redis answers quickly again: the receive, asked again, answers.
    proxy.set_delay(Duration::ZERO);
    let pulled = tokio::time::timeout(BOUND, receive).await.expect("bounded").unwrap().expect("the receive answers");

    let got: Vec<(String, u32)> = pulled.messages.iter().map(|m| (m.body.clone(), m.receive_count)).collect();
    assert_eq!(got, [("body of m0".to_owned(), 1), ("body of m1".to_owned(), 1)], "taken once, by this receive");
    for m in &pulled.messages {
        direct.delete_message("events.fifo", &m.receipt).await.expect("its receipt is the live one");
    }
    let left = direct.attributes("events.fifo").await.unwrap();
    assert_eq!((left.visible, left.in_flight), (0, 0), "nothing left hidden");

    // The attempt is kept while its messages could be in flight, no longer.
    let mut conn = redis.conn().await;
    let rx: Vec<String> =
        redis.keys().await.into_iter().filter(|k| k.ends_with(":rx") || k.ends_with(":rxx")).collect();
    assert_eq!(rx.len(), 2, "the receive that took the messages recorded its attempt: {rx:?}");
    for key in rx {
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut conn).await.unwrap();
        assert!(ttl > 0 && ttl <= 300_000, "{key}: {ttl} ms");
    }
}
