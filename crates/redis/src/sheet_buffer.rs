//! The buffer of each Google Sheet: rows wait here for the sheet's next
//! flush, which appends many of them in one call (Google allows 60 writes
//! a minute per user). Exactly once, whatever fails and whenever:
//!
//! - a row is buffered once (a marker per row id turns redeliveries away);
//! - the rows of an append move atomically to an in-flight list *before*
//!   the call ([`SheetBuffers::claim`]) and leave it only when the outcome
//!   is known ([`SheetBuffers::complete`]), so a crash between the two
//!   leaves them in flight, marked `unknown`: the next flush checks the
//!   sheet for them before sending them again (trimming the buffer after
//!   the append instead would write the batch twice on a crash between).
//!
//! Keys, all under the sheet's tag (`Tag::for_sheet`):
//!
//! ```text
//! {prefix}{sheet:…}:buffer:      LIST    rows as JSON, oldest first     owner: the flush (claims them)
//! {prefix}{sheet:…}:inflight:    LIST    rows of the current append     owner: the flush (completes or parks them)
//! {prefix}{sheet:…}:istate:      STRING  unknown | unsent               owner: the flush (deleted with the rows)
//! {prefix}{sheet:…}:parked:      LIST    rows waiting for a person      owner: redrive (`sluice credentials set`, DLQ redrive)
//! {prefix}{sheet:…}:row:<id>     STRING  marker: row buffered or held   TTL: 24 h
//! {prefix}{sheet:…}:queued:      ZSET    rows counted in the queue      TTL: the horizon (flow control, `sheet_flow`)
//! {prefix}{sheet:…}:overflow:    LIST    rows held back at ingest       owner: the buffer step and ingest (`sheet_flow`)
//! ```
//!
//! Scripts: `lua/sheet_buffer.lua`, `lua/sheet_claim.lua`,
//! `lua/sheet_shift.lua`, `lua/sheet_admit.lua` (`sheet_flow`).

use crate::error::Error;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use crate::sheet_flow::SheetFlow;
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// How long a buffered row's marker turns its redeliveries away: far
/// longer than SQS's redelivery of one message can take.
pub const ROW_MARKER_TTL: Duration = Duration::from_secs(24 * 3600);

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Nothing buffered, nothing in flight.
    Empty,
    /// Rows newly moved in flight; send them.
    Fresh(Vec<String>),
    /// Rows in flight from an earlier attempt that are known not to have
    /// been appended; send them again.
    Unsent(Vec<String>),
    /// Rows in flight from an earlier attempt whose append may have been
    /// applied: look for them in the sheet first.
    Unknown(Vec<String>),
}

/// Lengths of a sheet's lists, and its rows counted in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SheetBacklog {
    pub buffered: u64,
    pub in_flight: u64,
    pub parked: u64,
    /// Rows held back at ingest by flow control (`sheet_flow`).
    pub overflow: u64,
    /// Rows counted in the FIFO queue (some may be past the horizon,
    /// dropped at the next admit or buffer step).
    pub queued: u64,
}

#[derive(Debug, Clone)]
pub struct SheetBuffers<C> {
    conn: C,
    keyspace: Keyspace,
    flow: SheetFlow,
}

impl<C: ConnectionLike + Clone + Send> SheetBuffers<C> {
    /// The buffers, with flow control's default thresholds (what the
    /// buffer step needs of them is the horizon, which is not a setting).
    pub fn new(conn: C, keyspace: Keyspace) -> Self {
        Self { conn, keyspace, flow: SheetFlow::default() }
    }

    /// With these thresholds (ingest's `max_queued`).
    pub fn with_flow(mut self, flow: SheetFlow) -> Result<Self, Error> {
        if flow.max_queued == 0 {
            return Err(Error::Config("flow control per sheet needs max_queued of at least 1".into()));
        }
        crate::gate::ttl_ms(flow.queued_horizon)?;
        self.flow = flow;
        Ok(self)
    }

    pub fn flow(&self) -> &SheetFlow {
        &self.flow
    }

    pub(crate) fn conn(&self) -> C {
        self.conn.clone()
    }

    pub(crate) fn key(&self, sheet: &Tag, kind: &str) -> String {
        self.keyspace.key(sheet, kind, "")
    }

    pub(crate) fn marker(&self, sheet: &Tag, row_id: &str) -> String {
        self.keyspace.key(sheet, "row", row_id)
    }

    /// Claims the rows of the next append (see [`Claim`]).
    pub async fn claim(&self, sheet: &Tag, max_rows: usize, max_bytes: usize) -> Result<Claim, Error> {
        let reply: Vec<Value> = scripts::SHEET_CLAIM
            .key(self.key(sheet, "buffer"))
            .key(self.key(sheet, "inflight"))
            .key(self.key(sheet, "istate"))
            .arg(max_rows.max(1))
            .arg(max_bytes)
            .invoke_async(&mut self.conn.clone())
            .await?;
        let mut items = reply.iter().map(|v| redis::from_redis_value_ref::<String>(v).map_err(redis::RedisError::from));
        let state = items.next().transpose()?.unwrap_or_default();
        let rows: Vec<String> = items.collect::<Result<_, _>>()?;
        Ok(match state.as_str() {
            "empty" => Claim::Empty,
            "fresh" => Claim::Fresh(rows),
            "unsent" => Claim::Unsent(rows),
            _ => Claim::Unknown(rows),
        })
    }

    /// The in-flight rows were certainly not appended (the upstream
    /// refused the call): the next claim may send them without checking.
    pub async fn mark_unsent(&self, sheet: &Tag) -> Result<(), Error> {
        redis::cmd("SET").arg(self.key(sheet, "istate")).arg("unsent").exec_async(&mut self.conn.clone()).await?;
        Ok(())
    }

    /// The in-flight rows are in the sheet: drop them.
    pub async fn complete(&self, sheet: &Tag) -> Result<(), Error> {
        redis::cmd("DEL")
            .arg(self.key(sheet, "inflight"))
            .arg(self.key(sheet, "istate"))
            .exec_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Parks the in-flight rows behind the rows parked before them.
    pub async fn park(&self, sheet: &Tag) -> Result<u64, Error> {
        self.shift(sheet, "inflight", "parked", "back").await
    }

    /// Puts every parked row back at the head of the buffer, in order.
    pub async fn redrive(&self, sheet: &Tag) -> Result<u64, Error> {
        self.shift(sheet, "parked", "buffer", "front").await
    }

    async fn shift(&self, sheet: &Tag, from: &str, to: &str, side: &str) -> Result<u64, Error> {
        let moved: u64 = scripts::SHEET_SHIFT
            .key(self.key(sheet, from))
            .key(self.key(sheet, to))
            .key(self.key(sheet, "istate"))
            .arg(side)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(moved)
    }

    /// How many rows the sheet has buffered, in flight, parked, held
    /// and counted in the queue.
    pub async fn backlog(&self, sheet: &Tag) -> Result<SheetBacklog, Error> {
        let (buffered, in_flight, parked, overflow, queued): (u64, u64, u64, u64, u64) = redis::pipe()
            .llen(self.key(sheet, "buffer"))
            .llen(self.key(sheet, "inflight"))
            .llen(self.key(sheet, "parked"))
            .llen(self.key(sheet, "overflow"))
            .zcard(self.key(sheet, "queued"))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(SheetBacklog { buffered, in_flight, parked, overflow, queued })
    }
}
