//! The buffer step: a sheet row joins its sheet's buffer (once, however
//! often the message is redelivered), and the sheet's flush is asked for.
//! The message can then be deleted at once: the row is safe in Redis, and
//! the sheet's group is free for the next rows, which is what lets rows
//! gather into big appends while a flush runs.
//!
//! Under flow control per sheet (`sluice_redis::sheet_flow`), the row
//! stops counting as queued in the same step, and when it was the last
//! one counted, the rows held in the sheet's overflow join the buffer
//! behind it: this step's flush request covers them too.
//!
//! With a threshold and a maximum delay (500 rows / 10 s, say), a small
//! buffer waits up to the delay and a buffer reaching the threshold asks
//! again at once, without waiting for the delayed request. The defaults (1
//! row, no delay) ask at once: adaptive batching, see `flush_step`.

use crate::flush_request::Why;
use crate::sheet_io::{BufferInput, BufferOutput, BufferedRow, FlushRequest};
use crate::sheet_service::SheetService;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::StepError;
use sluice_redis::Tag;
use std::time::Duration;

impl<C: ConnectionLike + Clone + Send + Sync> SheetService<C> {
    pub async fn buffer_row(&self, input: BufferInput) -> Result<BufferOutput, StepError> {
        let work = input.item.sheet_work()?;
        let group = work.row.group_key();
        let sheet = Tag::for_sheet(group.as_str());
        // As ingest writes a row it holds in the overflow: the two end up
        // side by side in the buffer.
        let row = BufferedRow::from(work).to_json();
        // Known before the row is: `sluice credentials set` finds every
        // sheet that may hold parked rows.
        let request = FlushRequest::for_row(&work.row, String::new());
        self.credentials.add_sheet(&work.row.credential_id, &request.to_member()).await?;
        let step = self.buffers.buffer(&sheet, &work.row.row_id, &row).await?;
        let (buffered, buffer_len) = (step.added, step.buffer_len);
        if buffered {
            StepMetrics::add(&self.core.metrics.rows_buffered, 1);
            self.core.trace(&work.trace_id(), "BUFFERED", json!({"buffer_len": buffer_len})).await;
        }
        if !step.moved.is_empty() {
            StepMetrics::add(&self.core.metrics.rows_buffered, step.moved.len() as u64);
            // Best effort, as every trace: a crash here leaves these rows'
            // traces at OVERFLOW while they are buffered (and then appended).
            let detail = json!({"from": "overflow", "sheet": group.as_str(), "buffer_len": buffer_len});
            let moved = BufferedRow::trace_ids_of(&work.row.credential_id, &step.moved);
            self.core.trace_all(&moved, "BUFFERED", &detail).await;
        }
        let settings = &self.core.config.sheets;
        let (delay, why) = if buffer_len >= settings.flush_threshold {
            (Duration::ZERO, Why::Rows)
        } else {
            (settings.max_delay, Why::MaxDelay)
        };
        self.request_flush(&request, delay, why).await?;
        if let Some(work) = &input.item.work {
            self.core.item_done(work).await;
        }
        Ok(BufferOutput { buffered, buffer_len, moved_from_overflow: step.moved.len() as u64 })
    }
}
