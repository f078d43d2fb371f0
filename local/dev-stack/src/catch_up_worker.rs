//! The catch-up worker: receives "catch up mall M" requests from the mall
//! drain queue through the [`delay_worker`](crate::delay_worker) loop and
//! runs [`CatchUpService::catch_up`] for each, several malls side by
//! side. In AWS this is the catch-up function's SQS event source.

use crate::delay_worker::{Handled, RequestHandler};
use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use sluice_domain::CatchUpRequest;
use sluice_pipeline::{CatchUpService, NextRun};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the worker has done so far.
#[derive(Debug, Default)]
pub struct CatchUpStats {
    pub runs: AtomicU64,
    pub failed: AtomicU64,
    /// Dirty resources stored.
    pub stored: AtomicU64,
    /// Chains that ended with their mall's set empty.
    pub idle: AtomicU64,
}

/// The catch-up worker's handler, for [`run_delay_worker`](crate::delay_worker::run_delay_worker).
#[derive(Debug)]
pub struct CatchUpWorker<C> {
    pub service: CatchUpService<C>,
    pub stats: Arc<CatchUpStats>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RequestHandler for CatchUpWorker<C> {
    fn name(&self) -> &'static str {
        "catch-up"
    }

    fn handle(&self, body: String) -> BoxFuture<'_, Handled> {
        Box::pin(async move {
            let Ok(request) = CatchUpRequest::from_body(&body) else { return Handled::Unreadable };
            self.stats.runs.fetch_add(1, Ordering::Relaxed);
            match self.service.catch_up(request).await {
                Ok(output) => {
                    self.stats.stored.fetch_add(output.stored as u64, Ordering::Relaxed);
                    if output.next == NextRun::Idle {
                        self.stats.idle.fetch_add(1, Ordering::Relaxed);
                    }
                    Handled::Done
                }
                Err(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(kind = %e.kind, cause = %e.cause, "catch-up run failed; its request comes back");
                    Handled::Failed
                }
            }
        })
    }
}
