//! The fetch step: one Admin API call for the item's resource, inside the
//! mall's budget.
//!
//! 0. A parked mall's item is held, without a call (`mall_park`); a mall
//!    whose token is missing or about to expire answers `needs_token`, and
//!    the state machine runs the token step before fetching again. Checked
//!    here rather than in a token step before every fetch: the common case
//!    is then one Lambda and two states fewer per item.
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
//! 3. Call, fold the answer's `X-Api-Call-Limit` back into the bucket and
//!    let a 429 or an exhausted usage quota penalise the mall; a throttled
//!    item waits and tries again, never dropped.
//!
//! 404 yields a tombstone; 401 goes back for a token refresh (once); 403
//! (a scope missing, the app removed) parks the mall and holds the event,
//! as a refused refresh does (`mall_park`): only a new grant mends it, and
//! failing would send the event, after its retries, to the dead-letter
//! queue, out of its order; 5xx and timeouts are `Sluice.UpstreamUnavailable`,
//! retried with backoff by the state machine. A mall whose calls fail
//! `fetch_failures_alert_after` times in a row (here and in its drain runs
//! alike) raises one alert, and its next answered call another
//! (`sluice_redis::episode`).
//!
//! The snapshot (body, and the events it answers) stays in Redis for the
//! store step; the step's output carries its key, never the body (Step
//! Functions' 256 KiB limit, see `step_io`).

use crate::alerts::EPISODE_TTL;
use crate::service_core::{now_ms, wait_seconds};
use crate::shop_service::{ADMIN_API, ShopService};
use crate::step_io::{FetchInput, FetchOutput, ItemPlan, Snapshot, SnapshotRef};
use crate::step_metrics::StepMetrics;
use crate::token_step::fingerprint;
use redis::aio::ConnectionLike;
use serde_json::{Value, json};
use sluice_cafe24::{CallUsage, FetchOutcome, Secret};
use sluice_domain::{DrainRequests, ErrorKind, ResourceRef, ShopWork, StepError, WorkItem};
use sluice_redis::{Admission, Bucket, EpisodeChange, EpisodeRule, Tag};
use std::time::{Duration, Instant};

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    pub async fn fetch(&self, input: FetchInput) -> Result<FetchOutput, StepError> {
        let work = input.item.shop_work()?;
        let mall = &work.event.mall_id;
        // Two independent reads under the mall's tag, side by side: the
        // common case pays one round trip for both checks.
        let token_usable = async { if input.token_checked { Ok(true) } else { self.token_usable(mall).await } };
        let (held, token_usable) = tokio::join!(self.hold_if_held(mall, &work.event_id, &input.item), token_usable);
        if held? {
            return Ok(FetchOutput::held());
        }
        if !token_usable? {
            return Ok(FetchOutput::needs_token());
        }
        self.fetch_in_budget(&input.item).await
    }

    /// Steps 1 to 3, for an item whose mall is not held and whose token
    /// was seen to (the step's own checks, or a release of held events).
    pub(crate) async fn fetch_in_budget(&self, item: &ItemPlan) -> Result<FetchOutput, StepError> {
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
                StepMetrics::add(&self.metrics.limiter_waits, 1);
                StepMetrics::add(&self.metrics.limiter_wait_ms, wait.as_millis() as u64);
                self.trace(&work.event_id, "fetch", json!({"waiting_for_budget_ms": wait.as_millis() as u64})).await;
                return Ok(FetchOutput::wait(wait_seconds(wait)));
            }
            let answers = match &taken {
                Some(answers) => answers.clone(),
                None => taken.insert(self.take_coalesced(work).await?).clone(),
            };
            let resource = &work.event.resource;
            let called = self.call_upstream(&bucket, mall, resource, &answers).await?;
            self.trace(&work.event_id, "fetch", json!({"result": called.result, "answers": answers})).await;
            match called.outcome {
                Called::Fetched(snapshot) => {
                    return self.leave(&work.event_id, *snapshot).await.map(FetchOutput::fetched);
                }
                Called::Unauthorized { fingerprint } => return Ok(FetchOutput::unauthorized(fingerprint)),
                Called::Throttled { penalty } => {
                    self.trace(&work.event_id, "penalized", json!({"ms": penalty.as_millis() as u64})).await;
                }
                Called::Failed(error) if error.kind == ErrorKind::CredentialRejected => {
                    let reason = forbidden_reason(&error);
                    self.park_mall(mall, &reason, Some((&work.event_id, item))).await?;
                    return Ok(FetchOutput::held());
                }
                Called::Failed(error) => return Err(error),
            }
        }
    }

    /// One Admin API call for `resource`, budget already taken: folds the
    /// answer's usage back into the bucket, penalises the mall on a 429,
    /// and builds the snapshot answering `answers`. `Err` only when Redis
    /// fails or the mall has no token.
    pub(crate) async fn call_upstream(
        &self,
        bucket: &Bucket,
        mall: &str,
        resource: &ResourceRef,
        answers: &[String],
    ) -> Result<Call, StepError> {
        let token =
            self.tokens.get(&Tag::for_mall(mall), ADMIN_API).await?.ok_or_else(|| {
                StepError::new(ErrorKind::CredentialRejected, format!("no Cafe24 token for mall {mall}"))
            })?;
        let outcome =
            self.cafe24.fetch(mall, resource.kind, &resource.id, &Secret::new(token.access_token.clone())).await;
        StepMetrics::add(&self.metrics.cafe24_calls, 1);
        let result = outcome.to_string();
        let failed = outcome.step_error().filter(|e| e.kind == ErrorKind::UpstreamUnavailable);
        // Two independent writes after every call (the bucket's view of
        // the mall, the failures-in-a-row count): side by side, not one
        // round trip after the other.
        let fold = async {
            match outcome.usage() {
                Some(usage) => self.fold_usage(bucket, usage).await,
                None => Ok(()),
            }
        };
        let note = async {
            match &outcome {
                FetchOutcome::Found(_) | FetchOutcome::NotFound { .. } => self.note_fetch(mall, None).await,
                _ if failed.is_some() => self.note_fetch(mall, Some(&result)).await,
                _ => {}
            }
        };
        let (folded, ()) = tokio::join!(fold, note);
        folded?;
        let snapshot = |status: &str, body: Value, updated_date, version| {
            Box::new(Snapshot {
                mall_id: mall.to_owned(),
                kind: resource.kind.to_string(),
                id: resource.id.clone(),
                status: status.to_owned(),
                updated_date,
                version,
                body,
                answers: answers.to_vec(),
                fetched_at_ms: now_ms(),
            })
        };
        let outcome = match outcome {
            FetchOutcome::Found(found) => {
                Called::Fetched(snapshot("found", found.resource, found.updated_date, found.version))
            }
            FetchOutcome::NotFound { .. } => Called::Fetched(snapshot("deleted", Value::Null, None, None)),
            FetchOutcome::Unauthorized { .. } => Called::Unauthorized { fingerprint: fingerprint(&token.access_token) },
            FetchOutcome::Throttled { retry_after, .. } => {
                StepMetrics::add(&self.metrics.cafe24_429, 1);
                // The upstream's bucket is fuller than ours said: hold the
                // mall back, then take budget again.
                let penalty = retry_after.unwrap_or_else(|| bucket.interval());
                self.buckets.penalize(bucket, penalty).await?;
                Called::Throttled { penalty }
            }
            other => Called::Failed(
                other
                    .step_error()
                    .unwrap_or_else(|| StepError::new(ErrorKind::Internal, "fetch outcome without an error kind")),
            ),
        };
        Ok(Call { result, outcome })
    }

    /// One of `mall`'s calls answered (`failure` None) or failed: one
    /// alert when they have failed `fetch_failures_alert_after` times in a
    /// row, one at the next answer. Never fails the fetch.
    async fn note_fetch(&self, mall: &str, failure: Option<&str>) {
        let rule = EpisodeRule { name: "fetch", threshold: self.config.fetch_failures_alert_after, ttl: EPISODE_TTL };
        let tag = Tag::for_mall(mall);
        let noted = match failure {
            None => self.episodes.succeeded(&tag, &rule).await,
            Some(_) => self.episodes.failed(&tag, &rule).await,
        };
        let text = match (noted, failure) {
            (Ok(EpisodeChange::Started), Some(last)) => format!(
                "sluice: mall `{mall}`'s Cafe24 calls failed {} times in a row (the last: {last}). Its events are \
                 retried with backoff; those that run out of retries go back to the queue, and after \
                 {} receives to the dead-letter queue.",
                rule.threshold, self.config.max_receive_count
            ),
            (Ok(EpisodeChange::Ended), _) => format!("sluice: mall `{mall}`'s Cafe24 calls work again."),
            (Ok(_), _) => return,
            (Err(e), _) => {
                tracing::warn!(mall, error = %e, "fetch failures not counted for alerts");
                return;
            }
        };
        self.alerter.episode(&format!("mall:{mall}:fetch"), &text).await;
    }

    /// Leaves `snapshot` in Redis for the store step under its owner's
    /// event id; what goes on is its key and a summary.
    pub(crate) async fn leave(&self, owner: &str, snapshot: Snapshot) -> Result<SnapshotRef, StepError> {
        let (fields, body_bytes) = snapshot.hash_fields();
        let key = self.snapshots.put_fetched(&snapshot.mall_id, owner, &fields).await?;
        Ok(SnapshotRef {
            key,
            status: snapshot.status,
            version: snapshot.version,
            body_bytes,
            answers: snapshot.answers.len(),
        })
    }

    /// Takes one unit of the mall's bucket, waiting here for up to the
    /// inline maximum (and within the step's wait budget) when `may_wait`.
    /// `Some(wait)`: the caller must come back after it.
    pub(crate) async fn take_budget(
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
    async fn wait_inline(&self, wait: Duration) {
        StepMetrics::add(&self.metrics.limiter_waits, 1);
        StepMetrics::add(&self.metrics.limiter_wait_ms, wait.as_millis() as u64);
        tokio::time::sleep(wait).await;
    }

    /// Whether a wait of `wait` is waited here rather than in a Wait state.
    fn waits_inline(&self, wait: Duration, started: Instant) -> bool {
        wait <= self.config.inline_wait_max && started.elapsed() + wait <= self.config.step_wait_budget
    }

    /// Clears the resource's pending mark (if this event owns it) and
    /// returns every event the coming fetch answers.
    async fn take_coalesced(&self, work: &ShopWork) -> Result<Vec<String>, StepError> {
        let tag = Tag::for_mall(&work.event.mall_id);
        let mut answers = vec![work.event_id.clone()];
        // Owned or not, the ids this owner took, now or in an attempt that
        // died before its store, are answered by this fetch.
        let taken = self.gates.take(&tag, &work.resource_gate(), &work.event_id).await?;
        for event in taken.joined() {
            // A late redelivery of this very event joins its own mark;
            // it is answered once.
            if answers.contains(event) {
                continue;
            }
            self.trace(event, "fetch", json!({"by": work.event_id})).await;
            answers.push(event.clone());
        }
        Ok(answers)
    }

    /// The mall's bucket has no unit now: `answers` (this event and those
    /// coalesced into its fetch) join the resource's entry in the mall's
    /// dirty set, a drain run is sure to come for it, and the item is done
    /// here. A drain request that cannot be queued fails the step, which
    /// its retry hands over again.
    async fn hand_over(
        &self,
        item: Option<&WorkItem>,
        work: &ShopWork,
        requests: &dyn DrainRequests,
        answers: &[String],
    ) -> Result<FetchOutput, StepError> {
        let mall = &work.event.mall_id;
        let tag = Tag::for_mall(mall);
        let lease = self.config.mall_drain.chain_lease;
        let resource = work.resource_gate();
        let (chain, since_ms) = self.backlogs.hand_over(&tag, &resource, &work.event_id, answers, lease).await?;
        self.backlogs.request_drain(requests, mall, &work.event_id, chain).await?;
        let detail = json!({"mall_id": mall, "resource": resource, "dirty_since_ms": since_ms, "by": "fetch"});
        for event in answers {
            self.trace(event, "deferred", detail.clone()).await;
        }
        StepMetrics::add(&self.metrics.fetches_handed_over, 1);
        if let Some(item) = item {
            self.item_done(item).await;
        }
        Ok(FetchOutput::handed_over())
    }

    /// Folds the upstream's own view of the mall's budget into the bucket.
    async fn fold_usage(&self, bucket: &Bucket, usage: &CallUsage) -> Result<(), StepError> {
        if let Some(limit) = usage.call_limit {
            self.buckets.observe(bucket, limit.used, limit.capacity).await?;
        }
        if let Some(wait) = usage.quota_wait() {
            self.buckets.penalize(bucket, wait).await?;
        }
        Ok(())
    }
}

/// Why a mall whose call Cafe24 refused (403) is parked; the answer's
/// error text, never a token.
pub(crate) fn forbidden_reason(error: &StepError) -> String {
    format!("Cafe24 refused its calls ({}): a scope is missing or the app was removed", error.cause)
}

/// One upstream call: what it answered, for the trace, and what to do.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) result: String,
    pub(crate) outcome: Called,
}

#[derive(Debug)]
pub(crate) enum Called {
    /// Found, or a tombstone for a 404.
    Fetched(Box<Snapshot>),
    /// The token was refused: refresh it (the fingerprint names which).
    Unauthorized { fingerprint: String },
    /// A 429: the mall is penalised; take budget again.
    Throttled { penalty: Duration },
    /// 5xx, a timeout, a refused request: the kind says whether to retry.
    Failed(StepError),
}
