//! What the drain tests share: a Redis with the snapshot streams, a
//! database with the schema, and a few readers of both.

use sluice_redis::Connection;
use sluice_redis::SnapshotEntry;
use sluice_redis::SnapshotStore;
use sluice_sink::{Drain, DrainConfig, SnapshotWriter, migrate};
use sluice_testkit::TestRedis;
use sqlx::PgPool;
use std::time::{Duration, Instant};

pub(crate) const SHARDS: u32 = 2;
/// Every test finishes well within this.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

pub(crate) struct Rig {
    pub redis: TestRedis,
    pub store: SnapshotStore<Connection>,
    pub pool: PgPool,
}

impl Rig {
    pub(crate) async fn new(test: &str, pool: PgPool) -> Self {
        let redis = TestRedis::new(test);
        let store = SnapshotStore::new(redis.conn().await, redis.keyspace(), SHARDS).unwrap();
        migrate(&pool).await.expect("migrate");
        Self { redis, store, pool }
    }

    pub(crate) fn drain(&self, consumer: &str, config: DrainConfig) -> Drain<Connection> {
        let consumer = self.store.consumer("sink", consumer).unwrap();
        Drain::new(consumer, SnapshotWriter::new(self.pool.clone()), config)
    }

    /// Appends a found snapshot of product `id` of `mall` fetched at
    /// `version`, as the store step does (one field).
    pub(crate) async fn append(&self, mall: &str, id: &str, version: i64, events: &[&str]) {
        let key = format!("{mall}/{id}/{version}/{}", events.join(","));
        let body = serde_json::value::to_raw_value(&serde_json::json!({"product_no": id, "v": version})).unwrap();
        let event_ids = serde_json::value::to_raw_value(events).unwrap();
        let entry = SnapshotEntry {
            mall_id: mall.into(),
            kind: "product".into(),
            id: id.into(),
            status: "found".into(),
            updated_date: None,
            version: None,
            event_ids: &event_ids,
            fetched_at_ms: version as u64,
            body: &body,
        };
        self.store.append(mall, &key, &[entry.to_field()]).await.unwrap();
    }

    /// The same snapshot in the nine fields earlier releases appended.
    pub(crate) async fn append_nine_fields(&self, mall: &str, id: &str, version: i64, events: &[&str]) {
        let key = format!("{mall}/{id}/{version}/{}", events.join(","));
        let fields = [
            ("mall_id", mall.to_owned()),
            ("kind", "product".to_owned()),
            ("id", id.to_owned()),
            ("status", "found".to_owned()),
            ("updated_date", String::new()),
            ("version", String::new()),
            ("event_ids", serde_json::json!(events).to_string()),
            ("fetched_at_ms", version.to_string()),
            ("body", serde_json::json!({"product_no": id, "v": version}).to_string()),
        ];
        self.store.append(mall, &key, &fields).await.unwrap();
    }

    pub(crate) async fn row_version(&self, mall: &str, id: &str) -> Option<i64> {
        sqlx::query_scalar("SELECT version FROM sluice.snapshots WHERE mall_id = $1 AND resource_id = $2")
            .bind(mall)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .unwrap()
    }

    pub(crate) async fn rows(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM sluice.snapshots").fetch_one(&self.pool).await.unwrap()
    }

    pub(crate) async fn stream_lengths(&self) -> u64 {
        let mut conn = self.redis.conn().await;
        let mut total = 0;
        for shard in 0..SHARDS {
            let len: u64 = redis::cmd("XLEN").arg(self.store.stream_key(shard)).query_async(&mut conn).await.unwrap();
            total += len;
        }
        total
    }
}

pub(crate) fn deadline() -> Instant {
    Instant::now() + LIMIT
}
