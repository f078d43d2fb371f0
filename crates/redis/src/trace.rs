//! Event traces: every event's journey (received, enqueued or coalesced
//! into which pending fetch, each step with its result and wait, stored or
//! dead-lettered), so "where did this webhook go?" has an answer in Redis.
//!
//! Key: `{prefix}{ev:<event id>}:trace`, a LIST of JSON entries
//! `{"at_ms", "stage", "detail"}` stamped with Redis's clock, TTL = the
//! retention (7 days by default) after the latest entry, at most
//! [`MAX_ENTRIES`] kept. Scripts: `lua/trace_append.lua` (the entry itself
//! in `lua/trace_entry.lua`, which the delivery scripts share, so ingest
//! writes a delivery's gate and its trace entry in one call: a
//! [`TraceSlot`]). Each event has its own hash tag, so traces spread over
//! a cluster.

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a trace is kept after its latest entry, by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most entries kept per event; an item retried without end keeps its
/// latest entries.
pub const MAX_ENTRIES: u32 = 500;
/// Trace writes in the air at once in [`Traces::record_all`].
const RECORD_ALL_IN_FLIGHT: usize = 32;

/// One step of an event's journey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// Redis's clock, ms since the epoch.
    pub at_ms: u64,
    pub stage: String,
    pub detail: serde_json::Value,
}

/// One event's trace as a script's key and arguments (`lua/trace_entry.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSlot {
    pub(crate) key: String,
    /// How long the trace is kept after this entry.
    pub(crate) ttl_ms: u64,
}

#[derive(Debug, Clone)]
pub struct Traces<C> {
    conn: C,
    keyspace: Keyspace,
    retention: Duration,
}

impl<C: ConnectionLike + Clone + Send> Traces<C> {
    pub fn new(conn: C, keyspace: Keyspace, retention: Duration) -> Self {
        Self { conn, keyspace, retention }
    }

    fn key(&self, event_id: &str) -> String {
        self.keyspace.key(&Tag::for_event(event_id), "trace", "")
    }

    /// Where `event_id`'s trace is and how it is kept, for a script under
    /// the same event's tag that writes a trace entry along with its own
    /// work.
    pub fn slot(&self, event_id: &str) -> TraceSlot {
        TraceSlot {
            key: self.key(event_id),
            ttl_ms: u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX).max(1),
        }
    }

    /// Appends `stage` with `detail` to the trace of `event_id`.
    pub async fn record(&self, event_id: &str, stage: &str, detail: &serde_json::Value) -> Result<(), Error> {
        let slot = self.slot(event_id);
        let _: i64 = scripts::TRACE_APPEND
            .key(&slot.key)
            .arg(stage)
            .arg(detail.to_string())
            .arg(slot.ttl_ms)
            .arg(MAX_ENTRIES)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Appends the same entry to several events' traces (every event a
    /// stored snapshot answers, the rows of an append, the rows moved from
    /// a sheet's overflow: thousands at a time), a few calls in the air at
    /// once rather than one round trip after another.
    pub async fn record_all(&self, event_ids: &[String], stage: &str, detail: &serde_json::Value) -> Result<(), Error> {
        use futures::{StreamExt, TryStreamExt};
        // Collected first: a stream over a mapping closure would make the
        // caller's future not `Send` (the closure's lifetimes are not general).
        let calls: Vec<_> = event_ids.iter().map(|id| self.record(id, stage, detail)).collect();
        futures::stream::iter(calls).buffer_unordered(RECORD_ALL_IN_FLIGHT).try_collect::<()>().await
    }

    /// The trace of `event_id`, oldest first; empty when unknown or expired.
    pub async fn read(&self, event_id: &str) -> Result<Vec<TraceEntry>, Error> {
        let raw: Vec<String> =
            redis::cmd("LRANGE").arg(self.key(event_id)).arg(0).arg(-1).query_async(&mut self.conn.clone()).await?;
        raw.iter()
            .map(|entry| {
                serde_json::from_str(entry)
                    .map_err(|e| Error::UnexpectedReply { script: "trace_append.lua", reply: format!("{entry}: {e}") })
            })
            .collect()
    }
}
