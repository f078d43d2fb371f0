//! How a flush is asked for: "flush sheet S in D". In AWS a message with
//! `DelaySeconds` on an SQS standard queue, consumed by the flush function;
//! on one machine the same message on the embedded queue, consumed by the
//! local flush worker. Either way nothing polls: the queue delivers the
//! request when it is due.

use crate::sheet_io::FlushRequest;
use futures::future::BoxFuture;
use sluice_domain::StepError;
use std::fmt::Debug;
use std::time::Duration;

/// The longest delay SQS allows on a message.
pub const MAX_DELAY: Duration = sluice_domain::queue::rules::MAX_DELAY;

/// Sends flush requests. Implemented over the delay queue port.
pub trait FlushTrigger: Send + Sync + Debug {
    /// Asks for `request` to be flushed after `delay` (capped at
    /// [`MAX_DELAY`]; a flush that is still not due reschedules itself).
    fn request(&self, request: &FlushRequest, delay: Duration) -> BoxFuture<'_, Result<(), StepError>>;
}

/// The trigger over a delay queue (an SQS standard queue in AWS, the
/// embedded queue's standard queue locally).
#[derive(Debug)]
pub struct QueueFlushTrigger<Q> {
    queue: Q,
}

impl<Q> QueueFlushTrigger<Q> {
    pub fn new(queue: Q) -> Self {
        Self { queue }
    }
}

impl<Q: sluice_domain::queue::DelayQueue + Debug + 'static> FlushTrigger for QueueFlushTrigger<Q> {
    fn request(&self, request: &FlushRequest, delay: Duration) -> BoxFuture<'_, Result<(), StepError>> {
        let body = serde_json::to_string(request);
        Box::pin(async move {
            let body = body.map_err(|e| StepError::new(sluice_domain::ErrorKind::Internal, e.to_string()))?;
            sluice_domain::queue::delay::send_after(&self.queue, body, delay, "the flush request").await
        })
    }
}
