//! Sliding-window log limiter: exactly `max` calls in any rolling `window`,
//! several limits checked together atomically (for Google Sheets: 60 per
//! 60 s per credential AND 300 per 60 s per project), with an optional
//! minimum spacing between calls.
//!
//! Each limit's log is a Redis LIST of the µs timestamps of the latest `max`
//! admitted calls (`{prefix}{tag}:win:<name>`), oldest first; the script is
//! `lua/sliding_window.lua`. A call fits when the log's `(max - cost + 1)`-th
//! newest entry is absent or has left the window, so a check reads two list
//! entries whatever the limit, and a denial's wait is exact: when that entry
//! leaves the window. Unlike a sorted-set log, denied calls are never
//! recorded, and equal timestamps are separate entries, so calls in the same
//! microsecond all count. A list entry costs 11–14 bytes; a sorted-set member
//! costs 23 bytes while the set is small and over 130 once it outgrows its
//! compact encoding (`bench/primitives.md`).
//!
//! All limits of one check must share a hash tag: pick the widest scope (the
//! Google project) as the tag and name each limit inside it.

use crate::admission::{Admission, from_reply, micros};
use crate::deny_cache::DenyCache;
use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// One limit: at most `max` calls in any rolling `window`, and at least
/// `min_spacing` between two admitted calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub name: String,
    pub max: u32,
    pub window: Duration,
    pub min_spacing: Duration,
}

impl Limit {
    pub fn new(name: impl Into<String>, max: u32, window: Duration) -> Self {
        Self { name: name.into(), max, window, min_spacing: Duration::ZERO }
    }

    pub fn with_min_spacing(mut self, spacing: Duration) -> Self {
        self.min_spacing = spacing;
        self
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::Config(format!("limit `{}`: {why}", self.name)));
        if self.max == 0 {
            return bad("max must be at least 1".into());
        }
        if self.window < Duration::from_millis(1) {
            return bad(format!("window {:?} is shorter than 1 ms", self.window));
        }
        if self.min_spacing > self.window {
            return bad(format!("min spacing {:?} is longer than the window {:?}", self.min_spacing, self.window));
        }
        Ok(())
    }
}

/// A validated set of limits under one tag, with its keys built once.
#[derive(Debug, Clone)]
pub struct LimitSet {
    keys: Vec<String>,
    /// Per limit: max, window µs, spacing µs.
    args: Vec<u64>,
    smallest_max: u32,
    /// Identifies the set in the deny cache.
    cache_key: String,
}

impl LimitSet {
    pub fn keys(&self) -> &[String] {
        &self.keys
    }
}

/// The limiter: a connection, a keyspace and a deny cache.
#[derive(Debug, Clone)]
pub struct SlidingWindowLimiter<C> {
    conn: C,
    keyspace: Keyspace,
    deny: Arc<DenyCache>,
}

impl<C: ConnectionLike + Clone + Send> SlidingWindowLimiter<C> {
    pub fn new(conn: C, keyspace: Keyspace, deny: Arc<DenyCache>) -> Self {
        Self { conn, keyspace, deny }
    }

    /// Validates `limits` and builds their keys under `tag`.
    pub fn limits(&self, tag: &Tag, limits: &[Limit]) -> Result<LimitSet, Error> {
        if limits.is_empty() {
            return Err(Error::Config("a limit set needs at least one limit".into()));
        }
        let mut names = HashSet::new();
        for limit in limits {
            limit.check()?;
            if !names.insert(limit.name.as_str()) {
                return Err(Error::Config(format!("limit `{}` is listed twice", limit.name)));
            }
        }
        let keys: Vec<String> = limits.iter().map(|l| self.keyspace.key(tag, "win", &l.name)).collect();
        let args = limits.iter().flat_map(|l| [u64::from(l.max), micros(l.window), micros(l.min_spacing)]).collect();
        let smallest_max = limits.iter().map(|l| l.max).min().unwrap_or(0);
        let cache_key = keys.join("\n");
        Ok(LimitSet { keys, args, smallest_max, cache_key })
    }

    /// Admits and records `cost` calls under every limit of `set`, or says
    /// exactly how long until they would all fit.
    pub async fn acquire(&self, set: &LimitSet, cost: u32) -> Result<Admission, Error> {
        if cost == 0 || cost > set.smallest_max {
            return Err(Error::Config(format!(
                "cost {cost} can never be admitted: it must be between 1 and the smallest max ({})",
                set.smallest_max
            )));
        }
        if let Some(wait) = self.deny.blocked_for(&set.cache_key, cost) {
            return Ok(Admission::Denied { wait, server_time_us: None });
        }
        let reply = scripts::SLIDING_WINDOW
            .key(&set.keys)
            .arg(cost)
            .arg(&set.args)
            .invoke_async(&mut self.conn.clone())
            .await?;
        from_reply("sliding_window.lua", reply, &self.deny, &set.cache_key, cost)
    }

    /// How much of each limit of `set` is spent now, in the set's order;
    /// reads only (`lua/window_usage.lua`), for `sluice status`.
    pub async fn usage(&self, set: &LimitSet) -> Result<Vec<WindowUsage>, Error> {
        let windows: Vec<u64> = set.args.chunks(3).map(|a| a[1]).collect();
        let reply: Vec<i64> =
            scripts::WINDOW_USAGE.key(&set.keys).arg(windows).invoke_async(&mut self.conn.clone()).await?;
        let maxes = set.args.chunks(3).map(|a| a[0]);
        Ok(reply
            .get(1..)
            .unwrap_or_default()
            .chunks(2)
            .zip(maxes)
            .map(|(pair, max)| WindowUsage {
                used: u64::try_from(pair[0]).unwrap_or(0),
                max,
                next_free: Duration::from_micros(u64::try_from(pair[1]).unwrap_or(0)),
            })
            .collect())
    }
}

/// One limit's state: calls inside its window now, its max, and when the
/// oldest of them leaves the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowUsage {
    pub used: u64,
    pub max: u64,
    pub next_free: Duration,
}
