//! A Redis connection that counts its round trips: a command alone is one,
//! a pipeline (or `MULTI`/`EXEC` sent as one) is one. What a webhook costs
//! in Redis latency and in ElastiCache requests is its round trips, not its
//! commands, so the benchmarks count these at the client.

use redis::aio::ConnectionLike;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `inner` with every request counted in `trips` (shared by its clones).
#[derive(Debug, Clone)]
pub struct CountingConnection<C> {
    pub inner: C,
    pub trips: Arc<AtomicU64>,
}

impl<C> CountingConnection<C> {
    pub fn new(inner: C) -> Self {
        Self { inner, trips: Arc::default() }
    }

    /// Round trips so far.
    pub fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }
}

sluice_redis::forward_requests! {
    impl[C: ConnectionLike + Send] CountingConnection<C>, |this| {
        command(cmd) => {
            this.trips.fetch_add(1, Ordering::Relaxed);
            this.inner.req_packed_command(cmd)
        },
        pipeline(pipeline, offset, count) => {
            this.trips.fetch_add(1, Ordering::Relaxed);
            this.inner.req_packed_commands(pipeline, offset, count)
        },
        db => this.inner.get_db(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TestRedis;

    #[tokio::test]
    async fn a_command_and_a_pipeline_are_one_round_trip_each() {
        let redis = TestRedis::new("round_trips");
        let mut conn = CountingConnection::new(redis.conn().await);
        let key = redis.keyspace().prefix().to_owned() + "k";
        let _: () = redis::cmd("SET").arg(&key).arg(1).query_async(&mut conn).await.unwrap();
        let _: (i64, i64) = redis::pipe().incr(&key, 1).incr(&key, 1).query_async(&mut conn).await.unwrap();
        assert_eq!(conn.trips(), 2);
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
    }
}
