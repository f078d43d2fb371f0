//! `make bench` for the Redis primitives: each primitive next to a plain
//! `SET NX PX` round trip, on one private redis-server, in one run.
//!
//! Modes: one connection with one call at a time; 32 connections with one
//! call at a time each; one multiplexed connection with 64 calls in flight
//! (the client pipelines them). Then `MEMORY USAGE` per key, and the deny
//! cache's answer time next to a Redis round trip.

mod deny_cache;
mod footprint;

use redis::aio::MultiplexedConnection;
use sluice_private_servers::{RedisProcess, ServerOptions};
use sluice_redis::{
    Acquire, Bucket, BucketSpec, Buckets, DenyCache, Gates, Keyspace, Limit, LimitSet, Locks, SlidingWindowLimiter, Tag,
};
use sluice_testkit::server_info::server_cpu;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const RUN: Duration = Duration::from_secs(1);
/// Each cell is measured this many times, interleaved with the other cells
/// of its mode, and the median is reported: the bench process and Redis
/// share the machine's cores, so single runs drift.
const ROUNDS: usize = 3;
const POOL: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    SetNxPx,
    LimiterAdmit,
    LimiterDeny,
    GcraAcquire,
    GcraObserve,
    LockCycle,
    GatePass,
    PendingCycle,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::SetNxPx => "SET NX PX (baseline)",
            Op::LimiterAdmit => "limiter, admitted",
            Op::LimiterDeny => "limiter, denied",
            Op::GcraAcquire => "gcra acquire",
            Op::GcraObserve => "gcra observe",
            Op::LockCycle => "lock acquire/release",
            Op::GatePass => "gate pass",
            Op::PendingCycle => "gate mark/clear",
        }
    }

    /// Redis calls one op makes (cycles are two scripts).
    fn calls(self) -> u64 {
        if matches!(self, Op::LockCycle | Op::PendingCycle) { 2 } else { 1 }
    }
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Sequential,
    Concurrent32,
    Pipelined64,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Sequential => "1 conn, 1 in flight",
            Mode::Concurrent32 => "32 conns, 1 in flight each",
            Mode::Pipelined64 => "1 conn, 64 in flight",
        }
    }
}

/// The primitives on one connection, with their keys prepared up front.
struct Worker {
    conn: MultiplexedConnection,
    limiter: SlidingWindowLimiter<MultiplexedConnection>,
    buckets: Buckets<MultiplexedConnection>,
    locks: Locks<MultiplexedConnection>,
    gates: Gates<MultiplexedConnection>,
    admit_sets: Vec<LimitSet>,
    deny_sets: Vec<LimitSet>,
    buckets_pool: Vec<Bucket>,
    tags: Vec<Tag>,
    set_keys: Vec<String>,
}

impl Worker {
    async fn new(client: &redis::Client, ks: &Keyspace) -> Self {
        let conn = client.get_multiplexed_async_connection().await.expect("connect");
        // Measure Redis's side: no in-process cache answers for it.
        let deny = Arc::new(DenyCache::disabled());
        let limiter = SlidingWindowLimiter::new(conn.clone(), ks.clone(), deny.clone());
        let buckets = Buckets::new(conn.clone(), ks.clone(), deny);
        let tags: Vec<Tag> = (0..POOL).map(|i| Tag::new(&format!("mall-{i:05}"))).collect();
        let admit = [Limit::new("admit", 1_000_000, Duration::from_secs(1))];
        let deny = [Limit::new("deny", 1, Duration::from_secs(3600))];
        let spec = BucketSpec::new(1_000_000, 1000.0);
        Self {
            admit_sets: tags.iter().map(|t| limiter.limits(t, &admit).expect("limits")).collect(),
            deny_sets: tags.iter().map(|t| limiter.limits(t, &deny).expect("limits")).collect(),
            buckets_pool: tags.iter().map(|t| buckets.bucket(t, "admin", spec).expect("bucket")).collect(),
            set_keys: tags.iter().map(|t| ks.key(t, "set", "x")).collect(),
            locks: Locks::new(conn.clone(), ks.clone()),
            gates: Gates::new(conn.clone(), ks.clone()),
            limiter,
            buckets,
            conn,
            tags,
        }
    }

    async fn run(&self, op: Op, task: usize, i: usize) {
        let k = i % POOL;
        match op {
            Op::SetNxPx => {
                let _: Option<String> = redis::cmd("SET")
                    .arg(&self.set_keys[k])
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(60_000)
                    .query_async(&mut self.conn.clone())
                    .await
                    .expect("SET");
            }
            Op::LimiterAdmit => {
                assert!(self.limiter.acquire(&self.admit_sets[k], 1).await.expect("limiter").is_admitted())
            }
            Op::LimiterDeny => {
                self.limiter.acquire(&self.deny_sets[k], 1).await.expect("limiter");
            }
            Op::GcraAcquire => {
                assert!(self.buckets.acquire(&self.buckets_pool[k], 1).await.expect("gcra").is_admitted())
            }
            Op::GcraObserve => {
                self.buckets.observe(&self.buckets_pool[k], 10, 40).await.expect("observe");
            }
            Op::LockCycle => {
                let tag = &self.tags[task % POOL];
                let name = format!("t{task}");
                let Acquire::Acquired(lease) =
                    self.locks.acquire(tag, &name, Duration::from_secs(30)).await.expect("lock")
                else {
                    panic!("lock {name} busy");
                };
                self.locks.release(&lease).await.expect("release");
            }
            Op::GatePass => {
                self.gates.pass(&self.tags[k], "item", Duration::from_secs(60)).await.expect("gate");
            }
            Op::PendingCycle => {
                let tag = &self.tags[task % POOL];
                let name = format!("t{task}");
                assert!(
                    self.gates.mark_pending(tag, &name, "owner", Duration::from_secs(60)).await.expect("mark").passed()
                );
                assert!(self.gates.clear(tag, &name, "owner").await.expect("clear"));
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    /// Redis calls per second.
    rate: f64,
    /// Redis CPU per call, µs.
    cpu_us: f64,
}

/// Measures `op` in `mode` for [`RUN`].
async fn measure(client: &redis::Client, ks: &Keyspace, op: Op, mode: Mode) -> Cell {
    let (workers, tasks_per_worker) = match mode {
        Mode::Sequential => (1, 1),
        Mode::Concurrent32 => (32, 1),
        Mode::Pipelined64 => (1, 64),
    };
    let mut probe = client.get_multiplexed_async_connection().await.expect("connect");
    let mut pool = Vec::new();
    for _ in 0..workers {
        pool.push(Arc::new(Worker::new(client, ks).await));
    }
    let done = Arc::new(AtomicU64::new(0));
    let cpu_before = server_cpu(&mut probe).await;
    let started = Instant::now();
    let mut handles = Vec::new();
    for (w, worker) in pool.into_iter().enumerate() {
        for t in 0..tasks_per_worker {
            let (worker, done) = (worker.clone(), done.clone());
            let task = w * tasks_per_worker + t;
            handles.push(tokio::spawn(async move {
                let mut i = task * 7919;
                while started.elapsed() < RUN {
                    worker.run(op, task, i).await;
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    for h in handles {
        h.await.expect("bench task");
    }
    let elapsed = started.elapsed();
    let cpu = server_cpu(&mut probe).await.saturating_sub(cpu_before);
    let calls = (done.load(Ordering::Relaxed) * op.calls()) as f64;
    Cell { rate: calls / elapsed.as_secs_f64(), cpu_us: cpu.as_secs_f64() * 1e6 / calls }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn main() {
    let server = RedisProcess::start(ServerOptions::default()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let client = redis::Client::open(server.url()).expect("url");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let version: String = {
        let mut con = client.get_connection().expect("connect");
        let info: String = redis::cmd("INFO").arg("server").query(&mut con).expect("INFO");
        info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_owned()
    };
    println!("# Redis primitives vs SET NX PX\n");
    println!(
        "One private redis-server {version} on 127.0.0.1 and this bench share {} cores. Each cell runs {} s, \
         {ROUNDS} times interleaved with the others; the median is shown. A lock or mark cycle is two calls.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        RUN.as_secs_f64()
    );
    let ops = [
        Op::SetNxPx,
        Op::LimiterAdmit,
        Op::LimiterDeny,
        Op::GcraAcquire,
        Op::GcraObserve,
        Op::LockCycle,
        Op::GatePass,
        Op::PendingCycle,
    ];
    let modes = [Mode::Sequential, Mode::Concurrent32, Mode::Pipelined64];
    // rounds[m][o]: the measurements of op o in mode m.
    let mut cells: Vec<Vec<Vec<Cell>>> = vec![vec![Vec::new(); ops.len()]; modes.len()];
    runtime.block_on(async {
        for (m, mode) in modes.iter().enumerate() {
            for round in 0..ROUNDS {
                let ks = Keyspace::new(format!("bench{m}.{round}:")).expect("keyspace");
                for (o, op) in ops.iter().enumerate() {
                    cells[m][o].push(measure(&client, &ks, *op, *mode).await);
                }
            }
        }
    });
    let rate = |m: usize, o: usize| median(cells[m][o].iter().map(|c| c.rate).collect());
    let cpu = |m: usize, o: usize| median(cells[m][o].iter().map(|c| c.cpu_us).collect());
    println!("## Throughput, Redis calls/s (ratio to SET NX PX in the same mode)\n");
    println!("| primitive | {} | {} | {} |", modes[0].label(), modes[1].label(), modes[2].label());
    println!("|---|---:|---:|---:|");
    for (o, op) in ops.iter().enumerate() {
        let row: Vec<String> = (0..modes.len())
            .map(|m| {
                if o == 0 {
                    format!("{:.0}", rate(m, 0))
                } else {
                    format!("{:.0} ({:.2}×)", rate(m, o), rate(m, o) / rate(m, 0))
                }
            })
            .collect();
        println!("| {} | {} |", op.label(), row.join(" | "));
    }
    let worst = (1..ops.len()).map(|o| rate(1, o) / rate(1, 0)).fold(f64::INFINITY, f64::min);
    println!("\nTarget: every primitive ≥ 0.60× SET at 32 concurrent: worst {worst:.2}×, {}.", verdict(worst >= 0.6));
    println!("\n## Redis CPU per call, µs (INFO cpu; what the server itself spends)\n");
    println!("| primitive | {} | {} | {} |", modes[0].label(), modes[1].label(), modes[2].label());
    println!("|---|---:|---:|---:|");
    for (o, op) in ops.iter().enumerate() {
        let row: Vec<String> = (0..modes.len()).map(|m| format!("{:.1}", cpu(m, o))).collect();
        println!("| {} | {} |", op.label(), row.join(" | "));
    }
    runtime.block_on(footprint::report(&client));
    deny_cache::report(Duration::from_secs_f64(1.0 / rate(0, 0)));
    drop(server);
}
