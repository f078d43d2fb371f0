//! `make bench` for the work queue, one run, side by side:
//!
//! - throughput: send, receive and delete N messages, with 1 group and
//!   with 1000 groups, in memory and on Redis, next to a bare Redis list
//!   (RPUSH / LPOP, no groups, no dedup, no visibility: the floor any
//!   Redis-backed queue pays); queues with the default group scan (as SQS
//!   FIFO);
//! - fairness: one group holding 20,000 messages and 100 groups holding 10
//!   each; where in the receive order the last small-group message comes,
//!   for both group scans (SQS FIFO, round-robin) and for an arrival-order
//!   scan modelled here apart from the queue, with one consumer that
//!   deletes each batch at once.

mod fairness;
mod throughput;

use sluice_private_servers::{RedisProcess, ServerOptions};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let server = RedisProcess::start(ServerOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let version = redis_version(&server);
    println!("# Work queue: embedded FIFO (memory, Redis) vs a bare Redis list; SQS FIFO scan vs round-robin\n");
    println!(
        "One private redis-server {version} on 127.0.0.1 and this bench share {} cores. Consumers delete each \
         received message with its own call (up to 10 in flight).\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    runtime.block_on(async {
        throughput::run(&server).await;
        fairness::run(&server).await;
    });
}

fn redis_version(server: &RedisProcess) -> String {
    let mut conn = redis::Client::open(server.url()).and_then(|c| c.get_connection()).expect("connect");
    let info: String = redis::cmd("INFO").arg("server").query(&mut conn).expect("INFO");
    info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_owned()
}
