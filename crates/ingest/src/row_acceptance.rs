//! The effects of a valid sheet row: `INIT` in its transaction log, then
//! flow control per sheet (`sluice_redis::sheet_flow`), then the queue.
//!
//! 1. **Admit**, one script under the sheet's tag: a row buffered or overflowed
//!    before (its marker is set) is a `duplicate`. A sheet with fewer than
//!    `sheet_flow.max_queued` rows counted in the queue and nothing in its
//!    overflow has the row counted and let through. Otherwise the row is
//!    put in the sheet's overflow, marked as the buffer marks it, and
//!    answered `deferred` (`OVERFLOW` in its log): the overflow joins the
//!    buffer behind the sheet's last queued row, so it lands in order and
//!    costs the queue nothing.
//! 2. **Enqueue**: `ENQUEUED` once the queue took it; `FAILED` (and a 5xx,
//!    so the sender tries again) when it did not, and the row no longer
//!    counts.
//!
//! Rows are not coalesced: each must become a row of its own.
//! Redeliveries are dropped by the marker once the row is buffered or
//! overflowed, and before that by SQS's deduplication id (a row still counted is
//! sent again rather than overflowed, so it keeps its place).
//!
//! A crash loses nothing answered `202`: an overflowed row is in Redis before the
//! answer; a row let through is answered only once the queue took it, and
//! the sender's retry of one that was not is sent again (it is still
//! counted). Rows that the admit moved from the overflow into the buffer
//! are flushed on the request of this row's buffer step, or of the next
//! row's if this one never reaches the queue.

use crate::acceptance::{Acceptor, Receipt, Status, past_deadline, what_was_kept};
use crate::rejection::{ErrorCode, Rejection};
use crate::sheet_rows::stages;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::queue::SendOutcome;
use sluice_domain::{BufferedRow, SheetWork};
use sluice_redis::{RowAdmit, Tag};

impl<C: ConnectionLike + Clone + Send + Sync> Acceptor<C> {
    pub(crate) async fn accept_row(&self, work: SheetWork) -> Result<Receipt, Rejection> {
        let started = std::time::Instant::now();
        // Before the row's first trace entry: an invented credential leaves nothing.
        self.tenants.check(crate::tenants::Tenant::Credential(&work.row.credential_id)).await?;
        let log = work.trace_id();
        let group = work.row.group_key();
        let init = json!({
            "event_id": work.event_id,
            "sheet": group.as_str(),
            "submission_id": work.row.submission_id,
        });
        self.traces.record(&log, stages::INIT, &init).await.map_err(|e| store_unavailable(&e, "logging"))?;
        let sheet = Tag::for_sheet(group.as_str());
        let row_id = work.row.row_id.as_str();
        let admitted = self.sheets.admit(&sheet, row_id, &BufferedRow::from(&work).to_json()).await;
        match admitted.map_err(|e| store_unavailable(&e, "admitting"))? {
            RowAdmit::Duplicate => {
                self.log(&log, stages::DUPLICATE, &json!({"sheet": group.as_str()})).await;
                return Ok(receipt(&work, Status::Duplicate));
            }
            RowAdmit::Overflowed { overflow_len } => {
                let detail = json!({"sheet": group.as_str(), "overflow_len": overflow_len});
                self.log(&log, stages::OVERFLOW, &detail).await;
                return Ok(receipt(&work, Status::Deferred));
            }
            RowAdmit::Send { moved } if !moved.is_empty() => {
                let ids = BufferedRow::trace_ids_of(&work.row.credential_id, &moved);
                let detail = json!({"from": "overflow", "sheet": group.as_str()});
                if let Err(e) = self.traces.record_all(&ids, stages::BUFFERED, &detail).await {
                    self.counters.trace_failed();
                    tracing::warn!(sheet = group.as_str(), error = %e, "traces of the rows moved from the overflow not recorded");
                }
            }
            RowAdmit::Send { .. } => {}
        }
        // Back-pressure: a slow Redis answers the sender rather than hold
        // it; the row is let go as when the queue refuses it (below).
        if started.elapsed() >= self.deadline {
            let rejection = past_deadline(self.deadline, "row");
            self.let_go(&sheet, row_id, &log, &rejection.message).await;
            return Err(rejection);
        }
        match self.batcher.send(work.to_message()).await {
            SendOutcome::Accepted(accepted) => {
                let logged = json!({"message_id": accepted.message_id.as_str()});
                let about = work.row.group_about();
                tokio::join!(
                    self.enter_group(&group, &about, &work.event_id),
                    self.log(&log, stages::ENQUEUED, &logged),
                );
                Ok(receipt(&work, Status::Enqueued))
            }
            SendOutcome::Failed(failure) => {
                let code = if failure.sender_fault { ErrorCode::QueueRefused } else { ErrorCode::QueueUnavailable };
                let reason = format!("the queue did not take the row ({}: {})", failure.code, failure.message);
                self.let_go(&sheet, row_id, &log, &reason).await;
                Err(Rejection::new(code, format!("{reason}; nothing was kept")))
            }
        }
    }

    /// A row let through that will not reach the queue: it no longer
    /// counts toward its sheet's queued rows, and its log says why.
    async fn let_go(&self, sheet: &Tag, row_id: &str, log: &str, reason: &str) {
        if let Err(e) = self.sheets.left(sheet, row_id).await {
            tracing::warn!(row_id, error = %e, "flow-control count not taken back; it lapses");
        }
        self.log(log, stages::FAILED, &json!({"reason": reason, "retry": "by the sender"})).await;
    }

    /// Logs a row that failed validation in its credential's log of it:
    /// only for a tenant's credential (an invented one leaves nothing).
    pub(crate) async fn log_invalid_row(&self, credential: &str, row_id: &str, rejection: &Rejection) {
        if self.tenants.check(crate::tenants::Tenant::Credential(credential)).await.is_err() {
            return;
        }
        let detail = json!({"field": rejection.field, "reason": rejection.message});
        self.log(&sluice_domain::row_trace_id(credential, row_id), stages::VALIDATION_FAILED, &detail).await;
    }

    /// Best effort: the answer follows the queue; a lost entry is counted.
    async fn log(&self, log: &str, stage: &str, detail: &serde_json::Value) {
        if let Err(e) = self.traces.record(log, stage, detail).await {
            self.counters.trace_failed();
            tracing::warn!(log, stage, error = %e, "could not write a transaction log entry");
        }
    }
}

fn receipt(work: &SheetWork, status: Status) -> Receipt {
    Receipt { event_ids: vec![work.event_id.clone()], status, into: None }
}

fn store_unavailable(e: &sluice_redis::Error, doing: &str) -> Rejection {
    tracing::warn!(error = %e, "redis failed while {doing} a row");
    Rejection::new(ErrorCode::StoreUnavailable, format!("redis failed while {doing} the row; {}", what_was_kept(e)))
}
