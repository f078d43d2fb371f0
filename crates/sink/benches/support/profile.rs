//! One drain and nothing else, for a profiler: the fill, the resets and
//! the COPYs of the other parts would be most of a whole run's samples.
//! perf's control FIFO (`PERF_CTL_FIFO`) is enabled just before the drain
//! and disabled just after it, so a system-wide profile holds the drain,
//! redis-server and PostgreSQL while they do its work.

use crate::cpu;
use sluice_redis::{Connection, SnapshotStore, Traces};
use sluice_testkit::TestRedis;
use sqlx::PgPool;
use std::io::Write;

pub(crate) async fn drain_once(
    redis: &TestRedis,
    store: &SnapshotStore<Connection>,
    pool: &PgPool,
    consumers: usize,
    deployed: bool,
) {
    let traces = Traces::new(redis.conn().await, redis.keyspace(), sluice_redis::trace::DEFAULT_RETENTION);
    if deployed {
        crate::journeys::trace_journeys(&traces, crate::SNAPSHOTS).await;
    }
    crate::fill(store, 1).await;
    crate::reset(pool).await;
    let before = cpu::now(redis, pool).await;
    perf_control("enable");
    let rate = crate::drain_with(store, pool, consumers, deployed.then_some(&traces)).await;
    perf_control("disable");
    let cpu::Cpu(drain, redis_cpu, pg) = cpu::now(redis, pool).await - before;
    println!(
        "{consumers} consumer(s){}: {rate:.0} rows/s; CPU drain {drain:.2}, redis {redis_cpu:.2}, PostgreSQL {pg:.2}",
        if deployed { ", as deployed" } else { "" }
    );
}

/// Tells perf (`--control fifo:$PERF_CTL_FIFO`) to `command`, when it listens.
fn perf_control(command: &str) {
    let Ok(path) = std::env::var("PERF_CTL_FIFO") else { return };
    let mut fifo = std::fs::OpenOptions::new().write(true).open(&path).expect("perf's control fifo");
    writeln!(fifo, "{command}").expect("perf control");
}
