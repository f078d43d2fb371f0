//! The drain's writer with nothing else: its batches already in memory,
//! written over `connections` connections at once, no Redis read, no
//! acknowledgement. What PostgreSQL allows the writer's statements (the
//! upsert, the events rows, the commit): a drain with as many consumers
//! cannot go faster, whatever its Redis side costs. Held against the
//! COPYs around it, as the drains are.

use crate::paired::{Paired, ROUNDS};
use sluice_redis::StoredEntry;
use sluice_sink::SnapshotWriter;
use sluice_testkit::TestRedis;
use sqlx::PgPool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The median round of [`ROUNDS`], and every round's ratio.
pub(crate) async fn median_of_rounds(redis: &TestRedis, pool: &PgPool, connections: usize) -> (Paired, Vec<f64>) {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        crate::reset(pool).await;
        let before_copy = crate::copy_ceiling(pool).await;
        crate::reset(pool).await;
        let before = crate::cpu::now(redis, pool).await;
        let rate = write_all(pool, connections).await;
        let cpu = crate::cpu::now(redis, pool).await - before;
        let after_copy = crate::copy_ceiling(pool).await;
        rounds.push(Paired { rate, ceiling: (before_copy + after_copy) / 2.0, cpu });
    }
    rounds.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    let ratios = rounds.iter().map(Paired::ratio).collect();
    (rounds[ROUNDS / 2], ratios)
}

/// Every snapshot in batches of the drain's size, `connections` writers
/// taking the next batch as they finish one; rows per second.
async fn write_all(pool: &PgPool, connections: usize) -> f64 {
    let size = sluice_sink::DrainConfig::default().batch;
    let batches: Vec<Vec<StoredEntry>> = (0..crate::SNAPSHOTS)
        .step_by(size)
        .map(|start| (start..(start + size).min(crate::SNAPSHOTS)).map(|i| crate::entry(i, 1)).collect())
        .collect();
    let batches = Arc::new(Mutex::new(batches));
    let started = Instant::now();
    let writers: Vec<_> = (0..connections)
        .map(|_| {
            let (writer, batches) = (SnapshotWriter::new(pool.clone()), batches.clone());
            tokio::spawn(async move {
                loop {
                    let Some(batch) = batches.lock().expect("batches").pop() else { break };
                    writer.write("bench", batch).await.expect("write");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer");
    }
    crate::SNAPSHOTS as f64 / started.elapsed().as_secs_f64()
}
