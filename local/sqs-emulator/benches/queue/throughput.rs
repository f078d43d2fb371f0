//! Send + receive + delete throughput.

use futures::future::join_all;
use redis::aio::MultiplexedConnection;
use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{DedupId, GroupKey, Queue, WorkQueue};
use sluice_private_servers::RedisProcess;
use sluice_redis::Keyspace;
use sluice_sqs_emulator::{EmbeddedQueue, GroupScan, MemoryBackend, QueueBackend, QueueConfig, RedisBackend};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const MEMORY_MESSAGES: usize = 100_000;
const REDIS_MESSAGES: usize = 20_000;
/// Concurrent consumers, each receiving up to 10 and deleting them.
const CONSUMERS: usize = 8;
const BODY: &str = r#"{"mall_id":"acme","event_no":90001,"resource":{"product_no":12345}}"#;

#[derive(Debug, Clone, Copy)]
struct Rates {
    send: f64,
    drain: f64,
    total: f64,
}

fn messages(n: usize, groups: usize, run: &str) -> Vec<OutgoingMessage> {
    (0..n)
        .map(|i| {
            OutgoingMessage::new(
                GroupKey::parse(&format!("shop-{}", i % groups)).unwrap(),
                DedupId::parse(&format!("{run}-{i}")).unwrap(),
                BODY,
            )
        })
        .collect()
}

async fn embedded<B: QueueBackend>(backend: B, n: usize, groups: usize, run: &str, group_scan: GroupScan) -> Rates {
    let name = format!("{run}.fifo");
    backend.create_queue(&name, &QueueConfig { group_scan, ..QueueConfig::default() }).await.expect("create");
    let queue = Arc::new(EmbeddedQueue::new(backend, &name));
    let all = messages(n, groups, run);
    let started = Instant::now();
    // Eight producers, 100 messages (ten calls) at a time.
    let chunks: Vec<&[OutgoingMessage]> = all.chunks(100).collect();
    let next = Arc::new(AtomicUsize::new(0));
    let producers = (0..CONSUMERS).map(|_| {
        let (queue, next, chunks) = (queue.clone(), next.clone(), &chunks);
        async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(i) else { break };
                assert!(queue.send_batch(chunk).await.iter().all(|o| o.is_accepted()));
            }
        }
    });
    join_all(producers).await;
    let sent = started.elapsed();
    let received = Arc::new(AtomicUsize::new(0));
    let request = ReceiveRequest::new(10, Duration::from_secs(30), Duration::ZERO).unwrap();
    let consumers = (0..CONSUMERS).map(|_| {
        let (queue, received) = (queue.clone(), received.clone());
        async move {
            while received.load(Ordering::Relaxed) < n {
                let got = queue.receive(request).await.expect("receive");
                if got.is_empty() {
                    // Every ready group is in flight with another consumer.
                    tokio::task::yield_now().await;
                    continue;
                }
                join_all(got.iter().map(|m| queue.delete(&m.receipt)))
                    .await
                    .into_iter()
                    .for_each(|r| r.expect("delete"));
                received.fetch_add(got.len(), Ordering::Relaxed);
            }
        }
    });
    join_all(consumers).await;
    let total = started.elapsed();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    Rates { send: rate(sent), drain: rate(total - sent), total: rate(total) }
}

/// The floor: RPUSH ten at a time, LPOP ten at a time, nothing else.
async fn bare_list(conn: MultiplexedConnection, n: usize) -> Rates {
    let key = "bench:bare-list";
    let started = Instant::now();
    let chunks: Vec<Vec<&str>> = (0..n).step_by(10).map(|i| vec![BODY; 10.min(n - i)]).collect();
    let next = Arc::new(AtomicUsize::new(0));
    join_all((0..CONSUMERS).map(|_| {
        let (mut conn, next, chunks) = (conn.clone(), next.clone(), &chunks);
        async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(i) else { break };
                let _: () = redis::cmd("RPUSH").arg(key).arg(chunk).query_async(&mut conn).await.expect("RPUSH");
            }
        }
    }))
    .await;
    let sent = started.elapsed();
    let received = Arc::new(AtomicUsize::new(0));
    join_all((0..CONSUMERS).map(|_| {
        let (mut conn, received) = (conn.clone(), received.clone());
        async move {
            while received.load(Ordering::Relaxed) < n {
                let got: Option<Vec<String>> =
                    redis::cmd("LPOP").arg(key).arg(10).query_async(&mut conn).await.expect("LPOP");
                received.fetch_add(got.map_or(0, |g| g.len()), Ordering::Relaxed);
            }
        }
    }))
    .await;
    let total = started.elapsed();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    Rates { send: rate(sent), drain: rate(total - sent), total: rate(total) }
}

pub(crate) async fn run(server: &RedisProcess) {
    let client = redis::Client::open(server.url()).expect("client");
    let conn = client.get_multiplexed_async_connection().await.expect("connect");
    let redis_backend = |run: &str| RedisBackend::new(conn.clone(), Keyspace::new(format!("bench:{run}:")).unwrap());
    let baseline = bare_list(conn.clone(), REDIS_MESSAGES).await;
    let (sqs, ring) = (GroupScan::default(), GroupScan::RoundRobin);
    let (mem, red) = (MEMORY_MESSAGES, REDIS_MESSAGES);
    let rows = [
        ("memory, 1 group", embedded(MemoryBackend::new(), mem, 1, "mem-1", sqs).await, mem),
        ("memory, 1000 groups", embedded(MemoryBackend::new(), mem, 1000, "mem-1000", sqs).await, mem),
        ("memory, 1000 groups, round-robin", embedded(MemoryBackend::new(), mem, 1000, "mem-rr", ring).await, mem),
        ("Redis, 1 group", embedded(redis_backend("r1"), red, 1, "redis-1", sqs).await, red),
        ("Redis, 1000 groups", embedded(redis_backend("r1000"), red, 1000, "redis-1000", sqs).await, red),
        ("Redis, 1000 groups, round-robin", embedded(redis_backend("rr"), red, 1000, "redis-rr", ring).await, red),
    ];
    println!(
        "## Throughput, messages/s (send, then receive + delete; {CONSUMERS} producers, {CONSUMERS} consumers; \
         the default group scan, as SQS FIFO, unless a row says round-robin)\n"
    );
    println!("| queue | messages | send | receive + delete | all three | vs bare Redis list |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "| bare Redis list (baseline: RPUSH/LPOP, no FIFO semantics) | {REDIS_MESSAGES} | {:.0} | {:.0} | {:.0} | 1.00× |",
        baseline.send, baseline.drain, baseline.total
    );
    for (label, r, n) in rows {
        println!(
            "| {label} | {n} | {:.0} | {:.0} | {:.0} | {:.2}× |",
            r.send,
            r.drain,
            r.total,
            r.total / baseline.total
        );
    }
    let worst = |prefix: &str| {
        rows.iter().filter(|(l, ..)| l.starts_with(prefix)).map(|(_, r, _)| r.total).fold(f64::MAX, f64::min)
    };
    let (memory, on_redis) = (worst("memory"), worst("Redis"));
    println!(
        "\nTargets: ≥ 20,000 msgs/s in memory: worst {memory:.0}, {}; ≥ 5,000 msgs/s on Redis: worst {on_redis:.0}, {}.\n",
        if memory >= 20_000.0 { "met" } else { "MISSED" },
        if on_redis >= 5_000.0 { "met" } else { "MISSED" }
    );
}
