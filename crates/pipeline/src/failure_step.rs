//! The failure step, on the state machine's Catch path: records why an item
//! failed and what happens next (the queue redelivers it, or, at its last
//! allowed receive, parks it in the dead-letter queue), so `sluice trace`
//! can tell where it is. Alerts come with the operations work.

use crate::service_core::ServiceCore;
use crate::step_io::FailureInput;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{ErrorKind, StepError};

impl<C: ConnectionLike + Clone + Send + Sync> ServiceCore<C> {
    pub async fn record_failure(&self, input: FailureInput) -> Result<(), StepError> {
        let item = &input.item;
        let last = item.receive_count >= self.config.max_receive_count;
        let retryable = ErrorKind::from_name(&input.failure.error).is_none_or(ErrorKind::is_retryable);
        let next = if last { "dead-letter queue" } else { "redelivery" };
        tracing::warn!(
            item = item.item_id,
            error = input.failure.error,
            receive_count = item.receive_count,
            next,
            "item failed"
        );
        self.trace(
            &item.trace_id(),
            "failed",
            json!({
                "error": input.failure.error,
                "cause": input.failure.cause,
                "receive_count": item.receive_count,
                "max_receive_count": self.config.max_receive_count,
                "retryable": retryable,
                "next": next,
            }),
        )
        .await;
        Ok(())
    }
}
