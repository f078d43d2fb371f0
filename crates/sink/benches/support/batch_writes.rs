//! Part 2: how a batch of 500 is written, PostgreSQL only, one
//! connection: the drain's writer (one `UNNEST` upsert with the events
//! rows) against `COPY` into a staging table and one upsert from it.

use sluice_sink::SnapshotWriter;
use sqlx::PgPool;
use std::time::Instant;

/// Batches of 500 written by the drain's writer (one UNNEST upsert each),
/// without Redis: the same work as `copy_staging`.
pub(crate) async fn unnest_batches(pool: &PgPool) -> f64 {
    let writer = SnapshotWriter::new(pool.clone());
    let started = Instant::now();
    for start in (0..crate::SNAPSHOTS).step_by(500) {
        writer.write("bench", (start..start + 500).map(|i| crate::entry(i, 1)).collect()).await.expect("write");
    }
    crate::SNAPSHOTS as f64 / started.elapsed().as_secs_f64()
}

/// A batch of 500 written through COPY into a temporary staging table, then
/// one upsert from it.
pub(crate) async fn copy_staging(pool: &PgPool) -> f64 {
    let started = Instant::now();
    for start in (0..crate::SNAPSHOTS).step_by(500) {
        let mut tx = pool.begin().await.expect("tx");
        sqlx::query(
            "CREATE TEMP TABLE IF NOT EXISTS staging (LIKE sluice.snapshots INCLUDING DEFAULTS) ON COMMIT DELETE ROWS",
        )
        .execute(&mut *tx)
        .await
        .expect("staging");
        let mut copy = tx
            .copy_in_raw(
                "COPY staging (mall_id, kind, resource_id, status, body, updated_date, version, event_ids, entry_id) FROM STDIN",
            )
            .await
            .expect("copy");
        copy.send(crate::copy_text(start..start + 500).as_bytes()).await.expect("send");
        copy.finish().await.expect("finish");
        sqlx::query(
            "INSERT INTO sluice.snapshots SELECT * FROM staging ORDER BY mall_id, kind, resource_id
             ON CONFLICT (mall_id, kind, resource_id) DO UPDATE SET body = excluded.body, version = excluded.version
             WHERE excluded.version > snapshots.version",
        )
        .execute(&mut *tx)
        .await
        .expect("upsert from staging");
        tx.commit().await.expect("commit");
    }
    crate::SNAPSHOTS as f64 / started.elapsed().as_secs_f64()
}
