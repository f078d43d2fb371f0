//! The mall drain worker: receives "drain mall M" requests from the mall
//! drain queue through the [`delay_worker`](crate::delay_worker) loop and
//! runs [`MallDrainService::drain_mall`] for each, several malls side by
//! side. In AWS this is the mall drain function's SQS event source.

use crate::delay_worker::{DelayWorkerConfig, Handled, RequestHandler, run_delay_worker};
use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use sluice_domain::{DelayQueue, MallDrainRequest};
use sluice_pipeline::{MallDrainService, NextRun};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

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

/// Runs drain requests from `queue` until `stop` is cancelled, then waits
/// for the running ones.
pub async fn run_mall_drain_worker<Q, C>(
    queue: Arc<Q>,
    service: MallDrainService<C>,
    config: DelayWorkerConfig,
    stats: Arc<MallDrainStats>,
    stop: CancellationToken,
) where
    Q: DelayQueue + 'static,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    run_delay_worker(queue, Arc::new(Drainer { service, stats }), config, stop).await;
}

struct Drainer<C> {
    service: MallDrainService<C>,
    stats: Arc<MallDrainStats>,
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
