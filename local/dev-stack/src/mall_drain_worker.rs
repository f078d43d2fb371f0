//! The mall drain worker: receives "drain mall M" requests from the mall
//! drain queue through the [`delay_worker`](crate::delay_worker) loop and
//! runs [`MallDrainService::drain_mall`] for each, several malls side by
//! side. In AWS this is the mall drain function's SQS event source.

use crate::delay_worker::{Handled, RequestHandler};
use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use sluice_domain::MallDrainRequest;
use sluice_pipeline::{MallDrainService, NextRun};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the worker has done so far.
#[derive(Debug, Default)]
pub struct MallDrainStats {
    pub runs: AtomicU64,
    pub failed: AtomicU64,
    /// Dirty resources stored.
    pub stored: AtomicU64,
    /// Chains that ended with their mall's set empty.
    pub idle: AtomicU64,
}

/// The mall drain worker's handler, for [`run_delay_worker`](crate::delay_worker::run_delay_worker).
#[derive(Debug)]
pub struct Drainer<C> {
    pub service: MallDrainService<C>,
    pub stats: Arc<MallDrainStats>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RequestHandler for Drainer<C> {
    fn name(&self) -> &'static str {
        "mall drain"
    }

    fn handle(&self, body: String) -> BoxFuture<'_, Handled> {
        Box::pin(async move {
            let Ok(request) = MallDrainRequest::from_body(&body) else { return Handled::Unreadable };
            self.stats.runs.fetch_add(1, Ordering::Relaxed);
            match self.service.drain_mall(request).await {
                Ok(output) => {
                    self.stats.stored.fetch_add(output.stored as u64, Ordering::Relaxed);
                    if output.next == NextRun::Idle {
                        self.stats.idle.fetch_add(1, Ordering::Relaxed);
                    }
                    Handled::Done
                }
                Err(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(kind = %e.kind, cause = %e.cause, "mall drain run failed; its request comes back");
                    Handled::Failed
                }
            }
        })
    }
}
