//! [`ServiceCore`]: what both services share, built once per process (one
//! Lambda container, or `sluice dev`) and shared by every invocation: the
//! settings, the Redis primitives both paths use (locks, gates, tokens),
//! the traces, the group ledger and the counts. The two steps that serve
//! both paths are its own: the plan (`plan_step`) routes shop and sheet
//! items alike, and the failure step (`failure_step`) records any item's
//! failure.

use crate::config::PipelineConfig;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use sluice_redis::{Episodes, Gates, GroupLedger, Keyspace, Locks, TokenStore, Traces};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The shared core. Cheap to clone: the Redis handles are clones of one
/// connection and the settings and counts sit behind `Arc`s, so every
/// service built on it reads and counts the same.
///
/// Each service holds it as a named field, `core`, and says so at every
/// use (`self.core.config`, `self.core.trace(…)`): a reader sees at once
/// which parts are the service's own and which every service shares. No
/// `Deref` to it: a service is not a pointer to its core, and a `Deref`
/// would make fields the service does not have look like its own. Code
/// outside the crate reaches it through each service's `core()`.
#[derive(Debug, Clone)]
pub struct ServiceCore<C> {
    /// The connection and key prefix the services build their parts on.
    pub(crate) conn: C,
    pub(crate) keyspace: Keyspace,
    pub(crate) config: Arc<PipelineConfig>,
    /// A mall's token refresh, a sheet's flush: one holder at a time.
    pub(crate) locks: Locks<C>,
    /// A resource's coalescing mark, a sheet's pending flush request.
    pub(crate) gates: Gates<C>,
    /// Cafe24 tokens under a mall's tag, Google tokens under a credential's.
    pub(crate) tokens: TokenStore<C>,
    pub(crate) traces: Traces<C>,
    /// Which groups have events waiting (`sluice status`).
    pub(crate) groups: GroupLedger<C>,
    /// Failures in a row (a mall's fetches, a sheet's flushes), for alerts.
    pub(crate) episodes: Episodes<C>,
    /// Counts for CloudWatch (EMF), shared by every clone.
    pub(crate) metrics: Arc<StepMetrics>,
}

impl<C: ConnectionLike + Clone + Send + Sync> ServiceCore<C> {
    pub fn new(conn: C, keyspace: Keyspace, config: PipelineConfig) -> Self {
        Self {
            locks: Locks::new(conn.clone(), keyspace.clone()),
            gates: Gates::new(conn.clone(), keyspace.clone()),
            tokens: TokenStore::new(conn.clone(), keyspace.clone()),
            groups: GroupLedger::new(conn.clone(), keyspace.clone()),
            episodes: Episodes::new(conn.clone(), keyspace.clone()),
            traces: Traces::new(conn.clone(), keyspace.clone(), config.trace_retention),
            conn,
            keyspace,
            metrics: Arc::default(),
            config: Arc::new(config),
        }
    }

    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// What the steps counted since the last take.
    pub fn metrics(&self) -> &StepMetrics {
        &self.metrics
    }

    /// The same counts, shared, for a reader that outlives this borrow
    /// (`sluice dev`'s `GET /metrics`).
    pub fn metrics_handle(&self) -> Arc<StepMetrics> {
        self.metrics.clone()
    }

    pub fn traces(&self) -> &Traces<C> {
        &self.traces
    }

    /// Which groups have events waiting in the queue.
    pub fn group_ledger(&self) -> &GroupLedger<C> {
        &self.groups
    }

    /// Records a trace entry; a trace that cannot be written must not fail
    /// the work it describes, so the error is logged instead.
    pub(crate) async fn trace(&self, event_id: &str, stage: &str, detail: serde_json::Value) {
        if let Err(e) = self.traces.record(event_id, stage, &detail).await {
            tracing::warn!(event_id, stage, error = %e, "trace not recorded");
        }
    }

    /// [`Self::trace`] for many entries at once (a batch's rows, the
    /// events a fetch answers), logged likewise if it cannot be written.
    pub(crate) async fn trace_all(&self, ids: &[String], stage: &str, detail: &serde_json::Value) {
        if let Err(e) = self.traces.record_all(ids, stage, detail).await {
            tracing::warn!(stage, entries = ids.len(), error = %e, "traces not recorded");
        }
    }

    /// The item's work is done: its event no longer waits in its group.
    /// Only `sluice status` reads this, so a failure is logged, not raised.
    pub(crate) async fn item_done(&self, work: &sluice_domain::WorkItem) {
        let group = work.group_key();
        if let Err(e) = self.groups.done(group.as_str(), work.event_id()).await {
            tracing::warn!(event_id = work.event_id(), error = %e, "group ledger not updated");
        }
    }
}

/// Milliseconds since the epoch, by this machine's clock (token expiry is
/// stated in wall-clock time by the upstream).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Whole seconds for a Wait state: rounded up, at least one.
pub(crate) fn wait_seconds(wait: std::time::Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}
