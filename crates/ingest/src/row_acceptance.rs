//! The effects of a valid sheet row: `INIT` in its transaction log, then
//! the queue; `ENQUEUED` once the queue took it, `FAILED` (and a 5xx, so
//! the sender tries again) when it did not. Rows are not coalesced: each
//! must become a row of its own. Redeliveries are dropped downstream, by
//! SQS's deduplication id within five minutes and by the sheet buffer's
//! row marker after that.

use crate::acceptance::{Acceptor, Receipt, Status};
use crate::rejection::{ErrorCode, Rejection};
use crate::sheet_rows::stages;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::SheetWork;
use sluice_domain::queue::SendOutcome;

impl<C: ConnectionLike + Clone + Send + Sync> Acceptor<C> {
    pub(crate) async fn accept_row(&self, work: SheetWork) -> Result<Receipt, Rejection> {
        let log = work.trace_id();
        let init = json!({
            "event_id": work.event_id,
            "sheet": work.row.group_key().as_str(),
            "submission_id": work.row.submission_id,
        });
        self.traces.record(&log, stages::INIT, &init).await.map_err(|e| {
            tracing::warn!(error = %e, "redis failed while logging a row");
            Rejection::new(ErrorCode::StoreUnavailable, "redis failed while logging the row; nothing was kept")
        })?;
        match self.batcher.send(work.to_message()).await {
            SendOutcome::Accepted(accepted) => {
                let logged = json!({"message_id": accepted.message_id.as_str()});
                let (group, about) = (work.row.group_key(), work.row.group_about());
                tokio::join!(
                    self.enter_group(&group, &about, &work.event_id),
                    self.log(&log, stages::ENQUEUED, &logged),
                );
                Ok(Receipt { event_ids: vec![work.event_id.clone()], status: Status::Enqueued, into: None })
            }
            SendOutcome::Failed(failure) => {
                let code = if failure.sender_fault { ErrorCode::QueueRefused } else { ErrorCode::QueueUnavailable };
                let reason = format!("the queue did not take the row ({}: {})", failure.code, failure.message);
                self.log(&log, stages::FAILED, &json!({"reason": reason, "retry": "by the sender"})).await;
                Err(Rejection::new(code, format!("{reason}; nothing was kept")))
            }
        }
    }

    /// Logs a row that failed validation under its row id.
    pub(crate) async fn log_invalid_row(&self, row_id: &str, rejection: &Rejection) {
        let detail = json!({"field": rejection.field, "reason": rejection.message});
        self.log(&sluice_domain::row_trace_id(row_id), stages::VALIDATION_FAILED, &detail).await;
    }

    /// Best effort: the answer follows the queue; a lost entry is counted.
    async fn log(&self, log: &str, stage: &str, detail: &serde_json::Value) {
        if let Err(e) = self.traces.record(log, stage, detail).await {
            self.counters.trace_failed();
            tracing::warn!(log, stage, error = %e, "could not write a transaction log entry");
        }
    }
}
