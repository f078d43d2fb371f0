//! The drain's writer with nothing else: its batches already in memory
//! (built before the measurement), written over `connections` connections
//! at once, no Redis read, no acknowledgement. What PostgreSQL allows the
//! writer's statements (the upsert, the events rows, the commit): a drain
//! with as many consumers cannot go faster, whatever its Redis side costs.
//! Held against the COPYs around it, as the drains are.

use crate::paired::{self, Paired};
use sluice_redis::StoredEntry;
use sluice_sink::SnapshotWriter;
use sluice_testkit::TestRedis;
use sqlx::PgPool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The median of the rounds, and every round's ratio.
pub(crate) async fn median_of_rounds(redis: &TestRedis, pool: &PgPool, connections: usize) -> (Paired, Vec<f64>) {
    let batches = Arc::new(Mutex::new(Vec::new()));
    paired::median_around_copies(
        redis,
        pool,
        async |_| *batches.lock().expect("batches") = all_batches(),
        async || write_all(pool, connections, &batches).await,
    )
    .await
}

/// Every snapshot, in batches of the drain's size.
fn all_batches() -> Vec<Vec<StoredEntry>> {
    let size = sluice_sink::DrainConfig::default().batch;
    (0..crate::SNAPSHOTS)
        .step_by(size)
        .map(|start| (start..(start + size).min(crate::SNAPSHOTS)).map(|i| crate::entry(i, 1)).collect())
        .collect()
}

/// `batches` written by `connections` writers, each taking the next batch
/// as it finishes one; rows per second.
async fn write_all(pool: &PgPool, connections: usize, batches: &Arc<Mutex<Vec<Vec<StoredEntry>>>>) -> f64 {
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
