//! Fairness: how long small groups wait behind one deep group, under each
//! group scan of the embedded queue and under a plain model of SQS's scan
//! (written independently of the queue, as a check on its SQS FIFO mode).

use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{DedupId, GroupKey, Queue, WorkQueue};
use sluice_private_servers::RedisProcess;
use sluice_redis::Keyspace;
use sluice_sqs_emulator::{EmbeddedQueue, GroupScan, MemoryBackend, QueueBackend, QueueConfig, RedisBackend};
use std::collections::VecDeque;
use std::time::Duration;

const DEEP: usize = 20_000;
const SMALL_GROUPS: usize = 100;
const SMALL: usize = 10;
const TARGET: usize = 2_000;
/// SQS looks for available groups among only this many messages.
const SQS_SCAN: usize = 120_000;

fn workload() -> Vec<OutgoingMessage> {
    let message = |group: String, i: usize| {
        OutgoingMessage::new(
            GroupKey::parse(&group).unwrap(),
            DedupId::parse(&format!("{group}-{i}")).unwrap(),
            group.clone(),
        )
    };
    let mut all: Vec<_> = (0..DEEP).map(|i| message("deep".into(), i)).collect();
    for g in 0..SMALL_GROUPS {
        all.extend((0..SMALL).map(|i| message(format!("small-{g}"), i)));
    }
    all
}

/// Position (1-based) of the last small-group message when one consumer
/// receives 10 at a time and deletes them before its next receive.
async fn ours<B: QueueBackend>(backend: B, name: &str, group_scan: GroupScan) -> usize {
    backend.create_queue(name, &QueueConfig { group_scan, ..QueueConfig::default() }).await.expect("create");
    let queue = EmbeddedQueue::new(backend, name);
    for chunk in workload().chunks(1000) {
        assert!(queue.send_batch(chunk).await.iter().all(|o| o.is_accepted()));
    }
    let request = ReceiveRequest::new(10, Duration::from_secs(30), Duration::ZERO).unwrap();
    let (mut position, mut last_small, mut small_seen) = (0, 0, 0);
    while small_seen < SMALL_GROUPS * SMALL {
        let got = queue.receive(request).await.expect("receive");
        assert!(!got.is_empty(), "the queue ran dry with small messages left");
        for m in &got {
            position += 1;
            if m.body.starts_with("small") {
                small_seen += 1;
                last_small = position;
            }
            queue.delete(&m.receipt).await.expect("delete");
        }
    }
    last_small
}

/// The same consumer against an arrival-order scan: look through the
/// oldest messages (up to SQS's 120,000) for the first available group,
/// take as many of its messages as fit, then go on scanning for others.
fn arrival_order() -> usize {
    let mut backlog: VecDeque<String> = workload().into_iter().map(|m| m.group.to_string()).collect();
    let (mut position, mut last_small, mut small_left) = (0, 0, SMALL_GROUPS * SMALL);
    while small_left > 0 {
        // The consumer deleted its last batch, so no group is blocked: the
        // scan finds the oldest message's group first, every time.
        let mut taken = Vec::new();
        let mut i = 0;
        while taken.len() < 10 && i < backlog.len().min(SQS_SCAN) {
            let group = backlog[i].clone();
            // A batch holds one group's messages first, then another's.
            while taken.len() < 10 && i < backlog.len() && backlog[i] == group {
                taken.push(backlog.remove(i).expect("in range"));
            }
            i += 1;
        }
        for group in taken {
            position += 1;
            if group.starts_with("small") {
                small_left -= 1;
                last_small = position;
            }
        }
    }
    last_small
}

pub(crate) async fn run(server: &RedisProcess) {
    let client = redis::Client::open(server.url()).expect("client");
    let conn = client.get_multiplexed_async_connection().await.expect("connect");
    let scan = arrival_order();
    let on_redis = RedisBackend::new(conn, Keyspace::new("bench:fair:").unwrap());
    let sqs = GroupScan::default();
    let sqs_memory = ours(MemoryBackend::new(), "fair-sqs.fifo", sqs).await;
    let sqs_redis = ours(on_redis.clone(), "fair-sqs.fifo", sqs).await;
    let memory = ours(MemoryBackend::new(), "fair-rr.fifo", GroupScan::RoundRobin).await;
    let on_redis = ours(on_redis, "fair-rr.fifo", GroupScan::RoundRobin).await;
    println!(
        "## Fairness: 1 group with {DEEP} messages (sent first), {SMALL_GROUPS} groups with {SMALL} each\n\n\
         One consumer receives 10 at a time and deletes them before its next receive. Position of the last \
         small-group message in the receive order (lower is fairer; {} messages in all):\n",
        DEEP + SMALL_GROUPS * SMALL
    );
    println!("| order | last small-group message at | vs arrival-order scan |");
    println!("|---|---:|---:|");
    println!("| arrival-order scan (SQS's way, modelled here; baseline) | {scan} | 1.00× |");
    let rows = [
        ("SQS FIFO scan, memory (ours; the default, `sluice dev`)", sqs_memory),
        ("SQS FIFO scan, Redis (ours; the default, `sluice dev`)", sqs_redis),
        ("round-robin, memory (ours)", memory),
        ("round-robin, Redis (ours)", on_redis),
    ];
    for (label, at) in rows {
        println!("| {label} | {at} | {:.3}× |", at as f64 / scan as f64);
    }
    let faithful = sqs_memory == scan && sqs_redis == scan;
    println!(
        "\nThe SQS FIFO scan orders as the model: {}.",
        if faithful { "yes" } else { "NO (a bug in the SQS FIFO mode or in the model)" }
    );
    let worst = memory.max(on_redis);
    println!(
        "Target (round-robin): every small group fully served within the first {TARGET} receives: {worst}, {}.",
        if worst <= TARGET { "met" } else { "MISSED" }
    );
}
