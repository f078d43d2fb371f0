//! Flow control per sheet: no sheet may hold more than a bounded number of
//! rows in the FIFO queue, however many it is sent, and its rows still
//! land exactly once and in arrival order.
//!
//! Every sheet row is one FIFO message in its sheet's group. SQS FIFO
//! delivers one batch (≤ 10) of a group at a time and scans only the first
//! 120,000 messages for groups it can deliver, so a sheet that is sent
//! 200,000 rows hides every other sheet's rows behind its own for as long
//! as its group takes to drain, ten rows per execution. A sheet's rows do
//! not need the queue to be ordered once one of them is in it: the sheet's
//! buffer keeps their order, and the flush appends thousands per call. So
//! once a sheet has a backlog, its rows skip the queue:
//!
//! ```text
//!             queued < max_queued and overflow empty
//!   row ──► admit ─────────────────────────────────► FIFO queue ──► buffer step ──► buffer ──► flush
//!             │ otherwise                                 (counted in `queued`)          ▲
//!             ▼                                                                          │
//!         overflow of sheet S ─── joins the end of the buffer when the last counted ─────┘
//!                                 row is buffered (same script), or at the next admit
//!                                 once nothing counts any more
//! ```
//!
//! - **Order**: a row is let through only while the overflow is empty, and
//!   overflowed while it is not, so every counted row arrived before every row
//!   in the overflow. The overflow joins the buffer only when no counted
//!   row is left in the queue: in the buffer step that buffers the last
//!   one (`lua/sheet_buffer.lua`), or in the admit that finds the count at
//!   zero with rows overflowed (`lua/sheet_admit.lua`: counted rows lapsed, or
//!   their sends failed), which then lets its own row through behind them.
//! - **Counting**: the admit that lets a row through counts it in the same
//!   step, so a burst of concurrent requests cannot all slip under the
//!   threshold; the buffer step and a failed send take it out
//!   ([`SheetBuffers::left`]). A row whose message died (the dead-letter
//!   queue) stops counting after `queued_horizon`.
//! - **Exactly once**: an overflowed row gets the marker the buffer step sets, so
//!   a redelivery of it is a duplicate wherever it is; a row already
//!   counted is sent again (the queue drops the copy) rather than overflowed, so
//!   it keeps its place.
//! - **What starts the flush**: the buffer step that moved the overflow
//!   asks for it, as for its own row. When the admit moves it, the row it
//!   lets through asks, from its buffer step. If that row's send fails,
//!   the moved rows wait in the buffer for the sheet's next row, which is
//!   the sender's retry of this one (it was answered 5xx).
//!
//! Keys, under the sheet's tag (`Tag::for_sheet`), beside the buffer's
//! (`sheet_buffer`):
//!
//! ```text
//! {prefix}{sheet:…}:queued:     ZSET    row id -> ms it was counted       TTL: queued_horizon after the latest row counted
//! {prefix}{sheet:…}:overflow:   LIST    rows overflowed, as JSON, oldest   owner: the buffer step and ingest (move it into the buffer)
//! ```

use crate::error::Error;
use crate::gate::ttl_ms;
use crate::keyspace::Tag;
use crate::scripts;
use crate::sheet_buffer::{ROW_MARKER_TTL, SheetBuffers};
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// The thresholds of flow control per sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetFlow {
    /// Rows of one sheet counted in the queue from which its rows overflow
    /// in its overflow instead.
    pub max_queued: u32,
    /// After this, a counted row no longer counts: its message died
    /// without being buffered (SQS redelivers it within 5 receives × 330 s).
    pub queued_horizon: Duration,
}

impl Default for SheetFlow {
    fn default() -> Self {
        Self { max_queued: 100, queued_horizon: Duration::from_secs(30 * 60) }
    }
}

/// What the admit decided for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowAdmit {
    /// Send the row's message: it is counted. `moved` are the rows (as
    /// JSON, oldest first) that joined the buffer from the overflow first.
    Send { moved: Vec<String> },
    /// Put in the sheet's overflow, now this long.
    Overflowed { overflow_len: u64 },
    /// The row is buffered or overflowed already.
    Duplicate,
}

/// What buffering one row did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffered {
    /// False for a row buffered (or overflowed) before: a redelivery.
    pub added: bool,
    pub buffer_len: u64,
    /// Rows (as JSON, oldest first) that joined the buffer from the
    /// overflow after this one.
    pub moved: Vec<String>,
}

impl<C: ConnectionLike + Clone + Send> SheetBuffers<C> {
    /// Lets row `row_id` through to the queue or holds it (see [`RowAdmit`]).
    pub async fn admit(&self, sheet: &Tag, row_id: &str, row_json: &str) -> Result<RowAdmit, Error> {
        let flow = self.flow();
        let reply: Vec<Value> = scripts::SHEET_ADMIT
            .key(self.key(sheet, "queued"))
            .key(self.key(sheet, "overflow"))
            .key(self.key(sheet, "buffer"))
            .key(self.marker(sheet, row_id))
            .arg(row_id)
            .arg(row_json)
            .arg(flow.max_queued)
            .arg(ttl_ms(flow.queued_horizon)?)
            .arg(ROW_MARKER_TTL.as_millis() as u64)
            .invoke_async(&mut self.conn())
            .await?;
        match reply.split_first() {
            Some((Value::Int(0), [])) => Ok(RowAdmit::Duplicate),
            Some((Value::Int(1), moved)) => Ok(RowAdmit::Send { moved: strings(moved, "sheet_admit.lua")? }),
            Some((Value::Int(2), [Value::Int(len)])) => Ok(RowAdmit::Overflowed { overflow_len: *len as u64 }),
            _ => Err(Error::UnexpectedReply { script: "sheet_admit.lua", reply: format!("{reply:?}") }),
        }
    }

    /// Row `row_id`'s send failed: it no longer counts.
    pub async fn left(&self, sheet: &Tag, row_id: &str) -> Result<(), Error> {
        let _: i64 =
            redis::cmd("ZREM").arg(self.key(sheet, "queued")).arg(row_id).query_async(&mut self.conn()).await?;
        Ok(())
    }

    /// Buffers `row_json` unless row `row_id` was buffered (or overflowed)
    /// before; it stops counting as queued, and the overflow follows it
    /// when it was the last one counted (see [`Buffered`]).
    pub async fn buffer(&self, sheet: &Tag, row_id: &str, row_json: &str) -> Result<Buffered, Error> {
        let reply: Vec<Value> = scripts::SHEET_BUFFER
            .key(self.key(sheet, "buffer"))
            .key(self.marker(sheet, row_id))
            .key(self.key(sheet, "queued"))
            .key(self.key(sheet, "overflow"))
            .arg(row_json)
            .arg(ROW_MARKER_TTL.as_millis() as u64)
            .arg(row_id)
            .arg(ttl_ms(self.flow().queued_horizon)?)
            .invoke_async(&mut self.conn())
            .await?;
        match reply.as_slice() {
            [Value::Int(added), Value::Int(len), moved @ ..] => {
                Ok(Buffered { added: *added == 1, buffer_len: *len as u64, moved: strings(moved, "sheet_buffer.lua")? })
            }
            _ => Err(Error::UnexpectedReply { script: "sheet_buffer.lua", reply: format!("{reply:?}") }),
        }
    }
}

fn strings(values: &[Value], script: &'static str) -> Result<Vec<String>, Error> {
    values
        .iter()
        .map(|v| {
            redis::from_redis_value_ref::<String>(v)
                .map_err(|e| Error::UnexpectedReply { script, reply: e.to_string() })
        })
        .collect()
}
