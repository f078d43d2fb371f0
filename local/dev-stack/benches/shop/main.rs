//! `make bench` for the shop path, side by side in one run:
//!
//! 1. drain time of a burst of webhooks for one mall against a sandbox
//!    bucket of 40 at 20/s, over the theoretical minimum (N − 40) / 20 s,
//!    next to a fixed 0.2 s spacing between calls (the table's "one call every 0.2 s"
//!    row) and next to no limiter at all;
//! 2. coalescing: upstream calls for 10,000 webhooks over 500 products,
//!    with flow control and without it;
//! 3. ingest: webhooks/s accepted from 64 concurrent clients, next to a
//!    bare HTTP handler on the same machine;
//! 4. work per webhook: Redis requests, round trips and CPU and SQS requests at
//!    ingest, state transitions and Lambda invocations per fetch.

mod coalescing;
mod cost;
mod drain;
mod ingest;
mod per_webhook;
mod rig;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!("# Shop path: drain time, coalescing, ingest, work per webhook\n");
    println!(
        "Everything on this machine ({} cores): a private redis-server, the sandbox Cafe24 over HTTP, the full local \
         stack (ingest → SQS endpoint → embedded FIFO queue in Redis, choosing groups as SQS FIFO does → pipe → state \
         machine → steps).\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    runtime.block_on(async {
        drain::run().await;
        let (coalescing, waiting) = coalescing::run().await;
        ingest::run().await;
        let (ingest, plain) = per_webhook::run(coalescing, waiting).await;
        cost::write(&ingest, plain, coalescing, waiting);
    });
}
