//! Reading the snapshot streams as a consumer group: what a drain worker
//! does with the streams [`SnapshotStore`](crate::SnapshotStore) appends to.
//!
//! Each drain worker is one consumer of one group (`sink` by default). It
//! reads its own pending entries first (a batch it took but did not
//! acknowledge, because the database refused it), then claims entries that
//! another consumer has held for longer than an idle time (that consumer
//! died), then reads new ones. It acknowledges an entry only after the
//! database committed it.
//!
//! Trimming: an entry leaves the stream only when every group on the stream
//! has acknowledged it: below the smallest id any group still has pending,
//! and not beyond what each group has been delivered. So a second group (an
//! analytics reader, say) keeps what it has not read yet.
//!
//! Every command names one stream key: each call stays in its shard's slot.

use crate::error::Error;
use crate::snapshot_store::StoredEntry;
use crate::stream_reply::{ClaimedEntries, ReadEntries};
use redis::aio::ConnectionLike;
use redis::streams::{StreamInfoGroupsReply, StreamPendingReply};
use std::time::Duration;

/// A group's oldest pending id, and its pending count per consumer.
type PendingSummary = (Option<(u64, u64)>, Vec<(String, u64)>);

/// The group drain workers read in unless configured otherwise.
pub const DEFAULT_GROUP: &str = "sink";

/// A consumer of the snapshot streams, named `consumer` in `group`.
#[derive(Debug, Clone)]
pub struct SnapshotConsumer<C> {
    conn: C,
    stream_keys: Vec<String>,
    group: String,
    consumer: String,
}

/// How far a group is behind on one shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardLag {
    /// Entries delivered to a consumer and not yet acknowledged.
    pub pending: u64,
    /// Entries not yet delivered to any consumer of the group (`None` when
    /// Redis cannot tell, after entries were deleted out of order).
    pub undelivered: Option<u64>,
    /// The oldest unacknowledged entry's id, delivered or not.
    pub oldest_unacknowledged: Option<String>,
    /// Pending entries per consumer.
    pub consumers: Vec<(String, u64)>,
}

impl ShardLag {
    /// When the oldest unacknowledged entry was appended (Unix
    /// milliseconds, the first part of its id, Redis's clock).
    pub fn oldest_unacknowledged_ms(&self) -> Option<u64> {
        self.oldest_unacknowledged.as_deref().and_then(parse_id).map(|(ms, _)| ms)
    }
}

impl<C: ConnectionLike + Clone + Send> SnapshotConsumer<C> {
    /// A consumer of the streams named by `stream_keys` (shard `n` is
    /// `stream_keys[n]`; see [`SnapshotStore::stream_key`](crate::SnapshotStore::stream_key)).
    pub fn new(conn: C, stream_keys: Vec<String>, group: &str, consumer: &str) -> Result<Self, Error> {
        if group.is_empty() || consumer.is_empty() {
            return Err(Error::Config("a snapshot consumer needs a group and a consumer name".into()));
        }
        Ok(Self { conn, stream_keys, group: group.to_owned(), consumer: consumer.to_owned() })
    }

    pub fn shards(&self) -> u32 {
        self.stream_keys.len() as u32
    }

    /// The stream key of `shard`.
    pub fn stream_key(&self, shard: u32) -> Result<&str, Error> {
        self.stream_keys
            .get(shard as usize)
            .map(String::as_str)
            .ok_or_else(|| Error::Config(format!("no snapshot shard {shard} (there are {})", self.stream_keys.len())))
    }

    /// Creates the group on the shard's stream (and the stream) if missing,
    /// starting from the stream's first entry so nothing stored before the
    /// first drain is skipped.
    pub async fn ensure_group(&self, shard: u32) -> Result<(), Error> {
        let result: Result<(), redis::RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.stream_key(shard)?)
            .arg(&self.group)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.conn.clone())
            .await;
        match result {
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            other => Ok(other?),
        }
    }

    /// Up to `count` entries this consumer was delivered and has not
    /// acknowledged: a batch the database refused last time.
    pub async fn own_pending(&self, shard: u32, count: usize) -> Result<Vec<StoredEntry>, Error> {
        self.read_group(shard, count, "0").await
    }

    /// Up to `count` entries never delivered to this group.
    pub async fn new_entries(&self, shard: u32, count: usize) -> Result<Vec<StoredEntry>, Error> {
        self.read_group(shard, count, ">").await
    }

    /// Takes over up to `count` entries other consumers have held for at
    /// least `min_idle` without acknowledging them.
    pub async fn claim_idle(&self, shard: u32, min_idle: Duration, count: usize) -> Result<Vec<StoredEntry>, Error> {
        let ClaimedEntries(claimed) = redis::cmd("XAUTOCLAIM")
            .arg(self.stream_key(shard)?)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(min_idle.as_millis() as u64)
            .arg("0-0")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(claimed)
    }

    /// Acknowledges `ids` on the shard; returns how many were pending.
    pub async fn ack(&self, shard: u32, ids: &[String]) -> Result<u64, Error> {
        if ids.is_empty() {
            return Ok(0);
        }
        let acked: u64 = redis::cmd("XACK")
            .arg(self.stream_key(shard)?)
            .arg(&self.group)
            .arg(ids)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(acked)
    }

    /// Deletes the shard's entries that every group has acknowledged;
    /// returns how many went. Nothing goes while a group has not been
    /// created on the stream yet is not a concern: entries exist only
    /// after the store step appended them, and groups start at `0`.
    pub async fn trim_acknowledged(&self, shard: u32) -> Result<u64, Error> {
        Ok(self.ack_and_trim(shard, &[]).await?.1)
    }

    /// Acknowledges `ids` on the shard, then trims what every group has
    /// acknowledged ([`Self::trim_acknowledged`]): (how many of the ids
    /// were pending, how many entries went). One script
    /// (`stream_trim_acknowledged.lua`): the drain does both after every
    /// batch.
    pub async fn ack_and_trim(&self, shard: u32, ids: &[String]) -> Result<(u64, u64), Error> {
        let mut script = crate::scripts::STREAM_TRIM_ACKNOWLEDGED.key(self.stream_key(shard)?);
        if !ids.is_empty() {
            script.arg(&self.group).arg(ids);
        }
        Ok(script.invoke_async(&mut self.conn.clone()).await?)
    }

    /// How far this consumer's group is behind on the shard.
    pub async fn lag(&self, shard: u32) -> Result<ShardLag, Error> {
        let key = self.stream_key(shard)?;
        let exists: bool = redis::cmd("EXISTS").arg(key).query_async(&mut self.conn.clone()).await?;
        if !exists {
            return Ok(ShardLag::default());
        }
        let groups: StreamInfoGroupsReply =
            redis::cmd("XINFO").arg("GROUPS").arg(key).query_async(&mut self.conn.clone()).await?;
        let Some(group) = groups.groups.iter().find(|g| g.name == self.group) else {
            // No drain has run yet: everything in the stream is behind.
            let length: u64 = redis::cmd("XLEN").arg(key).query_async(&mut self.conn.clone()).await?;
            let first = self.first_id_after(key, "-").await?;
            return Ok(ShardLag { undelivered: Some(length), oldest_unacknowledged: first, ..ShardLag::default() });
        };
        let (oldest_pending, consumers) = match group.pending {
            0 => (None, Vec::new()),
            _ => {
                let (oldest, consumers) = self.pending_summary(key, &group.name).await?;
                (oldest.map(|(ms, seq)| format!("{ms}-{seq}")), consumers)
            }
        };
        let oldest_unacknowledged = match oldest_pending {
            Some(id) => Some(id),
            None => self.first_id_after(key, &format!("({}", group.last_delivered_id)).await?,
        };
        Ok(ShardLag {
            pending: group.pending as u64,
            undelivered: group.lag.map(|l| l as u64),
            oldest_unacknowledged,
            consumers,
        })
    }

    /// When the oldest entry this consumer's group has not acknowledged,
    /// on any shard, was appended (Unix milliseconds, Redis's clock); `None`
    /// when the group has acknowledged everything.
    pub async fn oldest_unacknowledged_ms(&self) -> Result<Option<u64>, Error> {
        let mut oldest = None;
        for shard in 0..self.shards() {
            let ms = self.lag(shard).await?.oldest_unacknowledged_ms();
            oldest = oldest.into_iter().chain(ms).min();
        }
        Ok(oldest)
    }

    async fn read_group(&self, shard: u32, count: usize, from: &str) -> Result<Vec<StoredEntry>, Error> {
        let ReadEntries(entries) = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(&self.group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(count)
            .arg("STREAMS")
            .arg(self.stream_key(shard)?)
            .arg(from)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(entries)
    }

    /// The group's oldest pending id and its pending count per consumer.
    async fn pending_summary(&self, key: &str, group: &str) -> Result<PendingSummary, Error> {
        let reply: StreamPendingReply =
            redis::cmd("XPENDING").arg(key).arg(group).query_async(&mut self.conn.clone()).await?;
        Ok(match reply {
            StreamPendingReply::Data(data) => {
                (parse_id(&data.start_id), data.consumers.into_iter().map(|c| (c.name, c.pending as u64)).collect())
            }
            _ => (None, Vec::new()),
        })
    }

    async fn first_id_after(&self, key: &str, start: &str) -> Result<Option<String>, Error> {
        let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(key)
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(entries.into_iter().next().map(|(id, _)| id))
    }
}

/// `ms-seq` as numbers.
fn parse_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_as_numbers() {
        assert_eq!(parse_id("1700000000000-3"), Some((1_700_000_000_000, 3)));
        assert_eq!(parse_id("0-0"), Some((0, 0)));
        assert_eq!(parse_id("nonsense"), None);
        assert!(parse_id("9-0") < parse_id("10-0"), "numeric, not textual order");
        let lag = ShardLag { oldest_unacknowledged: Some("1700000000000-3".into()), ..ShardLag::default() };
        assert_eq!(lag.oldest_unacknowledged_ms(), Some(1_700_000_000_000));
        assert_eq!(ShardLag::default().oldest_unacknowledged_ms(), None);
    }
}
