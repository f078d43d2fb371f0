//! `make bench` against the peers (issue #19 items 1 and 2), one run, side
//! by side on one private redis-server: our sliding-window limiter vs the
//! npm rolling-rate-limiter, and our embedded FIFO queue on Redis vs BullMQ.
//! The Node side (bench/peers, `npm ci` from its lockfile when missing) runs
//! as child processes against the same server; when node or npm is absent
//! the bench says so in one line and prints nothing else.
//!
//! It lives in sluice-sqs-emulator because that crate already depends on both
//! sides of ours (the queue and sluice-redis's limiter): one build.

mod limiter;
mod node;
mod queue;

use sluice_private_servers::{RedisProcess, ServerOptions};

/// A blocking connection for INFO and MEMORY, apart from the measured ones.
pub(crate) struct Redis {
    pub(crate) url: String,
    pub(crate) conn: redis::Connection,
}

/// Redis's own CPU time so far (user + system), µs, from INFO cpu.
pub(crate) fn server_cpu_us(redis: &mut Redis) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(&mut redis.conn).expect("INFO cpu");
    sluice_testkit::server_info::cpu_time(&info).as_secs_f64() * 1e6
}

pub(crate) fn used_memory(redis: &mut Redis) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(&mut redis.conn).expect("INFO memory");
    info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).expect("used_memory")
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    println!("# Peers: limiter vs rolling-rate-limiter, work queue vs BullMQ\n");
    let node_version = match node::ready() {
        Ok(v) => v,
        Err(missing) => {
            println!("Skipped: {missing}; the peers run on Node (bench/peers).");
            return;
        }
    };
    let server = RedisProcess::start(ServerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let url = server.url().to_string();
    let conn = redis::Client::open(url.as_str()).and_then(|c| c.get_connection()).expect("connect");
    let mut redis = Redis { url, conn };
    let info: String = redis::cmd("INFO").arg("server").query(&mut redis.conn).expect("INFO");
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_owned();
    println!(
        "One private redis-server {version} on 127.0.0.1, this bench and Node {node_version} share {} cores; \
         the peers run as child processes against the same server.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    limiter::run(&runtime, &mut redis);
    queue::run(&runtime, &mut redis);
}
