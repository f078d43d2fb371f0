//! The one path from a resource to its snapshot, for every Cafe24 fetch
//! sluice makes: the fetch step's (`fetch_step`), a catch-up run's
//! (`catch_up`) and a parked mall's release (`mall_release`). One path,
//! so that the bucket, the alerts, the traces and what each answer leads
//! to cannot drift apart between the three. Its API:
//!
//! - [`ShopService::fetch_item`]: steps 1 to 3 below, for an item of the
//!   queue whose mall is not held and whose token was seen to (the fetch
//!   step's own checks, or a release's).
//! - [`ShopService::fetch_resource`]: step 3 alone, for a caller that took
//!   the budget unit itself (a catch-up run takes units for many resources
//!   and fetches them side by side); what came of it is a [`Fetched`].
//! - [`ShopService::waits_inline`]: whether a wait for budget is waited
//!   where the fetch runs, rather than in a Wait state or a later run.
//!
//! 1. Take one unit of the mall's GCRA bucket. A short wait is waited here,
//!    exactly; a long one goes back to the state machine (a Wait state).
//!    A mall under flow control (it has a backlog) waits for nothing: the
//!    fetch is handed over to the mall's dirty set (sluice-redis
//!    `backlog/hand_over.rs`), so a pipe, shared by every mall, never waits
//!    for a flooding mall's budget. Other malls wait in turn, which keeps
//!    their groups' order.
//! 2. Clear the resource's pending mark and take the events coalesced into
//!    this one, just before calling, so a webhook that arrives during the
//!    call gets fetched again and the stored snapshot always reflects the
//!    upstream at or after the last webhook.
//! 3. Call with the mall's stored token, fold the answer's
//!    `X-Api-Call-Limit` back into the bucket and let a 429 or an exhausted
//!    usage quota penalise the mall; a throttled item waits and tries
//!    again, never dropped.
//!
//! 404 yields a tombstone; 401 goes back for a token refresh (once); 403
//! (a scope missing, the app removed) parks the mall, and an item's fetch
//! holds its event, as a refused refresh does (`mall_park`): only a new
//! grant mends it, and failing would send the event, after its retries, to
//! the dead-letter queue, out of its order; 5xx and timeouts are
//! `Sluice.UpstreamUnavailable`, retried with backoff by the state machine
//! (a catch-up run leaves the resource for its next run). A mall whose calls
//! fail `fetch_failures_alert_after` times in a row (by any of the three)
//! raises one alert, and its next answered call another
//! (`sluice_redis::episode`).
//!
//! The snapshot (body, and the events it answers) stays in Redis for the
//! store (`store_step`), under the event that owns the fetch; what goes on
//! is its key, never the body (Step Functions' 256 KiB limit, see
//! `step_io`).

mod budget;
mod call;

use crate::service_core::wait_seconds;
use crate::shop_service::ShopService;
use crate::step_io::{FetchOutput, ItemPlan, SnapshotRef};
use call::{Called, forbidden_reason};
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::{ErrorKind, ResourceRef, StepError};
use sluice_redis::{Bucket, Tag};
use std::time::{Duration, Instant};

/// One resource to fetch, its bucket's unit taken.
pub(crate) struct ResourceFetch<'a> {
    pub(crate) bucket: &'a Bucket,
    pub(crate) mall: &'a str,
    pub(crate) resource: &'a ResourceRef,
    /// The event the fetch is for: the snapshot is left under its id, and
    /// the store moves it once per owner.
    pub(crate) owner: &'a str,
    /// Every event the snapshot answers, the owner among them.
    pub(crate) answers: &'a [String],
    pub(crate) caller: Caller<'a>,
}

/// Who fetches: what the trace says, and what a 403 holds.
pub(crate) enum Caller<'a> {
    /// An item of the queue (the fetch step, a release): traced under its
    /// own event, naming the events it answers (those coalesced into it
    /// were traced as they were taken); a 403 holds it, first of the
    /// mall's held events.
    Item(&'a ItemPlan),
    /// A catch-up run, for a dirty resource (`<kind>:<id>`): traced under
    /// every event it answers, as none of them is an item of its own any
    /// more (each was deferred); a 403 holds nothing (the dirty set waits
    /// with the mall).
    CatchUpRun { dirty: &'a str },
}

/// What came of a fetch.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// Found, or a tombstone for a 404: the snapshot is in Redis for the store.
    Left(SnapshotRef),
    /// The token was refused: refresh it (the fingerprint names which).
    Unauthorized { fingerprint: String },
    /// A 429: the mall is penalised; take budget again.
    Throttled { penalty: Duration },
    /// A 403: the mall is parked (and an item's event held).
    Parked,
    /// 5xx, a timeout, a refused request: the kind says whether to retry.
    Failed(StepError),
}

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    /// Steps 1 to 3 for `item`; the fetch step's output (fetched, wait,
    /// handed over, unauthorized, held).
    pub(crate) async fn fetch_item(&self, item: &ItemPlan) -> Result<FetchOutput, StepError> {
        let work = item.shop_work()?;
        let mall = &work.event.mall_id;
        let bucket = self.bucket(mall)?;
        let started = Instant::now();
        // Taken once: a retry after a 429 answers the same events.
        let mut taken: Option<Vec<String>> = None;
        loop {
            if let Some(wait) = self.take_budget(&bucket, started, self.hand_over.is_none()).await? {
                if let Some(requests) = &self.hand_over {
                    // Only a mall under flow control is handed over: it
                    // has given up its groups' order already, while any
                    // other mall's items keep theirs by waiting in turn.
                    if self.backlogs.in_backlog(&Tag::for_mall(mall)).await? {
                        let answers = match taken {
                            Some(answers) => answers,
                            None => self.take_coalesced(work).await?,
                        };
                        return self.hand_over(item.work.as_ref(), work, requests.as_ref(), &answers).await;
                    }
                    if self.waits_inline(wait, started) {
                        self.wait_inline(wait).await;
                        continue;
                    }
                }
                // Counted as a wait too: the execution, and the pipe that
                // runs it, wait in a Wait state.
                self.core.metrics.waited(wait);
                let detail = json!({"waiting_for_budget_ms": wait.as_millis() as u64});
                self.core.trace(&work.event_id, "fetch", detail).await;
                return Ok(FetchOutput::wait(wait_seconds(wait)));
            }
            let answers = match &taken {
                Some(answers) => answers.clone(),
                None => taken.insert(self.take_coalesced(work).await?).clone(),
            };
            let fetch = ResourceFetch {
                bucket: &bucket,
                mall,
                resource: &work.event.resource,
                owner: &work.event_id,
                answers: &answers,
                caller: Caller::Item(item),
            };
            match self.fetch_resource(fetch).await? {
                Fetched::Left(snapshot) => return Ok(FetchOutput::fetched(snapshot)),
                Fetched::Unauthorized { fingerprint } => return Ok(FetchOutput::unauthorized(fingerprint)),
                Fetched::Throttled { penalty } => {
                    self.core.trace(&work.event_id, "penalized", json!({"ms": penalty.as_millis() as u64})).await;
                }
                Fetched::Parked => return Ok(FetchOutput::held()),
                Fetched::Failed(error) => return Err(error),
            }
        }
    }

    /// Step 3: one Admin API call, traced, its snapshot left for the
    /// store or its mall parked on a 403. `Err` only when Redis fails or
    /// the mall has no token.
    pub(crate) async fn fetch_resource(&self, fetch: ResourceFetch<'_>) -> Result<Fetched, StepError> {
        let ResourceFetch { bucket, mall, resource, owner, answers, caller } = fetch;
        let call = self.call_upstream(bucket, mall, resource, answers).await?;
        match caller {
            Caller::Item(_) => {
                self.core.trace(owner, "fetch", json!({"result": call.result, "answers": answers})).await;
            }
            Caller::CatchUpRun { dirty } => {
                let detail = json!({"result": call.result, "by": "catch_up", "resource": dirty});
                self.core.trace_all(answers, "fetch", &detail).await;
            }
        }
        Ok(match call.outcome {
            Called::Found(snapshot) => Fetched::Left(self.leave(owner, *snapshot).await?),
            Called::Unauthorized { fingerprint } => Fetched::Unauthorized { fingerprint },
            Called::Throttled { penalty } => Fetched::Throttled { penalty },
            Called::Failed(error) if error.kind == ErrorKind::CredentialRejected => {
                let held = match caller {
                    Caller::Item(item) => Some((owner, item)),
                    Caller::CatchUpRun { .. } => None,
                };
                self.park_mall(mall, &forbidden_reason(&error), held).await?;
                Fetched::Parked
            }
            Called::Failed(error) => Fetched::Failed(error),
        })
    }

    /// Whether a wait of `wait` for budget is waited here (up to the
    /// inline maximum, within the wait budget of a fetch that started at
    /// `started`) rather than in a Wait state or a later run.
    pub(crate) fn waits_inline(&self, wait: Duration, started: Instant) -> bool {
        let config = &self.core.config;
        wait <= config.inline_wait_max && started.elapsed() + wait <= config.step_wait_budget
    }
}
