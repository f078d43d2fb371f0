//! Item 1: our sliding-window limiter vs rolling-rate-limiter, the npm
//! library whose sorted-set design the sorted-set log follows. Same server, same
//! limit (60 per 60 s per key), one connection per side with 1 or 32
//! callers in flight on it (ioredis and the redis crate's multiplexed
//! connection both pipeline them), interleaved over rounds, medians shown.

use crate::{Redis, median, node, server_cpu_us};
use sluice_redis::{DenyCache, Keyspace, Limit, SlidingWindowLimiter, Tag};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const MAX: u32 = 60;
const WINDOW: Duration = Duration::from_secs(60);
const KEYS: usize = 10_000;
/// Attempts per key in the throughput cells: all stay under the limit, so
/// both sides do the same work (admit and record) on every call.
const SPREAD_PER_KEY: usize = 3;
/// The contention cells: 32 callers on 100 keys, 2.5× the limit each, so
/// each key fills and keeps being asked, and its log is at steady state.
const HOT_KEYS: usize = 100;
const HOT_PER_KEY: usize = 150;
const ROUNDS: usize = 3;

/// One side's run: attempts, admitted, seconds, admitted µs stamps per key.
struct Run {
    attempts: usize,
    admitted: usize,
    secs: f64,
    stamps: Vec<Vec<u64>>,
}

#[derive(Default, Clone)]
struct Cells {
    rate: Vec<f64>,
    cpu_us: Vec<f64>,
    worst_window: usize,
    admitted: Vec<usize>,
}

impl Cells {
    fn push(&mut self, run: &mut Run, cpu_us: f64) {
        self.rate.push(run.attempts as f64 / run.secs);
        self.cpu_us.push(cpu_us / run.attempts as f64);
        self.admitted.push(run.admitted);
        let worst = run.stamps.iter_mut().map(|s| max_in_window(s, WINDOW.as_micros() as u64)).max();
        self.worst_window = self.worst_window.max(worst.unwrap_or(0));
    }
}

/// The most stamps in any rolling window `(t - window, t]`: one function
/// for both sides, from the timestamps each side decided with.
fn max_in_window(stamps: &mut [u64], window_us: u64) -> usize {
    stamps.sort_unstable();
    let mut start = 0;
    let mut most = 0;
    for end in 0..stamps.len() {
        while stamps[start] + window_us <= stamps[end] {
            start += 1;
        }
        most = most.max(end - start + 1);
    }
    most
}

async fn ours(url: &str, prefix: &str, callers: usize, keys: usize, per_key: usize) -> Run {
    let client = redis::Client::open(url).expect("url");
    let conn = client.get_multiplexed_async_connection().await.expect("connect");
    // The peer has no in-process cache: measure Redis's side only.
    let limiter =
        SlidingWindowLimiter::new(conn, Keyspace::new(prefix).expect("prefix"), Arc::new(DenyCache::disabled()));
    let limit = [Limit::new("w", MAX, WINDOW)];
    let sets: Vec<_> =
        (0..keys).map(|k| limiter.limits(&Tag::new(&format!("k{k}")), &limit).expect("limits")).collect();
    let (limiter, sets) = (Arc::new(limiter), Arc::new(sets));
    let total = keys * per_key;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let (limiter, sets, next) = (limiter.clone(), sets.clone(), next.clone());
            tokio::spawn(async move {
                let mut stamps = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return stamps;
                    }
                    let key = i % keys;
                    if let sluice_redis::Admission::Admitted { server_time_us } =
                        limiter.acquire(&sets[key], 1).await.expect("limiter")
                    {
                        stamps.push((key, server_time_us));
                    }
                }
            })
        })
        .collect();
    let mut stamps = vec![Vec::new(); keys];
    let mut admitted = 0;
    for task in tasks {
        for (key, stamp) in task.await.expect("caller") {
            stamps[key].push(stamp);
            admitted += 1;
        }
    }
    Run { attempts: total, admitted, secs: started.elapsed().as_secs_f64(), stamps }
}

fn theirs(url: &str, prefix: &str, callers: usize, keys: usize, per_key: usize) -> Run {
    let args = [url.to_owned(), prefix.to_owned(), callers.to_string(), keys.to_string(), per_key.to_string()];
    let v = node::run("limiter.mjs", &args);
    let stamps = v["stamps"]
        .as_array()
        .expect("stamps")
        .iter()
        .map(|s| s.as_array().expect("stamps").iter().map(|t| t.as_u64().expect("µs")).collect())
        .collect();
    Run {
        attempts: v["attempts"].as_u64().expect("attempts") as usize,
        admitted: v["admitted"].as_u64().expect("admitted") as usize,
        secs: v["elapsed_s"].as_f64().expect("elapsed_s"),
        stamps,
    }
}

/// Average MEMORY USAGE of `names`.
fn bytes_per_key(redis: &mut Redis, names: impl Iterator<Item = String>) -> f64 {
    let sizes: Vec<u64> = names
        .map(|k| redis::cmd("MEMORY").arg("USAGE").arg(&k).query(&mut redis.conn).expect("MEMORY USAGE"))
        .collect();
    sizes.iter().sum::<u64>() as f64 / sizes.len() as f64
}

pub(crate) fn run(runtime: &tokio::runtime::Runtime, redis: &mut Redis) {
    println!(
        "## 1. Limiter: sluice's sliding window vs rolling-rate-limiter {}\n",
        node::version("rolling-rate-limiter")
    );
    let url = redis.url.clone();
    // cells[c][side]: c = 1 caller, 32 callers, 32 callers on hot keys.
    let mut cells = vec![vec![Cells::default(); 2]; 3];
    let (mut ours_bytes, mut theirs_bytes) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        for (c, (callers, keys, per_key)) in
            [(1, KEYS, SPREAD_PER_KEY), (32, KEYS, SPREAD_PER_KEY), (32, HOT_KEYS, HOT_PER_KEY)].into_iter().enumerate()
        {
            let ours_prefix = format!("o{round}.{c}:");
            let before = server_cpu_us(redis);
            let mut run = runtime.block_on(ours(&url, &ours_prefix, callers, keys, per_key));
            cells[c][0].push(&mut run, server_cpu_us(redis) - before);
            let theirs_prefix = format!("p{round}.{c}:");
            let before = server_cpu_us(redis);
            let mut run = theirs(&url, &theirs_prefix, callers, keys, per_key);
            cells[c][1].push(&mut run, server_cpu_us(redis) - before);
            if c == 2 {
                ours_bytes.push(bytes_per_key(redis, (0..keys).map(|k| format!("{ours_prefix}{{k{k}}}:win:w"))));
                theirs_bytes.push(bytes_per_key(redis, (0..keys).map(|k| format!("{theirs_prefix}k{k}"))));
            }
        }
    }
    let labels = [
        format!("1 caller, {KEYS} keys × {SPREAD_PER_KEY}"),
        format!("32 callers, {KEYS} keys × {SPREAD_PER_KEY}"),
        format!("32 callers, {HOT_KEYS} hot keys × {HOT_PER_KEY} (contention)"),
    ];
    println!(
        "Limit {MAX} per {} s per key; one connection per side; {ROUNDS} rounds, the two sides interleaved; \
         medians. Redis CPU from INFO cpu around each run. Our in-process deny cache is off (the peer has none).\n",
        WINDOW.as_secs()
    );
    println!(
        "| workload | sluice decisions/s | peer decisions/s | ratio | sluice Redis CPU µs/decision | peer | ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (c, label) in labels.iter().enumerate() {
        let (o, t) = (&cells[c][0], &cells[c][1]);
        let (or, tr) = (median(o.rate.clone()), median(t.rate.clone()));
        let (oc, tc) = (median(o.cpu_us.clone()), median(t.cpu_us.clone()));
        println!("| {label} | {or:.0} | {tr:.0} | {:.2}× | {oc:.1} | {tc:.1} | {:.2}× |", or / tr, oc / tc);
    }
    let (ob, tb) = (median(ours_bytes), median(theirs_bytes));
    println!(
        "\nBytes per key at steady state (a hot key after {HOT_PER_KEY} attempts within the window, MEMORY USAGE): \
         sluice LIST {ob:.0}, peer ZSET {tb:.0}: {:.2}×. The peer records denied attempts too, so its set holds \
         every attempt of the window, not {MAX}.\n",
        ob / tb
    );
    println!(
        "Correctness under contention: the most admitted in any rolling {} s window of one key, over every run \
              (each side's own admitted timestamps, one counting function):\n",
        WINDOW.as_secs()
    );
    println!("| side | most in any window | limit | admitted per hot run (of {}) |", HOT_KEYS * HOT_PER_KEY);
    println!("|---|---:|---:|---:|");
    for (side, name) in ["sluice", "rolling-rate-limiter"].iter().enumerate() {
        let worst = cells.iter().map(|c| c[side].worst_window).max().unwrap_or(0);
        let ok = if worst <= MAX as usize { "never over" } else { "OVER" };
        let admitted: Vec<String> = cells[2][side].admitted.iter().map(|a| a.to_string()).collect();
        println!("| {name} | {worst} ({ok}) | {MAX} | {} |", admitted.join(", "));
    }
    println!(
        "\n`@upstash/ratelimit` is not compared: it reaches Redis only through `@upstash/redis`, an HTTP client \
         of Upstash's REST API, so against a local redis-server it needs Upstash's REST proxy \
         (serverless-redis-http, a container) in between, whose cost would be measured with it.\n"
    );
}
