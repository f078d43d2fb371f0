//! [`Steps`]: everything the steps need, built once per process (one Lambda
//! container, or `sluice dev`) and shared by every invocation.

use crate::alerts::Alerter;
use crate::config::PipelineConfig;
use crate::flush_trigger::FlushTrigger;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use sluice_cafe24::Cafe24Client;
use sluice_domain::StepError;
use sluice_redis::{
    Bucket, Buckets, CredentialState, DenyCache, Gates, GroupLedger, Keyspace, Locks, SheetBuffers, SheetState,
    SlidingWindowLimiter, SnapshotStore, Tag, TokenStore, Traces,
};
use sluice_sheets::SheetsClient;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The name of a mall's Admin API bucket, lock and token under its tag.
pub const ADMIN_API: &str = "cafe24";

/// The steps' shared services.
#[derive(Debug, Clone)]
pub struct Steps<C> {
    pub(crate) config: Arc<PipelineConfig>,
    pub(crate) buckets: Buckets<C>,
    pub(crate) locks: Locks<C>,
    pub(crate) gates: Gates<C>,
    pub(crate) tokens: TokenStore<C>,
    pub(crate) traces: Traces<C>,
    /// Which groups have events waiting (`sluice status`).
    pub(crate) groups: GroupLedger<C>,
    pub(crate) snapshots: SnapshotStore<C>,
    pub(crate) cafe24: Cafe24Client,
    pub(crate) buffers: SheetBuffers<C>,
    pub(crate) sheet_state: SheetState<C>,
    pub(crate) credentials: CredentialState<C>,
    /// The Google Sheets client; the sheet path needs it.
    pub(crate) sheets: Option<SheetsClient>,
    /// Counts for CloudWatch (EMF), shared by every clone.
    pub(crate) metrics: Arc<StepMetrics>,
    pub(crate) limiter: SlidingWindowLimiter<C>,
    pub(crate) alerter: Alerter<C>,
    /// How flushes are asked for; the sheet path needs it.
    pub(crate) flush_trigger: Option<Arc<dyn FlushTrigger>>,
}

impl<C: ConnectionLike + Clone + Send + Sync> Steps<C> {
    pub fn new(conn: C, keyspace: Keyspace, config: PipelineConfig, cafe24: Cafe24Client) -> Result<Self, StepError> {
        // One deny cache per process: a mall just denied is answered from
        // memory for every item of it until its wait is over.
        let deny = Arc::new(DenyCache::new());
        let snapshots =
            SnapshotStore::new(conn.clone(), keyspace.clone(), config.snapshot_shards).map_err(StepError::from)?;
        let buckets = Buckets::new(conn.clone(), keyspace.clone(), deny);
        // A bucket setting that cannot work is refused now, not per item.
        buckets.bucket(&Tag::for_mall("startup-check"), ADMIN_API, config.bucket).map_err(StepError::from)?;
        let sheets = &config.sheets;
        let alerter = Alerter::new(conn.clone(), keyspace.clone(), None, sheets.alert_window);
        Ok(Self {
            buffers: SheetBuffers::new(conn.clone(), keyspace.clone()),
            sheet_state: SheetState::new(conn.clone(), keyspace.clone()),
            credentials: CredentialState::new(conn.clone(), keyspace.clone()),
            sheets: None,
            metrics: Arc::default(),
            limiter: SlidingWindowLimiter::new(conn.clone(), keyspace.clone(), Arc::new(DenyCache::new())),
            alerter,
            flush_trigger: None,
            buckets,
            locks: Locks::new(conn.clone(), keyspace.clone()),
            gates: Gates::new(conn.clone(), keyspace.clone()),
            tokens: TokenStore::new(conn.clone(), keyspace.clone()),
            groups: GroupLedger::new(conn.clone(), keyspace.clone()),
            traces: Traces::new(conn, keyspace, config.trace_retention),
            snapshots,
            cafe24,
            config: Arc::new(config),
        })
    }

    /// Lets the sheet path ask for flushes.
    pub fn with_flush_trigger(mut self, trigger: Arc<dyn FlushTrigger>) -> Self {
        self.flush_trigger = Some(trigger);
        self
    }

    /// Lets the sheet path call Google Sheets.
    pub fn with_sheets(mut self, client: SheetsClient) -> Self {
        self.sheets = Some(client);
        self
    }

    /// Sends alerts to a Slack-compatible incoming-webhook URL.
    pub fn with_alert_url(mut self, url: Option<String>) -> Self {
        self.alerter = self.alerter.with_url(url);
        self
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

    pub fn snapshots(&self) -> &SnapshotStore<C> {
        &self.snapshots
    }

    /// Stores a mall's token pair (`sluice tokens set`, a sandbox's grant).
    pub async fn set_token(&self, mall_id: &str, token: &sluice_redis::StoredToken) -> Result<(), StepError> {
        self.tokens.put(&Tag::for_mall(mall_id), ADMIN_API, token, now_ms()).await.map_err(StepError::from)
    }

    pub(crate) fn bucket(&self, mall_id: &str) -> Result<Bucket, StepError> {
        self.buckets.bucket(&Tag::for_mall(mall_id), ADMIN_API, self.config.bucket).map_err(StepError::from)
    }

    /// Records a trace entry; a trace that cannot be written must not fail
    /// the work it describes, so the error is logged instead.
    pub(crate) async fn trace(&self, event_id: &str, stage: &str, detail: serde_json::Value) {
        if let Err(e) = self.traces.record(event_id, stage, &detail).await {
            tracing::warn!(event_id, stage, error = %e, "trace not recorded");
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
