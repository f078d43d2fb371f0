//! Steps 1 and 2 of `upstream_fetch` for an item of the queue: a unit of
//! its mall's bucket (waited for, or handed over to the mall's dirty set)
//! and the events coalesced into its fetch. A catch-up run takes its units
//! itself, for many resources at once, and its dirty entries carry their
//! events already.

use crate::shop_service::ShopService;
use crate::step_io::FetchOutput;
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{CatchUpRequests, ShopWork, StepError, WorkItem};
use sluice_redis::{Admission, Bucket, Tag};
use std::time::{Duration, Instant};

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    /// Takes one unit of the mall's bucket, waiting here for up to the
    /// inline maximum (and within the step's wait budget) when `may_wait`.
    /// `Some(wait)`: the caller must come back after it.
    pub(super) async fn take_budget(
        &self,
        bucket: &Bucket,
        started: Instant,
        may_wait: bool,
    ) -> Result<Option<Duration>, StepError> {
        loop {
            match self.buckets.acquire(bucket, 1).await? {
                Admission::Admitted { .. } => return Ok(None),
                Admission::Denied { wait, .. } => {
                    if !(may_wait && self.waits_inline(wait, started)) {
                        return Ok(Some(wait));
                    }
                    self.wait_inline(wait).await;
                }
            }
        }
    }

    /// Waits for the mall's budget here, counted.
    pub(super) async fn wait_inline(&self, wait: Duration) {
        self.core.metrics.waited(wait);
        tokio::time::sleep(wait).await;
    }

    /// Clears the resource's pending mark (if this event owns it) and
    /// returns every event the coming fetch answers.
    pub(super) async fn take_coalesced(&self, work: &ShopWork) -> Result<Vec<String>, StepError> {
        let tag = Tag::for_mall(&work.event.mall_id);
        let mut answers = vec![work.event_id.clone()];
        // Owned or not, the ids this owner took, now or in an attempt that
        // died before its store, are answered by this fetch.
        let taken = self.core.gates.take(&tag, &work.resource_gate(), &work.event_id).await?;
        for event in taken.joined() {
            // A late redelivery of this very event joins its own mark;
            // it is answered once.
            if answers.contains(event) {
                continue;
            }
            self.core.trace(event, "fetch", json!({"by": work.event_id})).await;
            answers.push(event.clone());
        }
        Ok(answers)
    }

    /// The mall's bucket has no unit now: `answers` (this event and those
    /// coalesced into its fetch) join the resource's entry in the mall's
    /// dirty set, a catch-up run is sure to come for it, and the item is done
    /// here. A catch-up request that cannot be queued fails the step, which
    /// its retry hands over again.
    pub(super) async fn hand_over(
        &self,
        item: Option<&WorkItem>,
        work: &ShopWork,
        requests: &dyn CatchUpRequests,
        answers: &[String],
    ) -> Result<FetchOutput, StepError> {
        let mall = &work.event.mall_id;
        let tag = Tag::for_mall(mall);
        let lease = self.core.config.catch_up.chain_lease;
        let resource = work.resource_gate();
        let (chain, since_ms) = self.backlogs.hand_over(&tag, &resource, &work.event_id, answers, lease).await?;
        self.backlogs.request_catch_up(requests, mall, &work.event_id, chain).await?;
        let detail = json!({"mall_id": mall, "resource": resource, "dirty_since_ms": since_ms, "by": "fetch"});
        for event in answers {
            self.core.trace(event, "deferred", detail.clone()).await;
        }
        StepMetrics::add(&self.core.metrics.fetches_handed_over, 1);
        if let Some(item) = item {
            self.core.item_done(item).await;
        }
        Ok(FetchOutput::handed_over())
    }
}
