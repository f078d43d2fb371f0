//! The group ledger: which FIFO groups have events waiting in the queue,
//! how many, and since when. SQS tells only a queue's totals; `sluice
//! status` needs the groups that lag (one flooding mall holds the rest of
//! its queue back, and the totals cannot say which).
//!
//! Ingest enters an event once the queue took it (entered before, a request
//! killed before the send would leave an event waiting for ever); the
//! pipeline's last step of an item (store, buffer) marks it done. A pipeline
//! faster than the enter marks it done first, and `done` below keeps the
//! late enter from counting it.
//!
//! The ledger is sharded: a group's keys live under the hash tag
//! `{groups:<n>}`, `n` = FNV-1a of the group key mod [`SHARDS`]. With one
//! tag for every group, every webhook would write the same cluster slot,
//! one hot shard on ElastiCache; with one tag per group, listing the groups
//! would mean a SCAN of the whole keyspace. Sharding keeps each script call
//! in one slot (a group and its shard's indexes), spreads writes over
//! `SHARDS` tags, and lets readers list every group with one query per shard,
//! sent at once.
//!
//! Keys, `n` = the group's shard (one script touches several of one shard):
//!
//! ```text
//! {prefix}{groups:n}:pending:<group>  ZSET  event id -> µs of its send        TTL: retention after the latest change
//! {prefix}{groups:n}:waiting:         ZSET  group -> µs of its oldest send    TTL: retention; a group leaves when it has none
//! {prefix}{groups:n}:seen:            ZSET  group -> µs of latest activity    TTL: retention; idle groups trimmed
//! {prefix}{groups:n}:about:           HASH  group -> what it is (JSON)         TTL: retention; trimmed with seen
//! {prefix}{groups:n}:done:            ZSET  event id -> µs of its send        TTL: the dedup window; trimmed by score
//! ```
//!
//! `done` exists because SQS FIFO drops a resend of a deduplication id
//! within five minutes of its first send: a redelivered webhook entered
//! then would stay pending for ever. An event is also dropped from
//! `pending` after the retention (14 days, SQS's longest), since no queue
//! can still hold it. Scripts: `lua/group_enter.lua`, `lua/group_leave.lua`.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use futures::future::try_join_all;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// SQS's longest message retention: nothing older is still in a queue.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(14 * 24 * 3600);
/// SQS FIFO's deduplication interval.
pub const DEDUP_WINDOW: Duration = Duration::from_secs(5 * 60);
/// How many hash tags the ledger spreads its groups over. Every process
/// (ingest enters, the pipeline marks done, `sluice status` reads) must use
/// the same count, so it is a constant: changing it strands the groups
/// already entered under the old shards until their retention ends.
pub const SHARDS: u32 = 16;

/// A group with events waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaggingGroup {
    pub group: String,
    /// What the group is (JSON, see `sluice_domain::GroupAbout`).
    pub about: Option<String>,
    pub pending: u64,
    /// How long its oldest pending event has waited since its send.
    pub oldest_age: Duration,
}

/// A group that had events within the retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenGroup {
    pub group: String,
    pub about: Option<String>,
    /// How long ago its latest event was sent or done.
    pub idle: Duration,
}

#[derive(Debug, Clone)]
pub struct GroupLedger<C> {
    conn: C,
    keyspace: Keyspace,
    retention: Duration,
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

impl<C: ConnectionLike + Clone + Send> GroupLedger<C> {
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace, retention: DEFAULT_RETENTION }
    }

    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The shard of `group` ([`stable_hash`](crate::keyspace::stable_hash):
    /// ingest and the pipeline are built and deployed separately and must
    /// agree on where a group lives).
    pub fn shard_of(group: &str) -> u32 {
        (crate::keyspace::stable_hash(group) % u64::from(SHARDS)) as u32
    }

    fn tag(shard: u32) -> Tag {
        Tag::new(&format!("groups:{shard}"))
    }

    /// The key of `kind` named `name` in `shard`.
    fn key(&self, shard: u32, kind: &str, name: &str) -> String {
        self.keyspace.key(&Self::tag(shard), kind, name)
    }

    /// The key of `kind` named `name` in `group`'s shard.
    fn group_key(&self, group: &str, kind: &str, name: &str) -> String {
        self.key(Self::shard_of(group), kind, name)
    }

    /// Counts `event_id` as pending in `group` (`about`: what the group is,
    /// JSON). Returns false when the queue will drop the send as a
    /// duplicate of an event already done.
    pub async fn enter(&self, group: &str, about: &str, event_id: &str) -> Result<bool, Error> {
        let pending: i64 = scripts::GROUP_ENTER
            .key(self.group_key(group, "pending", group))
            .key(self.group_key(group, "waiting", ""))
            .key(self.group_key(group, "seen", ""))
            .key(self.group_key(group, "about", ""))
            .key(self.group_key(group, "done", ""))
            .arg(group)
            .arg(about)
            .arg(event_id)
            .arg(us(self.retention))
            .arg(us(DEDUP_WINDOW))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(pending >= 0)
    }

    /// The event left the queue, processed. Returns whether it was pending.
    pub async fn done(&self, group: &str, event_id: &str) -> Result<bool, Error> {
        let was: i64 = scripts::GROUP_LEAVE
            .key(self.group_key(group, "pending", group))
            .key(self.group_key(group, "waiting", ""))
            .key(self.group_key(group, "seen", ""))
            .key(self.group_key(group, "done", ""))
            .arg(group)
            .arg(event_id)
            .arg(us(self.retention))
            .arg(us(DEDUP_WINDOW))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(was == 1)
    }

    /// The `n` groups whose oldest pending event has waited longest, and
    /// how many groups have events waiting in all, over every shard.
    pub async fn lagging(&self, n: usize) -> Result<(Vec<LaggingGroup>, u64), Error> {
        let mut conn = self.conn.clone();
        let now = server_us(&mut conn).await?;
        let stop = isize::try_from(n).unwrap_or(isize::MAX) - 1;
        // Each shard's own top n and count, all shards at once: the top n
        // overall are among them. One query per shard, not one pipeline:
        // on a cluster the shards' tags are different slots, and a
        // pipeline must stay in one.
        let shards: Vec<(Vec<(String, f64)>, u64)> = try_join_all((0..SHARDS).map(|shard| {
            let mut conn = conn.clone();
            let key = self.key(shard, "waiting", "");
            async move { redis::pipe().zrange_withscores(&key, 0, stop).zcard(&key).query_async(&mut conn).await }
        }))
        .await?;
        let total = shards.iter().map(|(_, count)| count).sum();
        let mut head: Vec<(String, f64)> = shards.into_iter().flat_map(|(head, _)| head).collect();
        // Oldest first; ties by name, as one sorted set orders them.
        head.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        head.truncate(n);
        // Every group's count and description, all groups at once (each
        // group's two keys share its shard's slot).
        let details: Vec<(u64, Option<String>)> = try_join_all(head.iter().map(|(group, _)| {
            let mut conn = conn.clone();
            let mut pipe = redis::pipe();
            pipe.zcard(self.group_key(group, "pending", group)).hget(self.group_key(group, "about", ""), group);
            async move { pipe.query_async(&mut conn).await }
        }))
        .await?;
        let out = head
            .into_iter()
            .zip(details)
            .map(|((group, since), (pending, about))| LaggingGroup {
                oldest_age: age(now, since),
                group,
                about,
                pending,
            })
            .collect();
        Ok((out, total))
    }

    /// The `n` groups active most recently, newest first, over every shard.
    pub async fn seen(&self, n: usize) -> Result<Vec<SeenGroup>, Error> {
        let mut conn = self.conn.clone();
        let now = server_us(&mut conn).await?;
        let stop = isize::try_from(n).unwrap_or(isize::MAX) - 1;
        let shards: Vec<Vec<(String, f64)>> = try_join_all((0..SHARDS).map(|shard| {
            let mut conn = conn.clone();
            let key = self.key(shard, "seen", "");
            async move {
                redis::cmd("ZRANGE").arg(key).arg(0).arg(stop).arg("REV").arg("WITHSCORES").query_async(&mut conn).await
            }
        }))
        .await?;
        let mut latest: Vec<(String, f64)> = shards.into_iter().flatten().collect();
        // Newest first; ties by name descending, as ZRANGE REV orders them.
        latest.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        latest.truncate(n);
        let about: Vec<Option<String>> = try_join_all(latest.iter().map(|(group, _)| {
            let mut conn = conn.clone();
            let key = self.group_key(group, "about", "");
            async move { redis::cmd("HGET").arg(key).arg(group).query_async(&mut conn).await }
        }))
        .await?;
        Ok(latest
            .iter()
            .zip(about)
            .map(|((group, at), about)| SeenGroup { group: group.clone(), about, idle: age(now, *at) })
            .collect())
    }
}

/// Redis's clock in µs: ages are measured on the clock the scripts stamp with.
async fn server_us<C: ConnectionLike + Send>(conn: &mut C) -> Result<u64, Error> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1_000_000 + micros)
}

fn age(now_us: u64, since_us: f64) -> Duration {
    Duration::from_micros(now_us.saturating_sub(since_us as u64))
}
