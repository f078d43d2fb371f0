//! The queues a [`DevStack`](crate::DevStack) runs on, created (or found
//! with the same settings) at its start: the FIFO event queue and the
//! standard flush and catch-up queues, each with its dead-letter queue;
//! and what a dead predecessor held in flight in them, returned.

use crate::dev_stack::DevConfig;
use anyhow::{Context, anyhow};
use sluice_redis::Connection;
use sluice_sqs_emulator::{
    ConsumerLease, GroupScan, QueueBackend, QueueConfig, QueueError, RedisBackend, RedrivePolicy,
};

/// The pipeline's queue and its dead-letter queue.
pub const EVENTS_QUEUE: &str = "sluice-events.fifo";
pub const EVENTS_DLQ: &str = "sluice-events-dlq.fifo";
/// The sheets' flush requests (a standard queue: per-message delays) and
/// its dead-letter queue.
pub const FLUSH_QUEUE: &str = "sluice-flush";
pub const FLUSH_DLQ: &str = "sluice-flush-dlq";
/// "Catch up mall M" requests (flow control per mall; a standard queue, for
/// the same reason) and its dead-letter queue.
pub const CATCH_UP_QUEUE: &str = "sluice-mall-drain";
pub const CATCH_UP_DLQ: &str = "sluice-mall-drain-dlq";

pub(crate) async fn create_queues<B: QueueBackend>(backend: &B, config: &DevConfig) -> anyhow::Result<()> {
    // The dead-letter queue scans as its source does: a redrive puts its
    // messages back in the same order either way, and looking at it with
    // an SQS client shows what AWS would.
    let fifo = QueueConfig { group_scan: config.group_scan, ..QueueConfig::default() };
    let redrive = |dlq: &str| {
        Some(RedrivePolicy { dead_letter_queue: dlq.to_owned(), max_receive_count: config.max_receive_count })
    };
    create(backend, EVENTS_DLQ, &fifo).await?;
    let events = QueueConfig { visibility_timeout: config.visibility_timeout, redrive: redrive(EVENTS_DLQ), ..fifo };
    create(backend, EVENTS_QUEUE, &events).await?;
    for (queue, dlq, worker) in
        [(FLUSH_QUEUE, FLUSH_DLQ, &config.flush), (CATCH_UP_QUEUE, CATCH_UP_DLQ, &config.catch_up)]
    {
        create(backend, dlq, &QueueConfig::default()).await?;
        let standard = QueueConfig {
            visibility_timeout: worker.visibility_timeout,
            redrive: redrive(dlq),
            ..QueueConfig::default()
        };
        create(backend, queue, &standard).await?;
    }
    Ok(())
}

/// Returns to their queues the messages a dead predecessor (the lease's
/// previous holder) held in flight in the queues a stack consumes (nothing
/// consumes the dead-letter queues), so their groups go on at once instead
/// of after the visibility timeout; how many.
pub(crate) async fn release_in_flight(
    backend: &RedisBackend<Connection>,
    lease: &ConsumerLease<Connection>,
) -> anyhow::Result<u64> {
    let mut released = 0;
    for queue in [EVENTS_QUEUE, FLUSH_QUEUE, CATCH_UP_QUEUE] {
        released += backend
            .release_in_flight(queue, lease)
            .await
            .with_context(|| format!("cannot return the messages a previous run held in {queue}"))?;
    }
    Ok(released)
}

/// Creates `name`, or finds it with the same settings; a queue kept in
/// Redis with other settings is refused with what to do about it.
async fn create<B: QueueBackend>(backend: &B, name: &str, config: &QueueConfig) -> anyhow::Result<()> {
    let attribute = match backend.create_queue(name, config).await {
        Ok(_) => return Ok(()),
        Err(QueueError::QueueNameExists { attribute, .. }) => attribute,
        Err(e) => return Err(anyhow!(e).context(format!("cannot create queue {name}"))),
    };
    // A group scan can also be kept: name the flags that keep it (queues
    // made before the choice existed are round-robin).
    let keep = match backend.queue_info(name).await.map(|info| info.config.group_scan) {
        Ok(existing) if existing != config.group_scan => match existing {
            GroupScan::RoundRobin => " or keep it as it is with --group-scan round-robin".to_owned(),
            GroupScan::SqsFifo { window } => {
                format!(" or keep it as it is with --group-scan sqs-fifo --scan-window {window}")
            }
        },
        _ => String::new(),
    };
    Err(anyhow!(
        "queue {name} already exists in Redis with a different {attribute}; delete it \
         (aws sqs delete-queue --endpoint-url ...), use another --key-prefix{keep}"
    ))
}
