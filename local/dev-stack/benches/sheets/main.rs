//! `make bench` for the sheet path, side by side in one run, through the
//! whole local stack (ingest → FIFO queue → state machine → buffer → flush
//! queue → flush) against the sandbox Google Sheets:
//!
//! 1. API calls per 1,000 rows sent by 100 clients at once, next to one
//!    append per submission, sent at once (both under Google's quota, its
//!    window scaled), with and without retrying its 429s;
//! 2. a single row's latency at low load until it is in the sheet (p50),
//!    next to a fixed 500-row / 10 s buffer;
//! 3. sustained rows/min per credential at saturation against the limit
//!    of calls/min × rows per call (the quota scaled to 10 calls per 10 s
//!    and 20 rows per call, so a run takes seconds, not minutes);
//! 4. work per row (executions, Lambda invocations, flushes, Google calls,
//!    Redis commands) in a steady flow and a trickle, and from them the
//!    AWS cost of a month of rows: `bench/cost-sheets.md` (`per_row`).

mod calls;
mod latency;
mod per_row;
mod rig;
mod saturation;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!("# Sheet path: calls per 1,000 rows, single-row latency, sustained throughput, work per row\n");
    println!(
        "Everything on this machine ({} cores): a private redis-server, the sandbox Google Sheets over HTTP \
         enforcing per-user and per-project write quotas, the full local stack.\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    runtime.block_on(async {
        calls::run().await;
        latency::run().await;
        saturation::run().await;
        per_row::run().await;
    });
}
