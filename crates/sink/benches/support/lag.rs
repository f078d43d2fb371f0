//! End-to-end lag: stream entry → committed in PostgreSQL, at a steady
//! rate of appends while one drain runs.

use sluice_redis::{Connection, SnapshotStore};
use sluice_sink::{Drain, DrainConfig, SnapshotWriter};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Appends at `rate` per second for `seconds` while one drain runs; the lag
/// of each row is its commit time minus its stream entry's time.
pub(crate) async fn lag(store: &SnapshotStore<Connection>, pool: &PgPool, rate: usize, seconds: usize) -> (f64, f64) {
    let cancel = CancellationToken::new();
    let drain = Arc::new(Drain::new(
        store.consumer("sink", "lag").expect("consumer"),
        SnapshotWriter::new(pool.clone()),
        DrainConfig { idle_poll: Duration::from_millis(20), ..DrainConfig::default() },
    ));
    let runner = {
        let (drain, cancel) = (drain.clone(), cancel.clone());
        tokio::spawn(async move { drain.run(cancel).await })
    };
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let per_tick = rate / 100;
    for t in 0..seconds * 100 {
        tick.tick().await;
        for j in 0..per_tick {
            let (mall, key, fields) = super::fields(t * per_tick + j, 2);
            store.append(&mall, &key, &fields).await.expect("append");
        }
    }
    let total = (seconds * 100 * per_tick) as i64;
    loop {
        let done: i64 = sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots WHERE version = 2")
            .fetch_one(pool)
            .await
            .expect("count");
        if done >= total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    runner.await.expect("drain");
    let mut lags: Vec<f64> = sqlx::query_scalar(
        "SELECT (extract(epoch FROM written_at) * 1000 - split_part(entry_id, '-', 1)::bigint)::float8
         FROM sluice.snapshots WHERE version = 2",
    )
    .fetch_all(pool)
    .await
    .expect("lags");
    lags.sort_by(f64::total_cmp);
    let at = |q: f64| lags[((lags.len() as f64 * q) as usize).min(lags.len() - 1)];
    (at(0.50), at(0.99))
}
