//! Section 4 of the drain bench: what a steady flow leaves in Redis.

use sluice_redis::{Connection, SnapshotStore};
use sluice_sink::{Drain, DrainConfig, SnapshotWriter};
use sluice_testkit::TestRedis;
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// What a round of the steady flow left in Redis.
pub(crate) struct MemoryRound {
    pub used: u64,
    pub streams: u64,
    pub seen_keys: u64,
    pub seen_count: usize,
}

/// `rounds` rounds of `per_round` snapshots stored then drained.
pub(crate) async fn rounds(
    redis: &TestRedis,
    store: &SnapshotStore<Connection>,
    pool: &PgPool,
    rounds: usize,
    per_round: usize,
) -> Vec<MemoryRound> {
    let mut conn = redis.conn().await;
    let drain = Drain::new(
        store.consumer("sink", "memory").expect("consumer"),
        SnapshotWriter::new(pool.clone()),
        DrainConfig::default(),
    );
    let mut out = Vec::new();
    for round in 0..rounds {
        let start = super::SNAPSHOTS + round * per_round;
        super::fill_range(store, start..start + per_round, 100 + round as i64).await;
        drain.until_empty(Instant::now() + Duration::from_secs(600)).await.expect("drain");
        let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.expect("INFO");
        let used = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory");
        let mut streams = 0;
        for shard in 0..super::SHARDS {
            let key = store.consumer("sink", "memory").expect("consumer").stream_key(shard).expect("key").to_owned();
            let bytes: Option<u64> =
                redis::cmd("MEMORY").arg("USAGE").arg(&key).query_async(&mut conn).await.expect("MEMORY USAGE");
            streams += bytes.unwrap_or(0);
        }
        let keys = redis.keys().await;
        let seen: Vec<&String> = keys.iter().filter(|k| k.contains(":seen:")).collect();
        // MEMORY USAGE of a sample: the keys are all alike.
        let sample = seen.len().min(1000);
        let mut sampled = 0;
        for key in seen.iter().take(sample) {
            let bytes: Option<u64> =
                redis::cmd("MEMORY").arg("USAGE").arg(key.as_str()).query_async(&mut conn).await.expect("MEMORY USAGE");
            sampled += bytes.unwrap_or(0);
        }
        let seen_keys = if sample == 0 { 0 } else { sampled * seen.len() as u64 / sample as u64 };
        out.push(MemoryRound { used, streams, seen_keys, seen_count: seen.len() });
    }
    out
}
