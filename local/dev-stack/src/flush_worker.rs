//! The flush worker: what the flush function's SQS event source does in
//! AWS, on one machine. It receives flush requests from the flush queue
//! through the [`delay_worker`](crate::delay_worker) loop and runs
//! [`SheetService::flush_sheet`] for each, several sheets side by side.

use crate::delay_worker::{Handled, RequestHandler};
use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use sluice_pipeline::SheetService;
use sluice_pipeline::sheet_io::FlushRequest;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the worker has done so far.
#[derive(Debug, Default)]
pub struct FlushStats {
    pub flushes: AtomicU64,
    pub failed: AtomicU64,
    pub rows_appended: AtomicU64,
    pub calls: AtomicU64,
}

/// The flush worker's handler, for [`run_delay_worker`](crate::delay_worker::run_delay_worker).
#[derive(Debug)]
pub struct Flusher<C> {
    pub sheet: SheetService<C>,
    pub stats: Arc<FlushStats>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RequestHandler for Flusher<C> {
    fn name(&self) -> &'static str {
        "flush"
    }

    fn handle(&self, body: String) -> BoxFuture<'_, Handled> {
        Box::pin(async move {
            let request: FlushRequest = match serde_json::from_str(&body) {
                Ok(request) => request,
                Err(e) => {
                    tracing::error!(error = %e, "unreadable flush request");
                    return Handled::Unreadable;
                }
            };
            self.stats.flushes.fetch_add(1, Ordering::Relaxed);
            match self.sheet.flush_sheet(request).await {
                Ok(output) => {
                    self.stats.rows_appended.fetch_add(output.appended_rows, Ordering::Relaxed);
                    self.stats.calls.fetch_add(output.calls, Ordering::Relaxed);
                    Handled::Done
                }
                Err(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(kind = %e.kind, cause = %e.cause, "flush failed; its request comes back");
                    Handled::Failed
                }
            }
        })
    }
}
