//! The queues a [`DevStack`](crate::DevStack) runs on, created (or found
//! with the same settings) at its start: the FIFO event queue and the
//! standard flush queue, each with its dead-letter queue.

use crate::dev_stack::DevConfig;
use anyhow::anyhow;
use sluice_queue::{QueueBackend, QueueConfig, QueueError, RedrivePolicy};

/// The pipeline's queue and its dead-letter queue.
pub const EVENTS_QUEUE: &str = "sluice-events.fifo";
pub const EVENTS_DLQ: &str = "sluice-events-dlq.fifo";
/// The sheets' flush requests (a standard queue: per-message delays) and
/// its dead-letter queue.
pub const FLUSH_QUEUE: &str = "sluice-flush";
pub const FLUSH_DLQ: &str = "sluice-flush-dlq";

pub(crate) async fn create_queues<B: QueueBackend>(backend: &B, config: &DevConfig) -> anyhow::Result<()> {
    let explain = |name: &str, e: QueueError| match e {
        QueueError::QueueNameExists { attribute, .. } => {
            // Queues made before the group scan existed are round-robin.
            let keep = if attribute.starts_with("group scan") {
                " (or keep it as it is with --group-scan round-robin)"
            } else {
                ""
            };
            anyhow!(
                "queue {name} already exists in Redis with a different {attribute}; delete it \
                 (aws sqs delete-queue --endpoint-url ...) or use another --key-prefix{keep}"
            )
        }
        e => anyhow!(e).context(format!("cannot create queue {name}")),
    };
    // The dead-letter queue scans as its source does: a redrive puts its
    // messages back in the same order either way, and looking at it with
    // an SQS client shows what AWS would.
    let fifo = QueueConfig { group_scan: config.group_scan, ..QueueConfig::default() };
    backend.create_queue(EVENTS_DLQ, &fifo).await.map_err(|e| explain(EVENTS_DLQ, e))?;
    let events = QueueConfig {
        visibility_timeout: config.visibility_timeout,
        redrive: Some(RedrivePolicy {
            dead_letter_queue: EVENTS_DLQ.to_owned(),
            max_receive_count: config.max_receive_count,
        }),
        ..fifo
    };
    backend.create_queue(EVENTS_QUEUE, &events).await.map_err(|e| explain(EVENTS_QUEUE, e))?;
    backend.create_queue(FLUSH_DLQ, &QueueConfig::default()).await.map_err(|e| explain(FLUSH_DLQ, e))?;
    let flush = QueueConfig {
        visibility_timeout: config.flush.visibility_timeout,
        redrive: Some(RedrivePolicy {
            dead_letter_queue: FLUSH_DLQ.to_owned(),
            max_receive_count: config.max_receive_count,
        }),
        ..QueueConfig::default()
    };
    backend.create_queue(FLUSH_QUEUE, &flush).await.map_err(|e| explain(FLUSH_QUEUE, e))?;
    Ok(())
}
