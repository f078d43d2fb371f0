//! Where fetched snapshots go: a Redis stream per shard, the mall deciding
//! the shard, appended once per work item however often it is redelivered.
//! The drain worker (`sluice-sink`) reads the streams into PostgreSQL as a
//! consumer group ([`SnapshotConsumer`](crate::SnapshotConsumer)) and trims
//! what every group has acknowledged; shards let several drain at once (one
//! stream for every shop would make its consumer the bottleneck).
//!
//! Keys, with `N` = the shard (0..shards):
//!
//! ```text
//! {prefix}{store:N}:stream        STREAM  snapshots, outcomes    owner: the drain worker trims what every group acknowledged; MAXLEN caps it meanwhile
//! {prefix}{store:N}:seen:<key>    STRING  the entry id           TTL: 24 h (redeliveries come within minutes)
//! {prefix}{store:N}:fetched:<ev>  HASH    a fetched snapshot     TTL: 15 min; written by fetch, its body dropped by store
//! ```
//!
//! `fetched` is how a body goes from the fetch step to the store step:
//! Step Functions limits every state's input and output to 256 KiB, and a
//! product with many variants (or an order with many items) is larger, so
//! the fetch step leaves the snapshot here, in the shard its store will
//! append to, and passes only the key. Its TTL outlives any execution that
//! can read it (an Express execution lasts at most 5 minutes).
//!
//! A stream holds two kinds of entries, both appended once per
//! idempotency key: a snapshot (one field, `snapshot`: the whole snapshot
//! as one JSON object, see [`snapshot_entry`](crate::snapshot_entry)) and an event's outcome
//! ([`OUTCOME_FIELD`], `event_id`, `mall_id`, `detail`: an event the
//! failure step gave up on and the queue moves to its dead-letter queue).
//! Outcomes travel the same streams so the drain records them in the
//! event log in the same transactions, acknowledged after the same
//! commits; they go to the event's mall's shard like its snapshots.
//!
//! Scripts: `lua/snapshot_append.lua`, `lua/snapshot_store.lua`.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use crate::snapshot_consumer::SnapshotConsumer;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// How long an idempotency key is remembered.
pub const SEEN_TTL: Duration = Duration::from_secs(24 * 3600);
/// Approximate cap of each stream while no drain worker trims it.
pub const DEFAULT_MAX_LEN: u64 = 1_000_000;
/// How long a fetched snapshot waits for its store step: three times the
/// longest Express execution.
pub const FETCHED_TTL: Duration = Duration::from_secs(15 * 60);

/// The field that makes an entry an event's outcome, not a snapshot; its
/// value names the outcome (`dead-lettered`; `parked` in entries appended
/// before that word was used).
pub const OUTCOME_FIELD: &str = "outcome";

/// One stored entry: its id and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    pub id: String,
    pub fields: std::collections::HashMap<String, String>,
}

impl StoredEntry {
    /// Whether the entry records an event's outcome rather than a snapshot.
    pub fn is_outcome(&self) -> bool {
        self.fields.contains_key(OUTCOME_FIELD)
    }
}

/// What storing a fetched snapshot did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFetched {
    pub appended: Appended,
    /// The snapshot's `event_ids`, `status` and `version` fields; `None`
    /// for a duplicate whose hash has expired.
    pub event_ids: Option<String>,
    pub status: Option<String>,
    pub version: Option<String>,
}

/// Where an append went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub shard: u32,
    pub entry_id: String,
    /// True when this key was stored before: nothing new was appended.
    pub duplicate: bool,
}

#[derive(Debug, Clone)]
pub struct SnapshotStore<C> {
    conn: C,
    keyspace: Keyspace,
    shards: u32,
    max_len: u64,
}

impl<C: ConnectionLike + Clone + Send> SnapshotStore<C> {
    pub fn new(conn: C, keyspace: Keyspace, shards: u32) -> Result<Self, Error> {
        if shards == 0 {
            return Err(Error::Config("the snapshot store needs at least one shard".into()));
        }
        Ok(Self { conn, keyspace, shards, max_len: DEFAULT_MAX_LEN })
    }

    /// The shard of a mall: stable for a given shard count, in every
    /// process and every build ([`stable_hash`](crate::keyspace::stable_hash)),
    /// so a mall's snapshots stay in one stream across deploys.
    pub fn shard_of(&self, mall_id: &str) -> u32 {
        (crate::keyspace::stable_hash(mall_id) % u64::from(self.shards)) as u32
    }

    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Up to `count` entries of a shard after entry `after` (`"-"` for the
    /// start), oldest first: what a drain worker reads.
    pub async fn read(&self, shard: u32, after: &str, count: usize) -> Result<Vec<StoredEntry>, Error> {
        let start = if after == "-" { "-".to_owned() } else { format!("({after}") };
        let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(self.stream_key(shard))
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(entries.into_iter().map(|(id, fields)| StoredEntry { id, fields: fields.into_iter().collect() }).collect())
    }

    /// A consumer of every shard's stream, named `consumer` in `group`.
    pub fn consumer(&self, group: &str, consumer: &str) -> Result<SnapshotConsumer<C>, Error> {
        let keys = (0..self.shards).map(|shard| self.stream_key(shard)).collect();
        SnapshotConsumer::new(self.conn.clone(), keys, group, consumer)
    }

    /// The stream key of a shard.
    pub fn stream_key(&self, shard: u32) -> String {
        self.keyspace.key(&Self::shard_tag(shard), "stream", "")
    }

    /// Appends `fields` to the mall's shard unless `idempotency_key` was
    /// stored before.
    pub async fn append(
        &self,
        mall_id: &str,
        idempotency_key: &str,
        fields: &[(&str, String)],
    ) -> Result<Appended, Error> {
        let shard = self.shard_of(mall_id);
        let tag = Self::shard_tag(shard);
        let mut invocation = scripts::SNAPSHOT_APPEND.prepare_invoke();
        invocation
            .key(self.stream_key(shard))
            .key(self.keyspace.key(&tag, "seen", idempotency_key))
            .arg(u64::try_from(SEEN_TTL.as_millis()).unwrap_or(u64::MAX))
            .arg(self.max_len);
        for (field, value) in fields {
            invocation.arg(*field).arg(value);
        }
        let (appended, entry_id): (i64, String) = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(Appended { shard, entry_id, duplicate: appended == 0 })
    }

    /// Appends `event_id`'s `outcome` (with its JSON `detail`) to the mall's
    /// shard unless `idempotency_key` was appended before: the drain
    /// records it in the event log.
    pub async fn append_outcome(
        &self,
        mall_id: &str,
        event_id: &str,
        outcome: &str,
        detail: &serde_json::Value,
        idempotency_key: &str,
    ) -> Result<Appended, Error> {
        let fields = [
            (OUTCOME_FIELD, outcome.to_owned()),
            ("event_id", event_id.to_owned()),
            ("mall_id", mall_id.to_owned()),
            ("detail", detail.to_string()),
        ];
        self.append(mall_id, idempotency_key, &fields).await
    }

    /// The key a fetched snapshot of `mall_id` for `event_id` waits under:
    /// in the mall's shard, so the store's script can move it to the
    /// stream in one call.
    pub fn fetched_key(&self, mall_id: &str, event_id: &str) -> String {
        self.keyspace.key(&Self::shard_tag(self.shard_of(mall_id)), "fetched", event_id)
    }

    /// Leaves a fetched snapshot for the store step (replacing an earlier
    /// fetch of the same event) and returns its key.
    pub async fn put_fetched(&self, mall_id: &str, event_id: &str, fields: &[(&str, String)]) -> Result<String, Error> {
        let key = self.fetched_key(mall_id, event_id);
        let ttl = i64::try_from(FETCHED_TTL.as_millis()).unwrap_or(i64::MAX);
        // One key: MULTI/EXEC, so no reader sees a half-written hash or one
        // without its TTL.
        let () = redis::pipe()
            .atomic()
            .del(&key)
            .ignore()
            .hset_multiple(&key, fields)
            .ignore()
            .pexpire(&key, ttl)
            .ignore()
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(key)
    }

    /// Appends the snapshot the fetch step left under `key` to the mall's
    /// shard unless `idempotency_key` was stored before. `None`: there is
    /// nothing under `key` (it expired, or was never written).
    pub async fn store_fetched(
        &self,
        mall_id: &str,
        key: &str,
        idempotency_key: &str,
    ) -> Result<Option<StoredFetched>, Error> {
        let shard = self.shard_of(mall_id);
        let tag = Self::shard_tag(shard);
        let expected = self.keyspace.key(&tag, "fetched", "");
        if !key.starts_with(&expected) {
            return Err(Error::Config(format!(
                "fetched snapshot {key:?} is not in mall {mall_id}'s shard {shard} ({expected}…): \
                 the fetch and store steps disagree on the key prefix or the shard count"
            )));
        }
        let (appended, entry_id, event_ids, status, version): (i64, Option<String>, _, _, _) = scripts::SNAPSHOT_STORE
            .key(self.stream_key(shard))
            .key(self.keyspace.key(&tag, "seen", idempotency_key))
            .key(key)
            .arg(u64::try_from(SEEN_TTL.as_millis()).unwrap_or(u64::MAX))
            .arg(self.max_len)
            .invoke_async(&mut self.conn.clone())
            .await?;
        let entry_id = match (appended, entry_id) {
            (-1, _) => return Ok(None),
            (0 | 1, Some(id)) => id,
            (other, id) => {
                return Err(Error::UnexpectedReply { script: "snapshot_store", reply: format!("{other}, {id:?}") });
            }
        };
        let appended = Appended { shard, entry_id, duplicate: appended == 0 };
        Ok(Some(StoredFetched { appended, event_ids, status, version }))
    }

    fn shard_tag(shard: u32) -> Tag {
        Tag::new(&format!("store:{shard}"))
    }
}
