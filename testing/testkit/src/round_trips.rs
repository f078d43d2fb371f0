//! A Redis connection that counts its requests and its round trips: a
//! command alone is one request, a pipeline (or `MULTI`/`EXEC` sent as one)
//! is one. What a webhook costs in ElastiCache requests is its requests;
//! what it costs in latency is the round trips its caller waits for one
//! after another. Requests sent side by side over the one multiplexed
//! connection travel together and are one wait: [`waits`] counts a wait
//! each time a request starts while none of this connection's (or its
//! clones') is in flight, which, with one caller at a time, is the number
//! of round trips that caller waited for.
//!
//! [`waits`]: CountingConnection::waits

use redis::RedisFuture;
use redis::aio::ConnectionLike;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `inner` with every request counted (the counts shared by its clones).
#[derive(Debug, Clone)]
pub struct CountingConnection<C> {
    pub inner: C,
    pub trips: Arc<AtomicU64>,
    in_flight: Arc<AtomicU64>,
    waits: Arc<AtomicU64>,
}

impl<C> CountingConnection<C> {
    pub fn new(inner: C) -> Self {
        Self { inner, trips: Arc::default(), in_flight: Arc::default(), waits: Arc::default() }
    }

    /// Requests so far.
    pub fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    /// Round trips waited for so far: requests that found none in flight.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Counts a request starting; the guard counts it ending, dropped
    /// (answered or abandoned) with the request's future.
    fn start(&self) -> InFlight {
        self.trips.fetch_add(1, Ordering::Relaxed);
        if self.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
        InFlight(self.in_flight.clone())
    }
}

struct InFlight(Arc<AtomicU64>);

/// `request`, holding `guard` until it is answered or dropped.
fn counted<'a, T: Send + 'a>(guard: InFlight, request: RedisFuture<'a, T>) -> RedisFuture<'a, T> {
    Box::pin(async move {
        let answer = request.await;
        drop(guard);
        answer
    })
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

sluice_redis::forward_requests! {
    impl[C: ConnectionLike + Send] CountingConnection<C>, |this| {
        command(cmd) => {
            let guard = this.start();
            counted(guard, this.inner.req_packed_command(cmd))
        },
        pipeline(pipeline, offset, count) => {
            let guard = this.start();
            counted(guard, this.inner.req_packed_commands(pipeline, offset, count))
        },
        db => this.inner.get_db(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TestRedis;

    #[tokio::test]
    async fn a_command_and_a_pipeline_are_one_request_each() {
        let redis = TestRedis::new("round_trips");
        let mut conn = CountingConnection::new(redis.conn().await);
        let key = redis.keyspace().prefix().to_owned() + "k";
        let _: () = redis::cmd("SET").arg(&key).arg(1).query_async(&mut conn).await.unwrap();
        let _: (i64, i64) = redis::pipe().incr(&key, 1).incr(&key, 1).query_async(&mut conn).await.unwrap();
        assert_eq!((conn.trips(), conn.waits()), (2, 2));
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
    }

    #[tokio::test]
    async fn requests_sent_side_by_side_are_one_wait() {
        let redis = TestRedis::new("round_trips_waits");
        let conn = CountingConnection::new(redis.conn().await);
        let key = |n: u32| format!("{}k{n}", redis.keyspace().prefix());
        let set = |n: u32| {
            let mut conn = conn.clone();
            let key = key(n);
            async move { redis::cmd("SET").arg(key).arg(n).query_async::<()>(&mut conn).await.unwrap() }
        };
        tokio::join!(set(1), set(2), set(3));
        set(4).await;
        assert_eq!((conn.trips(), conn.waits()), (4, 2));
        let _: () = redis::cmd("DEL")
            .arg(key(1))
            .arg(key(2))
            .arg(key(3))
            .arg(key(4))
            .query_async(&mut conn.clone())
            .await
            .unwrap();
    }
}
