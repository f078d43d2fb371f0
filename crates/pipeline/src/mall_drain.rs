//! The mall drain run: one "drain mall M" request, taken from the delay
//! queue, drains as much of the mall's dirty set (see `sluice-redis`'s
//! `backlog` for the design and its diagram) as the mall's bucket allows
//! right now, then queues the next request while resources are left.
//!
//! 1. The oldest `per_run` dirty resources are read; nothing leaves yet.
//! 2. One unit of the mall's bucket per resource, until the bucket says
//!    wait: the run never calls more than the budget allows, and a
//!    bucket shared with the mall's per-event fetches stays one bucket.
//! 3. Each granted resource is fetched (at most `fetch_concurrency` at
//!    once) and its snapshot stored exactly as the fetch and store steps
//!    do, answering the events the dirty entry kept. Then the stored
//!    resources leave the set, each only if no webhook came for it since
//!    step 1: otherwise it stays and is fetched again, so the stored
//!    snapshot reflects the upstream at or after its last webhook.
//! 4. The chain: the set empty → the chain ends; otherwise the next
//!    request is queued with the bucket's wait as its delay (or a backoff
//!    when upstream failures stored nothing), unless another confirmed
//!    chain carries the mall.
//!
//! A run that fails returns an error and stores nothing more; its request
//! comes back after the queue's visibility timeout (the flush queue's
//! redrive policy parks it after its maxReceiveCount), and what it had
//! stored has left the set already.

use crate::config::MallDrainConfig;
use crate::fetch_step::Called;
use crate::shop_service::ShopService;
use futures::StreamExt;
use redis::aio::ConnectionLike;
use serde::Serialize;
use serde_json::json;
use sluice_domain::{DrainRequests, ErrorKind, MallDrainRequest, ResourceKind, ResourceRef, StepError};
use sluice_redis::{Admission, ChainNext, DirtyResource, Tag};
use std::sync::Arc;
use std::time::Duration;

/// What one run did, and what comes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MallDrainOutput {
    /// Resources whose snapshot this run stored and that left the set.
    pub stored: usize,
    /// Resources fetched but refetched later (a webhook came meanwhile),
    /// throttled, or failed upstream.
    pub retried: usize,
    /// Resources left in the set after the run.
    pub left: u64,
    pub next: NextRun,
}

/// Where the chain goes after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "next", rename_all = "snake_case")]
pub enum NextRun {
    /// The set is empty: the chain ended.
    Idle,
    /// The next request is queued, due after `delay_ms`.
    Later { delay_ms: u64 },
    /// Another chain carries the mall.
    Stopped,
}

/// The shop service with what a drain run needs besides: where the next
/// request goes.
#[derive(Debug, Clone)]
pub struct MallDrainService<C> {
    shop: ShopService<C>,
    requests: Arc<dyn DrainRequests>,
}

impl<C: ConnectionLike + Clone + Send + Sync> MallDrainService<C> {
    pub fn new(shop: ShopService<C>, requests: Arc<dyn DrainRequests>) -> Self {
        Self { shop, requests }
    }

    pub fn shop(&self) -> &ShopService<C> {
        &self.shop
    }

    fn settings(&self) -> &MallDrainConfig {
        &self.shop.config.mall_drain
    }

    pub async fn drain_mall(&self, request: MallDrainRequest) -> Result<MallDrainOutput, StepError> {
        let shop = &self.shop;
        let mall = request.mall_id.as_str();
        let tag = Tag::for_mall(mall);
        if shop.ensure_mall_token(mall, None, &request.token).await?.wait_seconds > 0 {
            // Another worker is refreshing the token: come back after it.
            return self.carry(&request, &tag, Some(self.settings().failure_backoff), 0, 0).await;
        }
        let dirty = shop.backlogs.peek(&tag, self.settings().per_run).await?;
        let bucket = shop.bucket(mall)?;
        let mut granted = Vec::with_capacity(dirty.len());
        let mut wait = None;
        for resource in dirty {
            match shop.buckets.acquire(&bucket, 1).await? {
                Admission::Admitted { .. } => granted.push(resource),
                Admission::Denied { wait: w, .. } => {
                    wait = Some(w);
                    break;
                }
            }
        }
        let tried = granted.len();
        let results: Vec<Result<Option<DirtyResource>, StepError>> = futures::stream::iter(granted)
            .map(|resource| self.fetch_and_store(mall, &bucket, resource))
            .buffer_unordered(self.settings().fetch_concurrency.max(1))
            .collect()
            .await;
        let mut stored = Vec::with_capacity(tried);
        let mut stale_token = None;
        for result in results {
            match result {
                Ok(Some(resource)) => stored.push(resource),
                Ok(None) => {}
                Err(e) if e.kind == ErrorKind::CredentialRejected => stale_token = Some(e),
                Err(e) => tracing::warn!(mall, kind = %e.kind, cause = %e.cause, "a dirty resource was not fetched"),
            }
        }
        if !stored.is_empty() {
            shop.backlogs.done(&tag, &stored).await?;
        }
        if let Some(e) = stale_token {
            // The token was refused: refresh it now, so the next run uses
            // the new one (a revoked grant fails here, and the run's
            // request comes back until it is parked).
            shop.ensure_mall_token(mall, e.cause.strip_prefix(STALE_PREFIX), &request.token).await?;
        }
        let delay = match wait {
            Some(wait) => Some(wait),
            None if stored.is_empty() && tried > 0 => Some(self.settings().failure_backoff),
            None => None,
        };
        self.carry(&request, &tag, delay, stored.len(), tried - stored.len()).await
    }

    /// Fetches one dirty resource and stores its snapshot. `Ok(None)`: not
    /// stored this time (throttled, or a 5xx answered), left for a later run.
    async fn fetch_and_store(
        &self,
        mall: &str,
        bucket: &sluice_redis::Bucket,
        dirty: DirtyResource,
    ) -> Result<Option<DirtyResource>, StepError> {
        let shop = &self.shop;
        let resource = parse_resource(&dirty.resource)?;
        // The owner names the fetch for the store's idempotency: one per
        // (resource, change), so a run that dies after storing stores once.
        let owner = dirty.events.last().cloned().unwrap_or_else(|| format!("dirty:{}:{}", dirty.resource, dirty.seq));
        let answers = if dirty.events.is_empty() { vec![owner.clone()] } else { dirty.events.clone() };
        let call = shop.call_upstream(bucket, mall, &resource, &answers).await?;
        let detail = json!({"result": call.result, "by": "mall_drain", "resource": dirty.resource});
        if let Err(e) = shop.traces.record_all(&answers, "fetch", &detail).await {
            tracing::warn!(mall, error = %e, "trace not recorded");
        }
        match call.outcome {
            Called::Fetched(snapshot) => {
                let reference = shop.leave(&owner, *snapshot).await?;
                shop.store_snapshot(mall, &reference, &owner).await?;
                Ok(Some(dirty))
            }
            Called::Unauthorized { fingerprint } => {
                Err(StepError::new(ErrorKind::CredentialRejected, format!("{STALE_PREFIX}{fingerprint}")))
            }
            Called::Throttled { .. } => Ok(None),
            Called::Failed(error) if error.kind.is_retryable() => {
                tracing::warn!(mall, resource = dirty.resource, cause = %error.cause, "fetch failed; a later run retries");
                Ok(None)
            }
            Called::Failed(error) => Err(error),
        }
    }

    /// The run's end: the chain goes on (next request queued after
    /// `delay`), ends, or is another's.
    async fn carry(
        &self,
        request: &MallDrainRequest,
        tag: &Tag,
        delay: Option<Duration>,
        stored: usize,
        retried: usize,
    ) -> Result<MallDrainOutput, StepError> {
        let backlogs = &self.shop.backlogs;
        let next = match backlogs.next(tag, &request.token, self.settings().chain_lease).await? {
            ChainNext::Idle => NextRun::Idle,
            ChainNext::Stop => NextRun::Stopped,
            ChainNext::Continue => {
                let delay = delay.unwrap_or_default();
                self.requests.request(request, delay).await?;
                if !backlogs.confirm_chain(tag, &request.token).await? {
                    tracing::debug!(mall = request.mall_id, "another run carries the chain now");
                }
                NextRun::Later { delay_ms: delay.as_millis() as u64 }
            }
        };
        let left = if next == NextRun::Idle { 0 } else { backlogs.size(tag).await?.dirty };
        Ok(MallDrainOutput { stored, retried, left, next })
    }
}

/// How a refused token's fingerprint travels from a fetch to the refresh.
const STALE_PREFIX: &str = "token refused: ";

/// `<kind>:<id>` as the coalescing gate names a resource.
fn parse_resource(name: &str) -> Result<ResourceRef, StepError> {
    let bad = || StepError::new(ErrorKind::Internal, format!("dirty resource {name:?} is not <kind>:<id>"));
    let (kind, id) = name.split_once(':').ok_or_else(bad)?;
    let kind = ResourceKind::ALL.into_iter().find(|k| k.as_str() == kind).ok_or_else(bad)?;
    Ok(ResourceRef { kind, id: id.to_owned() })
}
