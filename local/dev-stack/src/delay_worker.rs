//! A delay queue's consumer, as a Lambda's SQS event source is in AWS:
//! receives requests (messages that carry `DelaySeconds`, so each arrives
//! when it is due and nothing polls), hands each to a [`RequestHandler`],
//! several side by side, and deletes a request once it was handled. A
//! request that failed comes back after `retry_after` (in AWS: the
//! visibility timeout), and after the queue's maxReceiveCount goes to its
//! dead-letter queue. The flush worker and the catch-up worker are this
//! loop with their own handler.

use futures::future::BoxFuture;
use sluice_domain::DelayQueue;
use sluice_domain::queue::{ReceiveRequest, ReceivedDelayedMessage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How a worker pulls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayWorkerConfig {
    /// Requests handled at once.
    pub concurrency: usize,
    /// How long a received request stays invisible: above one run.
    pub visibility_timeout: Duration,
    /// Long-poll wait per receive; also how quickly a stop is noticed.
    pub wait: Duration,
    /// A failed request comes back after this.
    pub retry_after: Duration,
}

impl Default for DelayWorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 16,
            visibility_timeout: Duration::from_secs(120),
            wait: Duration::from_secs(1),
            retry_after: Duration::from_secs(2),
        }
    }
}

/// What became of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// Done: delete it.
    Done,
    /// Failed: let it come back.
    Failed,
    /// Never readable: leave it for the queue's redrive policy to dead-letter.
    Unreadable,
}

/// Runs one request body.
pub trait RequestHandler: Send + Sync + 'static {
    /// What the worker is called in its logs.
    fn name(&self) -> &'static str;
    fn handle(&self, body: String) -> BoxFuture<'_, Handled>;
}

/// Runs requests from `queue` until `stop` is cancelled, then waits for the
/// running ones.
pub async fn run_delay_worker<Q: DelayQueue + 'static>(
    queue: Arc<Q>,
    handler: Arc<dyn RequestHandler>,
    config: DelayWorkerConfig,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let running = TaskTracker::new();
    let name = handler.name();
    while !stop.is_cancelled() {
        let Ok(permit) = slots.clone().acquire_many_owned(1).await else { break };
        let max = (slots.available_permits() + 1).min(10) as u8;
        drop(permit);
        let request = match ReceiveRequest::new(max, config.visibility_timeout, config.wait) {
            Ok(request) => request,
            Err(e) => {
                tracing::error!(worker = name, error = %e, "worker misconfigured");
                return;
            }
        };
        // Raced with `stop`, unlike the pipe's receive: one cut off may have
        // taken requests, which then come back after their visibility
        // timeout (or when the next stack starts), and a flush or drain
        // request run late is harmless.
        let messages = tokio::select! {
            received = queue.receive(request) => received,
            () = stop.cancelled() => continue,
        };
        let messages = match messages {
            Ok(messages) => messages,
            Err(e) => {
                tracing::warn!(worker = name, error = %e, "receive failed");
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(config.retry_after) => {}
                }
                continue;
            }
        };
        for message in messages {
            let Ok(permit) = slots.clone().acquire_owned().await else { break };
            let (queue, handler, retry_after) = (queue.clone(), handler.clone(), config.retry_after);
            running.spawn(async move {
                handle(&*queue, &*handler, message, retry_after).await;
                drop(permit);
            });
        }
    }
    running.close();
    running.wait().await;
}

async fn handle<Q: DelayQueue>(
    queue: &Q,
    handler: &dyn RequestHandler,
    message: ReceivedDelayedMessage,
    retry: Duration,
) {
    let name = handler.name();
    match handler.handle(message.body).await {
        Handled::Done => {
            if let Err(e) = queue.delete(&message.receipt).await {
                tracing::warn!(worker = name, error = %e, "request not deleted; it will run again (harmlessly)");
            }
        }
        Handled::Failed => {
            let _ = queue.change_visibility(&message.receipt, retry).await;
        }
        Handled::Unreadable => {
            tracing::error!(worker = name, message_id = message.message_id.as_str(), "unreadable request");
        }
    }
}
