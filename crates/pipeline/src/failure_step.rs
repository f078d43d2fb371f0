//! The failure step, on the state machine's Catch path: records why an item
//! failed and what happens next (the queue redelivers it, or, at its last
//! allowed receive, moves it to the dead-letter queue), so `sluice trace`
//! can tell where it is. Alerts come with the operations work.
//!
//! A shop event being dead-lettered is also appended, as an `outcome`
//! entry, to its mall's snapshot stream (`sluice_redis::snapshot_store`):
//! the drain records it in PostgreSQL's event log, where `sluice trace`
//! finds it after the Redis trace has expired. Its idempotency key names
//! the message and its receive count, so the step run again appends
//! nothing new, while an event redriven from the dead-letter queue and
//! dead-lettered again (a new message) is recorded again.

use crate::service_core::ServiceCore;
use crate::step_io::{FailureInput, ItemPlan};
use redis::aio::ConnectionLike;
use serde_json::{Value, json};
use sluice_domain::{ErrorKind, StepError, WorkItem};
use sluice_redis::SnapshotStore;

/// The outcome entry of an event given up to the dead-letter queue.
/// Readers also accept `parked`, its value before this word was used.
const DEAD_LETTERED: &str = "dead-lettered";

/// The key's prefix stays `parked` (a stored layout): a receive keyed before a deploy and re-run after it dedupes.
const KEY_PREFIX: &str = "parked";

impl<C: ConnectionLike + Clone + Send + Sync> ServiceCore<C> {
    pub async fn record_failure(&self, input: FailureInput) -> Result<(), StepError> {
        let item = &match (input.item, input.message) {
            (Some(item), _) => item,
            // PlanBatch never ran for it: planned here as it would have.
            (None, Some(message)) => ItemPlan::of(message, self.config.max_receive_count),
            (None, None) => {
                return Err(StepError::new(ErrorKind::InvalidRequest, "FailureInput: no item and no message"));
            }
        };
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
        let detail = json!({
            "error": input.failure.error,
            "cause": input.failure.cause,
            "receive_count": item.receive_count,
            "max_receive_count": self.config.max_receive_count,
            "retryable": retryable,
            "next": next,
        });
        self.trace(&item.trace_id(), "failed", detail.clone()).await;
        if let (true, Some(WorkItem::Shop(work))) = (last, &item.work) {
            let key = format!("{KEY_PREFIX}:{}:{}:{}", work.event_id, item.item_id, item.receive_count);
            self.append_outcome(&work.event.mall_id, &work.event_id, &detail, &key).await;
        }
        Ok(())
    }

    /// Like a trace entry, the outcome must not fail the step that records
    /// the failure (the item is reported failed either way): an error is
    /// logged. The message itself is in the dead-letter queue regardless.
    async fn append_outcome(&self, mall_id: &str, event_id: &str, detail: &Value, key: &str) {
        let appended = match SnapshotStore::new(self.conn.clone(), self.keyspace.clone(), self.config.snapshot_shards) {
            Ok(store) => store.append_outcome(mall_id, event_id, DEAD_LETTERED, detail, key).await,
            Err(e) => Err(e),
        };
        if let Err(e) = appended {
            tracing::warn!(event_id, error = %e, "dead-lettered outcome not appended for the event log");
        }
    }
}
