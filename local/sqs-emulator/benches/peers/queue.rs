//! Item 2: our embedded FIFO queue on Redis (what `sluice dev` runs) vs
//! BullMQ, the queue the sheet-sync system this project replaces was built
//! on. Same server, 100,000 jobs: add, then receive and complete them all
//! with 1 and 8 consumers; Redis memory per waiting job; then, with the
//! consumers running, jobs added at a steady pace and enqueue → start.
//!
//! Ordering differs and is said in the output: ours delivers each of 1000
//! groups in order with any number of consumers; BullMQ orders only with a
//! single worker of concurrency 1 (its groups are BullMQ Pro), so its
//! 8-worker rows are unordered.

use crate::{Redis, node, used_memory};
use futures::future::join_all;
use sluice_domain::queue::{OutgoingMessage, ReceiveRequest};
use sluice_domain::{DedupId, GroupKey, WorkQueue};
use sluice_redis::Keyspace;
use sluice_sqs_emulator::{EmbeddedQueue, QueueBackend, QueueConfig, RedisBackend};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const JOBS: usize = 100_000;
const GROUPS: usize = 1000;
/// Producers, each sending 100 at a time (ten SendMessageBatch calls).
const PRODUCERS: usize = 8;
const PACED_JOBS: usize = 5_000;
const PACED_PER_S: usize = 1_000;
const BODY: &str = r#""mall_id":"acme","event_no":90001,"resource":{"product_no":12345}"#;

struct Run {
    add_s: f64,
    process_s: f64,
    bytes_per_job: f64,
    latencies_us: Vec<f64>,
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

fn message(run: &str, i: usize, stamp: Option<u64>) -> OutgoingMessage {
    let body = match stamp {
        Some(t) => format!("{{\"t\":{t},{BODY}}}"),
        None => format!("{{{BODY}}}"),
    };
    let group = GroupKey::parse(&format!("shop-{}", i % GROUPS)).expect("group");
    OutgoingMessage::new(group, DedupId::parse(&format!("{run}-{i}")).expect("dedup"), body)
}

/// Receives (10 at a time) and deletes until `n` are done; with `stamps`,
/// records each message's enqueue → receive from the `t` in its body.
async fn consume<Q: WorkQueue>(queue: Arc<Q>, consumers: usize, n: usize, wait: Duration, stamped: bool) -> Vec<f64>
where
    Q::Error: std::fmt::Debug,
{
    let done = Arc::new(AtomicUsize::new(0));
    let request = ReceiveRequest::new(10, Duration::from_secs(30), wait).expect("request");
    let tasks = (0..consumers).map(|_| {
        let (queue, done) = (queue.clone(), done.clone());
        async move {
            let mut latencies = Vec::new();
            while done.load(Ordering::Relaxed) < n {
                let got = queue.receive(request).await.expect("receive");
                if got.is_empty() {
                    // Every ready group is in flight with another consumer.
                    tokio::task::yield_now().await;
                    continue;
                }
                if stamped {
                    let now = now_us();
                    for m in &got {
                        let v: serde_json::Value = serde_json::from_str(&m.body).expect("body");
                        latencies.push(now.saturating_sub(v["t"].as_u64().expect("t")) as f64);
                    }
                }
                join_all(got.iter().map(|m| queue.delete(&m.receipt))).await.into_iter().for_each(|r| {
                    r.expect("delete");
                });
                done.fetch_add(got.len(), Ordering::Relaxed);
            }
            latencies
        }
    });
    join_all(tasks).await.into_iter().flatten().collect()
}

fn ours(runtime: &tokio::runtime::Runtime, redis: &mut Redis, prefix: &str, consumers: usize) -> Run {
    let name = format!("{}work.fifo", prefix.trim_end_matches(':'));
    let queue = runtime.block_on(async {
        let conn = redis::Client::open(redis.url.as_str()).expect("url").get_multiplexed_async_connection().await;
        let backend = RedisBackend::new(conn.expect("connect"), Keyspace::new(prefix).expect("prefix"));
        backend.create_queue(&name, &QueueConfig::default()).await.expect("create");
        Arc::new(EmbeddedQueue::new(backend, &name))
    });
    let all: Vec<OutgoingMessage> = (0..JOBS).map(|i| message(prefix, i, None)).collect();
    let before = used_memory(redis);
    let started = Instant::now();
    runtime.block_on(async {
        let chunks: Vec<&[OutgoingMessage]> = all.chunks(100).collect();
        let next = Arc::new(AtomicUsize::new(0));
        join_all((0..PRODUCERS).map(|_| {
            let (queue, next, chunks) = (queue.clone(), next.clone(), &chunks);
            async move {
                while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    assert!(queue.send_batch(chunk).await.iter().all(|o| o.is_accepted()));
                }
            }
        }))
        .await;
    });
    let add_s = started.elapsed().as_secs_f64();
    let bytes_per_job = (used_memory(redis) - before) as f64 / JOBS as f64;
    let started = Instant::now();
    runtime.block_on(consume(queue.clone(), consumers, JOBS, Duration::ZERO, false));
    let process_s = started.elapsed().as_secs_f64();
    // Paced: consumers long-poll (1 s) while batches of ten arrive.
    let latencies_us = runtime.block_on(async {
        let consuming = tokio::spawn(consume(queue.clone(), consumers, PACED_JOBS, Duration::from_secs(1), true));
        let gap = Duration::from_secs_f64(10.0 / PACED_PER_S as f64);
        let t0 = tokio::time::Instant::now();
        for (b, i) in (0..PACED_JOBS).step_by(10).enumerate() {
            tokio::time::sleep_until(t0 + gap * b as u32).await;
            let batch: Vec<_> =
                (i..(i + 10).min(PACED_JOBS)).map(|j| message(prefix, JOBS + j, Some(now_us()))).collect();
            assert!(queue.send_batch(&batch).await.iter().all(|o| o.is_accepted()));
        }
        consuming.await.expect("consumers")
    });
    Run { add_s, process_s, bytes_per_job, latencies_us }
}

fn bullmq(redis: &Redis, prefix: &str, concurrency: usize) -> Run {
    let args = [
        redis.url.clone(),
        prefix.to_owned(),
        JOBS.to_string(),
        concurrency.to_string(),
        PACED_JOBS.to_string(),
        PACED_PER_S.to_string(),
    ];
    let v = node::run("queue.mjs", &args);
    Run {
        add_s: v["add_s"].as_f64().expect("add_s"),
        process_s: v["process_s"].as_f64().expect("process_s"),
        bytes_per_job: v["bytes_per_job"].as_f64().expect("bytes_per_job"),
        latencies_us: v["latencies_us"]
            .as_array()
            .expect("latencies")
            .iter()
            .map(|x| x.as_f64().expect("µs"))
            .collect(),
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
}

pub(crate) fn run(runtime: &tokio::runtime::Runtime, redis: &mut Redis) {
    println!("## 2. Work queue: sluice's embedded FIFO queue on Redis vs BullMQ {}\n", node::version("bullmq"));
    println!(
        "{JOBS} jobs added ({PRODUCERS} producers, 100 a call), then received and completed (ours: receive 10, \
         delete each; BullMQ: one Worker, removeOnComplete). Ordering: ours delivers each of {GROUPS} groups in \
         order with any number of consumers; BullMQ's groups are BullMQ Pro only, so its ordered mode is one worker \
         of concurrency 1 per queue, and its 8-worker rows are **unordered**. One run per cell, sides \
         interleaved. Memory: used_memory before and after the adds, per job. Enqueue → start: {PACED_JOBS} jobs \
         added {PACED_PER_S}/s in batches of ten with the consumers running (ours long-poll).\n"
    );
    println!(
        "| consumers | side | add jobs/s | process + complete jobs/s | bytes per waiting job | enqueue → start p50 | p99 |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    for consumers in [1, 8] {
        let o = ours(runtime, redis, &format!("q{consumers}:"), consumers);
        let b = bullmq(redis, &format!("bq{consumers}"), consumers);
        for (side, r) in [
            ("sluice (ordered per group)", &o),
            (if consumers == 1 { "BullMQ (ordered: single worker)" } else { "BullMQ (unordered)" }, &b),
        ] {
            println!(
                "| {consumers} | {side} | {:.0} | {:.0} | {:.0} | {:.1} ms | {:.1} ms |",
                JOBS as f64 / r.add_s,
                JOBS as f64 / r.process_s,
                r.bytes_per_job,
                percentile(r.latencies_us.clone(), 0.5) / 1000.0,
                percentile(r.latencies_us.clone(), 0.99) / 1000.0
            );
        }
        ratios.push((
            consumers,
            b.add_s / o.add_s,
            b.process_s / o.process_s,
            o.bytes_per_job / b.bytes_per_job,
            percentile(o.latencies_us.clone(), 0.99) / percentile(b.latencies_us.clone(), 0.99),
        ));
    }
    println!(
        "\n| consumers | add, sluice ÷ BullMQ | process, sluice ÷ BullMQ | bytes per job, sluice ÷ BullMQ | p99 enqueue → start, sluice ÷ BullMQ |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for (c, add, process, bytes, p99) in ratios {
        println!("| {c} | {add:.2}× | {process:.2}× | {bytes:.2}× | {p99:.2}× |");
    }
    println!();
}
