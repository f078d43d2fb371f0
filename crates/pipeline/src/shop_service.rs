//! [`ShopService`]: the shop path's steps (`token_step`, `fetch_step`,
//! `store_step`) and its Cafe24 fetch (`upstream_fetch`) over the
//! [`ServiceCore`], with the parts only that path uses: each mall's Admin
//! API bucket, the snapshot streams, the parked malls' held events
//! (`mall_park`), the alerts and the Cafe24 client.

use crate::alerts::Alerter;
use crate::service_core::{ServiceCore, now_ms};
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use sluice_cafe24::Cafe24Client;
use sluice_domain::{CatchUpRequests, StepError};
use sluice_redis::{Backlogs, Bucket, Buckets, DenyCache, ParkedMalls, SnapshotStore, Tag, Traces};
use std::sync::Arc;

/// The name of a mall's Admin API bucket, lock and token under its tag.
pub const ADMIN_API: &str = sluice_redis::enrolment::CAFE24_TOKEN;

/// The shop path's service.
#[derive(Debug, Clone)]
pub struct ShopService<C> {
    /// What both paths share (settings, tokens, traces, counts), named at
    /// each use: `self.core.tokens`, never `self.tokens`.
    pub(crate) core: ServiceCore<C>,
    pub(crate) buckets: Buckets<C>,
    pub(crate) snapshots: SnapshotStore<C>,
    pub(crate) backlogs: Backlogs<C>,
    /// Parked malls' events, held in order until a new token.
    pub(crate) holds: ParkedMalls<C>,
    pub(crate) alerter: Alerter<C>,
    pub(crate) cafe24: Cafe24Client,
    /// With flow control: where the fetch step's hand-overs ask for a
    /// catch-up run (see `upstream_fetch`). `None`: a fetch waits for its mall's
    /// bucket, inline or in a Wait state.
    pub(crate) hand_over: Option<Arc<dyn CatchUpRequests>>,
}

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub fn new(core: ServiceCore<C>, cafe24: Cafe24Client) -> Result<Self, StepError> {
        let snapshots = SnapshotStore::new(core.conn.clone(), core.keyspace.clone(), core.config.snapshot_shards)?;
        let buckets = shop_buckets(&core);
        // A bucket setting that cannot work is refused now, not per item.
        buckets.bucket(&Tag::for_mall("startup-check"), ADMIN_API, core.config.bucket)?;
        let backlogs = Backlogs::new(core.conn.clone(), core.keyspace.clone(), core.config.catch_up.flow.clone())?;
        let holds = ParkedMalls::new(core.conn.clone(), core.keyspace.clone());
        let alerter = Alerter::new(core.conn.clone(), core.keyspace.clone(), None, core.config.sheets.alert_window);
        Ok(Self { core, buckets, snapshots, backlogs, holds, alerter, cafe24, hand_over: None })
    }

    /// Sends alerts (a mall parked and back, its fetches failing and
    /// working again) to a Slack-compatible incoming-webhook URL.
    pub fn with_alert_url(mut self, url: Option<String>) -> Self {
        self.alerter = self.alerter.with_url(url);
        self
    }

    /// Flow control's other half: a fetch its mall's bucket cannot serve
    /// now goes to the mall's dirty set, drained through `requests`,
    /// instead of holding its pipe while it waits.
    pub fn with_hand_over(mut self, requests: Arc<dyn CatchUpRequests>) -> Self {
        self.hand_over = Some(requests);
        self
    }

    /// The core this service runs on: the plan and failure steps, the
    /// settings, the counts, the traces, the group ledger.
    pub fn core(&self) -> &ServiceCore<C> {
        &self.core
    }

    /// The events' traces (`sluice trace`, the drain's `stored` entries).
    pub fn traces(&self) -> &Traces<C> {
        self.core.traces()
    }

    /// What the steps counted, shared, for a reader that outlives this
    /// borrow (`sluice dev`'s `GET /metrics`).
    pub fn metrics_handle(&self) -> Arc<StepMetrics> {
        self.core.metrics_handle()
    }

    pub fn snapshots(&self) -> &SnapshotStore<C> {
        &self.snapshots
    }

    /// Stores a mall's token pair (a sandbox's grant, a test's seed). A
    /// parked mall stays parked: `sluice tokens set` goes through
    /// [`CatchUpService::set_token`](crate::CatchUpService::set_token),
    /// which also releases its held events.
    pub async fn set_token(&self, mall_id: &str, token: &sluice_redis::StoredToken) -> Result<(), StepError> {
        self.core.tokens.put(&Tag::for_mall(mall_id), ADMIN_API, token, now_ms()).await.map_err(StepError::from)
    }

    pub(crate) fn bucket(&self, mall_id: &str) -> Result<Bucket, StepError> {
        mall_bucket(&self.buckets, &self.core.config, mall_id)
    }
}

/// The malls' buckets. One deny cache per process: a mall just denied is
/// answered from memory for every item of it until its wait is over.
pub(crate) fn shop_buckets<C: ConnectionLike + Clone + Send + Sync>(core: &ServiceCore<C>) -> Buckets<C> {
    Buckets::new(core.conn.clone(), core.keyspace.clone(), Arc::new(DenyCache::new()))
}

/// `mall_id`'s Admin API bucket under the configured limits.
pub(crate) fn mall_bucket<C: ConnectionLike + Clone + Send + Sync>(
    buckets: &Buckets<C>,
    config: &crate::PipelineConfig,
    mall_id: &str,
) -> Result<Bucket, StepError> {
    buckets.bucket(&Tag::for_mall(mall_id), ADMIN_API, config.bucket).map_err(StepError::from)
}
