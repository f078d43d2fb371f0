//! Leaky bucket for upstreams that meter calls that way (Cafe24: 40 calls,
//! leaking 2 per second, per mall), as GCRA: one key per bucket holding its
//! theoretical arrival time (TAT), `{prefix}{tag}:bkt:<name>`, which expires
//! exactly when the bucket is empty. Scripts: `lua/gcra_acquire.lua` and
//! `lua/gcra_raise.lua`.
//!
//! The upstream's own view is folded back in with [`Buckets::observe`]
//! (`X-Api-Call-Limit: used/capacity`) and [`Buckets::penalize`] (a 429, or
//! `X-Cafe24-Call-Remain`); both only ever raise the level, so a late or
//! out-of-order response cannot loosen the bucket.

use crate::admission::{Admission, from_reply, micros, unsigned};
use crate::deny_cache::DenyCache;
use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::sync::Arc;
use std::time::Duration;

/// A bucket's size and leak rate, and the margin kept against jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketSpec {
    pub capacity: u32,
    pub leak_per_sec: f64,
    /// Room left unused, as time: a call admitted here reaches the upstream
    /// a little later (the HTTP request, a starved CPU, a Lambda's cold
    /// connection), and calls admitted close together can arrive closer
    /// still. A bucket filled to the brim by our count then refuses the
    /// later one. A margin of `m` covers any delay up to `m`: the upstream's
    /// level never exceeds ours plus `leak × m` units. At Cafe24's 2/s the
    /// default 250 ms keeps half a unit back (a burst of 39, not 40); the
    /// steady rate is unchanged. Capped at `capacity - 1` units.
    pub margin: Duration,
}

/// The default [`BucketSpec::margin`], as the Sheets quota's margin.
pub const DEFAULT_BUCKET_MARGIN: Duration = Duration::from_millis(250);

impl Default for BucketSpec {
    /// Cafe24's documented Admin API bucket: 40 calls, leaking 2 per second.
    fn default() -> Self {
        Self::new(40, 2.0)
    }
}

impl BucketSpec {
    /// `capacity` units leaking `leak_per_sec`, with the default margin.
    pub fn new(capacity: u32, leak_per_sec: f64) -> Self {
        Self { capacity, leak_per_sec, margin: DEFAULT_BUCKET_MARGIN }
    }

    /// The same bucket with another margin (zero: fill to the brim).
    pub fn with_margin(self, margin: Duration) -> Self {
        Self { margin, ..self }
    }

    /// µs one unit takes to leak, rounded up: the bucket leaks at most as
    /// fast as the upstream's.
    fn interval_us(&self) -> Result<u64, Error> {
        let rate = self.leak_per_sec;
        if !(rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0) {
            return Err(Error::Config(format!("leak rate {rate}/s must be above 0 and at most 1,000,000/s")));
        }
        if self.capacity == 0 {
            return Err(Error::Config("bucket capacity must be at least 1".into()));
        }
        Ok((1_000_000.0 / rate).ceil() as u64)
    }
}

/// One bucket: its key and its spec, validated once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    key: String,
    interval_us: u64,
    capacity: u32,
    margin_us: u64,
}

impl Bucket {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// How long one unit takes to leak.
    pub fn interval(&self) -> Duration {
        Duration::from_micros(self.interval_us)
    }
}

/// The bucket's state at Redis's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketLevel {
    pub server_time_us: u64,
    /// How long until the bucket is empty.
    pub backlog: Duration,
    /// Units in the bucket (backlog / interval).
    pub units: f64,
}

#[derive(Debug, Clone)]
pub struct Buckets<C> {
    conn: C,
    keyspace: Keyspace,
    deny: Arc<DenyCache>,
}

impl<C: ConnectionLike + Clone + Send> Buckets<C> {
    pub fn new(conn: C, keyspace: Keyspace, deny: Arc<DenyCache>) -> Self {
        Self { conn, keyspace, deny }
    }

    pub fn bucket(&self, tag: &Tag, name: &str, spec: BucketSpec) -> Result<Bucket, Error> {
        let interval_us = spec.interval_us()?;
        // At most all but one unit: one call always fits in an empty bucket
        // (a bucket of one has no room for a margin at all).
        let margin_us = micros(spec.margin).min((u64::from(spec.capacity) - 1) * interval_us);
        Ok(Bucket { key: self.keyspace.key(tag, "bkt", name), interval_us, capacity: spec.capacity, margin_us })
    }

    /// Takes `n` units, or says exactly how long until they fit.
    pub async fn acquire(&self, bucket: &Bucket, n: u32) -> Result<Admission, Error> {
        let room_us = u64::from(bucket.capacity) * bucket.interval_us - bucket.margin_us;
        if n == 0 || u64::from(n) * bucket.interval_us > room_us {
            return Err(Error::Config(format!(
                "{n} units can never fit: take between 1 and the capacity ({}) less the margin ({} µs)",
                bucket.capacity, bucket.margin_us
            )));
        }
        if let Some(wait) = self.deny.blocked_for(&bucket.key, n) {
            return Ok(Admission::Denied { wait, server_time_us: None });
        }
        let reply = scripts::GCRA_ACQUIRE
            .key(&bucket.key)
            .arg(bucket.interval_us)
            .arg(bucket.capacity)
            .arg(n)
            .arg(bucket.margin_us)
            .invoke_async(&mut self.conn.clone())
            .await?;
        from_reply("gcra_acquire.lua", reply, &self.deny, &bucket.key, n)
    }

    /// Folds the upstream's report `used/capacity` in: the upstream has
    /// `capacity - used` units of room, so ours must not show more. Never
    /// lowers the level.
    pub async fn observe(&self, bucket: &Bucket, used: u32, capacity: u32) -> Result<BucketLevel, Error> {
        let floor_units = i64::from(bucket.capacity) - (i64::from(capacity) - i64::from(used));
        let offset = u64::try_from(floor_units).unwrap_or(0) * bucket.interval_us;
        self.raise(bucket, offset).await
    }

    /// Holds every caller back for `duration`: until then the bucket counts
    /// as full, and when it ends exactly one unit fits.
    pub async fn penalize(&self, bucket: &Bucket, duration: Duration) -> Result<BucketLevel, Error> {
        let offset = micros(duration) + u64::from(bucket.capacity - 1) * bucket.interval_us;
        let level = self.raise(bucket, offset).await?;
        let wait_for_one = level.backlog.saturating_sub(bucket.interval() * (bucket.capacity - 1));
        self.deny.block(&bucket.key, 1, wait_for_one);
        Ok(level)
    }

    /// The bucket's level now, without changing it.
    pub async fn level(&self, bucket: &Bucket) -> Result<BucketLevel, Error> {
        self.raise(bucket, 0).await
    }

    async fn raise(&self, bucket: &Bucket, offset_us: u64) -> Result<BucketLevel, Error> {
        let (now, backlog): (i64, i64) =
            scripts::GCRA_RAISE.key(&bucket.key).arg(offset_us).invoke_async(&mut self.conn.clone()).await?;
        let backlog = unsigned("gcra_raise.lua", backlog)?;
        Ok(BucketLevel {
            server_time_us: unsigned("gcra_raise.lua", now)?,
            backlog: Duration::from_micros(backlog),
            units: backlog as f64 / bucket.interval_us as f64,
        })
    }
}
