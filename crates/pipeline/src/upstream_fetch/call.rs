//! Step 3 of `upstream_fetch`: the Admin API call, with what every call
//! owes the mall's state whoever makes it (its usage folded into the
//! bucket, a 429's penalty, its failures counted for alerts), and the
//! snapshot left for the store. Classifying the answer is here; what the
//! caller does with it (a trace, a park, a retry) is `upstream_fetch`'s.

use crate::alerts::EPISODE_TTL;
use crate::service_core::now_ms;
use crate::shop_service::{ADMIN_API, ShopService};
use crate::step_io::{Snapshot, SnapshotRef};
use crate::step_metrics::StepMetrics;
use crate::token_step::fingerprint;
use redis::aio::ConnectionLike;
use serde_json::Value;
use sluice_cafe24::{CallUsage, FetchOutcome, Secret};
use sluice_domain::{ErrorKind, ResourceRef, StepError};
use sluice_redis::{Bucket, EpisodeChange, EpisodeRule, Tag};
use std::time::Duration;

impl<C: ConnectionLike + Clone + Send + Sync> ShopService<C> {
    /// The call itself, budget already taken: folds the answer's usage
    /// back into the bucket, penalises the mall on a 429, counts the
    /// mall's failures for alerts, and builds the snapshot answering
    /// `answers`.
    pub(super) async fn call_upstream(
        &self,
        bucket: &Bucket,
        mall: &str,
        resource: &ResourceRef,
        answers: &[String],
    ) -> Result<Call, StepError> {
        let token =
            self.core.tokens.get(&Tag::for_mall(mall), ADMIN_API).await?.ok_or_else(|| {
                StepError::new(ErrorKind::CredentialRejected, format!("no Cafe24 token for mall {mall}"))
            })?;
        let outcome =
            self.cafe24.fetch(mall, resource.kind, &resource.id, &Secret::new(token.access_token.clone())).await;
        StepMetrics::add(&self.core.metrics.cafe24_calls, 1);
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
                Called::Found(snapshot("found", found.resource, found.updated_date, found.version))
            }
            FetchOutcome::NotFound { .. } => Called::Found(snapshot("deleted", Value::Null, None, None)),
            FetchOutcome::Unauthorized { .. } => Called::Unauthorized { fingerprint: fingerprint(&token.access_token) },
            FetchOutcome::Throttled { retry_after, .. } => {
                StepMetrics::add(&self.core.metrics.cafe24_429, 1);
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
        let config = &self.core.config;
        let rule = EpisodeRule { name: "fetch", threshold: config.fetch_failures_alert_after, ttl: EPISODE_TTL };
        let tag = Tag::for_mall(mall);
        let noted = match failure {
            None => self.core.episodes.succeeded(&tag, &rule).await,
            Some(_) => self.core.episodes.failed(&tag, &rule).await,
        };
        let text = match (noted, failure) {
            (Ok(EpisodeChange::Started), Some(last)) => format!(
                "sluice: mall `{mall}`'s Cafe24 calls failed {} times in a row (the last: {last}). Its events are \
                 retried with backoff; those that run out of retries go back to the queue, and after \
                 {} receives to the dead-letter queue.",
                rule.threshold, config.max_receive_count
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

    /// Leaves `snapshot` in Redis for the store under its owner's event
    /// id; what goes on is its key and a summary.
    pub(super) async fn leave(&self, owner: &str, snapshot: Snapshot) -> Result<SnapshotRef, StepError> {
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
}

/// Why a mall whose call Cafe24 refused (403) is parked; the answer's
/// error text, never a token.
pub(super) fn forbidden_reason(error: &StepError) -> String {
    format!("Cafe24 refused its calls ({}): a scope is missing or the app was removed", error.cause)
}

/// One upstream call: what it answered, for the trace, and what it was.
#[derive(Debug)]
pub(super) struct Call {
    pub(super) result: String,
    pub(super) outcome: Called,
}

#[derive(Debug)]
pub(super) enum Called {
    /// Found, or a tombstone for a 404: the snapshot to leave.
    Found(Box<Snapshot>),
    Unauthorized {
        fingerprint: String,
    },
    Throttled {
        penalty: Duration,
    },
    /// 5xx, a timeout, a refused request (a 403 among them).
    Failed(StepError),
}
