//! The flush worker: what the flush function's SQS event source does in
//! AWS, on one machine. It receives flush requests from the flush queue
//! (a standard queue whose messages carry `DelaySeconds`, so a request
//! arrives when it is due and nothing polls a sheet), runs
//! [`SheetService::flush_sheet`] for each, several sheets side by side, and
//! deletes a request once its flush returned. A flush that failed leaves
//! its request to come back after `retry_after` (in AWS: the visibility
//! timeout), and after the queue's maxReceiveCount to its dead-letter
//! queue.

use redis::aio::ConnectionLike;
use sluice_domain::DelayQueue;
use sluice_domain::queue::{ReceiveRequest, ReceivedDelayedMessage};
use sluice_pipeline::SheetService;
use sluice_pipeline::sheet_io::FlushRequest;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How the worker pulls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushWorkerConfig {
    /// Flushes running at once (each holds one sheet).
    pub concurrency: usize,
    /// How long a received request stays invisible: above one flush run.
    pub visibility_timeout: Duration,
    /// Long-poll wait per receive; also how quickly a stop is noticed.
    pub wait: Duration,
    /// A failed flush's request comes back after this.
    pub retry_after: Duration,
}

impl Default for FlushWorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 16,
            visibility_timeout: Duration::from_secs(120),
            wait: Duration::from_secs(1),
            retry_after: Duration::from_secs(2),
        }
    }
}

/// What the worker has done so far.
#[derive(Debug, Default)]
pub struct FlushStats {
    pub flushes: AtomicU64,
    pub failed: AtomicU64,
    pub rows_appended: AtomicU64,
    pub calls: AtomicU64,
}

/// Runs flushes from `queue` until `stop` is cancelled, then waits for the
/// running ones.
pub async fn run_flush_worker<Q, C>(
    queue: Arc<Q>,
    sheet: SheetService<C>,
    config: FlushWorkerConfig,
    stats: Arc<FlushStats>,
    stop: CancellationToken,
) where
    Q: DelayQueue + 'static,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
    loop {
        if stop.is_cancelled() {
            break;
        }
        let Ok(permit) = slots.clone().acquire_many_owned(1).await else { break };
        let max = (slots.available_permits() + 1).min(10) as u8;
        drop(permit);
        let request = match ReceiveRequest::new(max, config.visibility_timeout, config.wait) {
            Ok(request) => request,
            Err(e) => {
                tracing::error!(error = %e, "flush worker misconfigured");
                return;
            }
        };
        let messages = tokio::select! {
            received = queue.receive(request) => received,
            () = stop.cancelled() => continue,
        };
        let messages = match messages {
            Ok(messages) => messages,
            Err(e) => {
                tracing::warn!(error = %e, "flush queue receive failed");
                tokio::time::sleep(config.retry_after).await;
                continue;
            }
        };
        for message in messages {
            let Ok(permit) = slots.clone().acquire_owned().await else { break };
            let (queue, sheet, stats, retry_after) = (queue.clone(), sheet.clone(), stats.clone(), config.retry_after);
            tokio::spawn(async move {
                handle(&*queue, &sheet, &stats, message, retry_after).await;
                drop(permit);
            });
        }
    }
    // Wait for the running flushes: every permit back.
    let _ = slots.acquire_many(config.concurrency.max(1) as u32).await;
}

async fn handle<Q, C>(
    queue: &Q,
    sheet: &SheetService<C>,
    stats: &FlushStats,
    message: ReceivedDelayedMessage,
    retry: Duration,
) where
    Q: DelayQueue,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let request: FlushRequest = match serde_json::from_str(&message.body) {
        Ok(request) => request,
        Err(e) => {
            // Never becomes readable: let the queue's redrive park it.
            tracing::error!(error = %e, message_id = message.message_id.as_str(), "unreadable flush request");
            return;
        }
    };
    stats.flushes.fetch_add(1, Ordering::Relaxed);
    match sheet.flush_sheet(request).await {
        Ok(output) => {
            stats.rows_appended.fetch_add(output.appended_rows, Ordering::Relaxed);
            stats.calls.fetch_add(output.calls, Ordering::Relaxed);
            if let Err(e) = queue.delete(&message.receipt).await {
                tracing::warn!(error = %e, "flush request not deleted; it will run again (harmlessly)");
            }
        }
        Err(e) => {
            stats.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(kind = %e.kind, cause = %e.cause, "flush failed; its request comes back");
            let _ = queue.change_visibility(&message.receipt, retry).await;
        }
    }
}
