//! The catch-up run: one "catch up mall M" request, taken from the delay
//! queue, drains as much of the mall's dirty set (see `sluice-redis`'s
//! `backlog` for the design and its diagram) as the mall's bucket allows
//! right now, then queues the next request while resources are left.
//!
//! 1. The oldest `per_run` dirty resources are read; nothing leaves yet.
//! 2. One unit of the mall's bucket per resource, until the bucket says
//!    wait: the run never calls more than the budget allows, and a
//!    bucket shared with the mall's per-event fetches stays one bucket.
//!    A short wait (up to `inline_wait_max`) is waited within the run,
//!    which goes on for up to `run_budget`, fetching while it waits.
//! 3. Each granted resource is fetched (at most `fetch_concurrency` at
//!    once) and its snapshot stored exactly as the fetch and store steps
//!    do (the same `upstream_fetch` path, the same store), answering the
//!    events the dirty entry kept. Then the stored resources leave the
//!    set, each only if no webhook came for it since step 1: otherwise
//!    it stays and is fetched again, so the stored snapshot reflects the
//!    upstream at or after its last webhook.
//! 4. The chain: the set empty → the chain ends; otherwise the next
//!    request is queued with the bucket's wait as its delay (or a backoff
//!    when upstream failures stored nothing), unless another confirmed
//!    chain carries the mall.
//!
//! Before step 1, a run releases the events held for a parked mall whose
//! new token is set (`mall_release`, oldest first); a run for a mall that
//! is still parked, or whose token or call (403) Cafe24 refuses, stops
//! without failing (`NextRun::Parked`) and without calling again: nothing
//! goes to the dead-letter queue, the dirty set waits, and `sluice tokens
//! set` queues the run that goes on.
//!
//! A run that fails returns an error and stores nothing more; its request
//! comes back after the queue's visibility timeout (the catch-up queue's
//! redrive policy dead-letters it after its maxReceiveCount), and what it had
//! stored has left the set already.

use crate::config::CatchUpConfig;
use crate::mall_release::Release;
use crate::shop_service::ShopService;
use crate::token_step::TokenState;
use crate::upstream_fetch::{Caller, Fetched, ResourceFetch};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use redis::aio::ConnectionLike;
use serde::Serialize;
use sluice_domain::{CatchUpRequest, CatchUpRequests, ErrorKind, ResourceKind, ResourceRef, StepError};
use sluice_redis::{Acquire, Admission, Bucket, ChainNext, DirtyResource, Tag};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one run did, and what comes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatchUpOutput {
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
    /// The mall is parked (its token refused): nothing more until
    /// `sluice tokens set` queues a run.
    Parked,
}

/// What a run did while it held the mall's catch-up lock.
enum Ran {
    Parked,
    Went { delay: Option<Duration>, stored: usize, tried: usize },
}

/// What became of one dirty resource a run tried.
enum Tried {
    /// Its snapshot is stored: it may leave the set.
    Stored(DirtyResource),
    /// Not stored this time (throttled, or a 5xx answered): it stays in
    /// the set for a later run.
    Later,
    /// Cafe24 refused the call (403) and the mall is parked.
    Parked,
}

/// The shop service with what a catch-up run needs besides: where the next
/// request goes.
#[derive(Debug, Clone)]
pub struct CatchUpService<C> {
    shop: ShopService<C>,
    requests: Arc<dyn CatchUpRequests>,
}

impl<C: ConnectionLike + Clone + Send + Sync> CatchUpService<C> {
    pub fn new(shop: ShopService<C>, requests: Arc<dyn CatchUpRequests>) -> Self {
        Self { shop, requests }
    }

    pub fn shop(&self) -> &ShopService<C> {
        &self.shop
    }

    pub(crate) fn requests(&self) -> &dyn CatchUpRequests {
        self.requests.as_ref()
    }

    pub(crate) fn settings(&self) -> &CatchUpConfig {
        &self.shop.core.config.catch_up
    }

    pub async fn catch_up(&self, request: CatchUpRequest) -> Result<CatchUpOutput, StepError> {
        let tag = Tag::for_mall(&request.mall_id);
        // One run per mall at a time: two would read the same oldest
        // resources and spend the bucket fetching them twice. A run that
        // finds another running ends at once (its chain, if it carries
        // one, comes back in a second).
        let lease = match self.shop.core.locks.acquire(&tag, CATCH_UP_LOCK, self.settings().run_budget * 2).await? {
            Acquire::Acquired(lease) => lease,
            Acquire::Busy { .. } => return self.carry(&request, &tag, Some(Duration::from_secs(1)), 0, 0).await,
        };
        let ran = self.run_holding(&request, &tag).await;
        if let Err(e) = self.shop.core.locks.release(&lease).await {
            tracing::warn!(mall = request.mall_id, error = %e, "catch-up lock not released; it lapses");
        }
        match ran? {
            // The chain stays as it is: webhooks deferred meanwhile see it
            // and start no run that would stop here again.
            Ran::Parked => {
                let left = self.shop.backlogs.size(&tag).await?.dirty;
                Ok(CatchUpOutput { stored: 0, retried: 0, left, next: NextRun::Parked })
            }
            Ran::Went { delay, stored, tried } => self.carry(&request, &tag, delay, stored, tried - stored).await,
        }
    }

    /// The held events, then steps 1 to 3, holding the mall's catch-up lock:
    /// the next run's delay, resources stored and resources tried, or the
    /// mall is parked.
    async fn run_holding(&self, request: &CatchUpRequest, tag: &Tag) -> Result<Ran, StepError> {
        let shop = &self.shop;
        let mall = request.mall_id.as_str();
        let tag = tag.clone();
        match self.release_held(mall, &tag).await? {
            Release::Parked => return Ok(Ran::Parked),
            Release::Later(delay) => return Ok(Ran::Went { delay: Some(delay), stored: 0, tried: 0 }),
            Release::Done => {}
        }
        match shop.ensure_mall_token(mall, None, &request.token).await? {
            TokenState::Ready => {}
            // Another worker is refreshing the token: come back after it.
            TokenState::Wait(_) => {
                return Ok(Ran::Went { delay: Some(self.settings().failure_backoff), stored: 0, tried: 0 });
            }
            TokenState::Refused(reason) => {
                shop.park_mall(mall, &reason, None).await?;
                return Ok(Ran::Parked);
            }
        }
        let mut pending: VecDeque<DirtyResource> = shop.backlogs.peek(&tag, self.settings().per_run).await?.into();
        let bucket = shop.bucket(mall)?;
        let started = Instant::now();
        let (mut stored, mut tried, mut stale_token, mut parked) = (0, 0, None, false);
        let mut wait: Option<Duration>;
        // Fetches run while the next unit of budget is waited for, so a
        // bucket that refills between two calls is used as it refills.
        let mut fetching = FuturesUnordered::new();
        let concurrency = self.settings().fetch_concurrency.max(1);
        loop {
            wait = None;
            while fetching.len() < concurrency && !pending.is_empty() {
                match shop.buckets.acquire(&bucket, 1).await? {
                    Admission::Admitted { .. } => {
                        let resource = pending.pop_front().expect("not empty");
                        tried += 1;
                        fetching.push(self.fetch_and_store(mall, &bucket, resource));
                    }
                    Admission::Denied { wait: w, .. } => {
                        wait = Some(w);
                        break;
                    }
                }
            }
            // A short wait is waited here, within the run's budget: a
            // queued request cannot come back sooner than a whole second,
            // and the bucket would go unused meanwhile.
            let nap = wait.filter(|w| shop.waits_inline(*w, started));
            if fetching.is_empty() && (pending.is_empty() || nap.is_none()) {
                break;
            }
            tokio::select! {
                Some(result) = fetching.next(), if !fetching.is_empty() => {
                    match result {
                        Ok(Tried::Stored(resource)) => {
                            stored += 1;
                            shop.backlogs.done(&tag, std::slice::from_ref(&resource)).await?;
                        }
                        Ok(Tried::Later) => {}
                        // Only a new grant mends a 403: no more calls this
                        // run (those in flight finish), and no later run
                        // until `sluice tokens set` queues one.
                        Ok(Tried::Parked) => {
                            parked = true;
                            pending.clear();
                        }
                        Err(e) if e.kind == ErrorKind::CredentialRejected => stale_token = Some(e),
                        Err(e) => tracing::warn!(mall, kind = %e.kind, cause = %e.cause, "a dirty resource was not fetched"),
                    }
                }
                () = tokio::time::sleep(nap.unwrap_or_default()), if nap.is_some() && !pending.is_empty() => {}
            }
        }
        if parked {
            return Ok(Ran::Parked);
        }
        if let Some(e) = stale_token {
            // The token was refused: refresh it now, so the next run uses
            // the new one (a revoked grant parks the mall here).
            let stale = e.cause.strip_prefix(STALE_PREFIX);
            if let TokenState::Refused(reason) = shop.ensure_mall_token(mall, stale, &request.token).await? {
                shop.park_mall(mall, &reason, None).await?;
                return Ok(Ran::Parked);
            }
        }
        let delay = match wait {
            // Out of budget for longer than the run may wait (or the run's
            // own budget is spent).
            Some(wait) if !pending.is_empty() => Some(next_run_delay(wait, shop.core.config.inline_wait_max)),
            _ if stored == 0 && tried > 0 => Some(self.settings().failure_backoff),
            // Everything read was tried: the next run reads on at once.
            _ => None,
        };
        Ok(Ran::Went { delay, stored, tried })
    }

    /// Fetches one dirty resource and stores its snapshot.
    async fn fetch_and_store(&self, mall: &str, bucket: &Bucket, dirty: DirtyResource) -> Result<Tried, StepError> {
        let shop = &self.shop;
        let resource = parse_resource(&dirty.resource)?;
        // The owner names the fetch for the store's idempotency: one per
        // (resource, change), so a run that dies after storing stores once.
        let owner = dirty.events.last().cloned().unwrap_or_else(|| format!("dirty:{}:{}", dirty.resource, dirty.seq));
        let answers = if dirty.events.is_empty() { vec![owner.clone()] } else { dirty.events.clone() };
        let fetch = ResourceFetch {
            bucket,
            mall,
            resource: &resource,
            owner: &owner,
            answers: &answers,
            caller: Caller::CatchUpRun { dirty: &dirty.resource },
        };
        match shop.fetch_resource(fetch).await? {
            Fetched::Left(reference) => {
                shop.store_snapshot(mall, &reference, &owner).await?;
                Ok(Tried::Stored(dirty))
            }
            Fetched::Unauthorized { fingerprint } => {
                Err(StepError::new(ErrorKind::CredentialRejected, format!("{STALE_PREFIX}{fingerprint}")))
            }
            Fetched::Parked => Ok(Tried::Parked),
            Fetched::Throttled { .. } => Ok(Tried::Later),
            Fetched::Failed(error) if error.kind.is_retryable() => {
                tracing::warn!(mall, resource = dirty.resource, cause = %error.cause, "fetch failed; a later run retries");
                Ok(Tried::Later)
            }
            Fetched::Failed(error) => Err(error),
        }
    }

    /// The run's end: the chain goes on (next request queued after
    /// `delay`), ends, or is another's.
    async fn carry(
        &self,
        request: &CatchUpRequest,
        tag: &Tag,
        delay: Option<Duration>,
        stored: usize,
        retried: usize,
    ) -> Result<CatchUpOutput, StepError> {
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
        Ok(CatchUpOutput { stored, retried, left, next })
    }
}

/// The delay to queue the next run with when the bucket has no unit for
/// `wait`. A wait the run could have napped through (up to `inline`) ended
/// it only because its time budget was spent: the next run starts at once
/// and naps itself. The delay queue counts whole seconds and rounds up
/// (SQS's `DelaySeconds`), so queueing such a wait left the bucket unused
/// for a second at every run's end (the shop bench's burst drained at 1.22
/// of the minimum). A longer wait is queued as it is: starting runs early
/// for it made runs that found the bucket still taken by the state
/// machine's fetches and ended with nothing done (five times the runs in
/// the bench's coalescing section, each a Lambda invocation in AWS).
fn next_run_delay(wait: Duration, inline: Duration) -> Duration {
    if wait <= inline { Duration::ZERO } else { wait }
}

/// The mall's lock that keeps its catch-up runs one at a time. Its key keeps
/// the name it had before the catch-up was called so: a run of the earlier
/// release and one of this release still exclude each other across a deploy.
const CATCH_UP_LOCK: &str = "mall-drain";

/// How a refused token's fingerprint travels from a fetch to the refresh.
const STALE_PREFIX: &str = "token refused: ";

/// `<kind>:<id>` as the coalescing gate names a resource.
fn parse_resource(name: &str) -> Result<ResourceRef, StepError> {
    let bad = || StepError::new(ErrorKind::Internal, format!("dirty resource {name:?} is not <kind>:<id>"));
    let (kind, id) = name.split_once(':').ok_or_else(bad)?;
    let kind = ResourceKind::ALL.into_iter().find(|k| k.as_str() == kind).ok_or_else(bad)?;
    Ok(ResourceRef { kind, id: id.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_the_next_run_can_nap_through_is_not_queued_as_a_whole_second() {
        let inline = Duration::from_secs(1);
        assert_eq!(next_run_delay(Duration::from_millis(50), inline), Duration::ZERO);
        assert_eq!(next_run_delay(Duration::from_millis(2300), inline), Duration::from_millis(2300));
    }
}
