//! The drain Lambda: [`Drain::until_empty`] behind `lambda_runtime`, run
//! every minute by an EventBridge Scheduler schedule (`infra/template.yaml`,
//! `DrainSchedule`). Each run moves the snapshot streams into PostgreSQL
//! (one transaction per batch, entries acknowledged after the commit, see
//! `sluice-sink`) until a round finds nothing or the invocation's deadline
//! is [`DEADLINE_MARGIN`] away, then measures the lag that is left and
//! answers a [`DrainSummary`]. The schedule's payload is ignored.
//!
//! A run that fails (PostgreSQL down, say) leaves what it took pending in
//! the streams, reports the failure (the function's errors alarm), and the
//! next minute's run takes it again: nothing is acknowledged that is not
//! committed, and the upsert makes a second write harmless.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the service
//! built once per environment by [`start::drain_from_env`] (its variables
//! are in `functions/README.md`), rebuilt, re-reading the database URL's
//! secret, when `SLUICE_SECRET_TTL_SECS` old or when PostgreSQL refuses
//! the password (a rotated secret).

pub mod metrics;
pub mod start;

use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use serde::Serialize;
use serde_json::Value;
use sluice_lambda::{CredentialRefusal, PrintsMetrics};
use sluice_redis::Connection;
use sluice_sink::{Drain, PassReport, SinkError};
use std::time::{Duration, Instant};

/// What this function calls in AWS: the secrets its variables name (the
/// Redis password and the database URL). Its IAM policy in
/// `infra/template.yaml` must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = &[sluice_lambda::aws_calls::READS_SECRETS];

/// The function's consumer name in the streams' `sink` group. One name for
/// every execution environment: the template runs one at a time (reserved
/// concurrency 1), so a run that was cut off at its timeout leaves its
/// entries pending under the name the next run reads first, at once
/// instead of after the 30 s claim, and the group does not collect a
/// consumer per environment. Two runs at once would still be correct
/// (the upsert is idempotent), only wasteful.
pub const CONSUMER: &str = "lambda-drain";

/// How long before the invocation's deadline the drain starts no new round:
/// longer than one round takes (a batch per shard), so the run answers
/// before Lambda cuts it off.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(10);

/// One environment's drain and what it counted.
#[derive(Debug)]
pub struct DrainService {
    drain: Drain<Connection>,
    metrics: metrics::DrainMetrics,
}

impl DrainService {
    pub fn new(drain: Drain<Connection>) -> Self {
        Self { drain, metrics: metrics::DrainMetrics::default() }
    }

    pub fn metrics(&self) -> &metrics::DrainMetrics {
        &self.metrics
    }
}

impl PrintsMetrics for DrainService {
    fn print_emf(&self, stage: &str, function: &str) {
        self.metrics.print_emf(stage, function);
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stopped {
    /// A round found nothing to drain.
    Empty,
    /// The deadline (less [`DEADLINE_MARGIN`]) came first: more may wait.
    Deadline,
}

/// What a run did: the function's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrainSummary {
    #[serde(flatten)]
    pub report: PassReport,
    pub stopped: Stopped,
    /// Age of the oldest entry not yet committed, after the run; `None`
    /// when nothing waits (or Redis could not say).
    pub lag_seconds: Option<f64>,
}

/// A run that failed: its entries stay pending for the next one.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DrainFailure(#[from] pub SinkError);

/// The error type Lambda reports for a failed run.
pub const FAILURE_TYPE: &str = "Sluice.DrainFailed";

impl From<DrainFailure> for Diagnostic {
    fn from(DrainFailure(e): DrainFailure) -> Self {
        Diagnostic { error_type: FAILURE_TYPE.to_owned(), error_message: e.to_string() }
    }
}

/// PostgreSQL refused the password (`28P01`) or the role (`28000`): the
/// secret may have been rotated, so `serve_step` re-reads it and retries.
impl CredentialRefusal for DrainFailure {
    fn credential_refused(&self) -> bool {
        let source = match &self.0 {
            SinkError::Connect { source, .. } | SinkError::Database(source) => source,
            _ => return false,
        };
        matches!(source, sqlx::Error::Database(e) if matches!(e.code().as_deref(), Some("28P01" | "28000")))
    }
}

/// One scheduled run: drain until empty or near the deadline, then
/// measure the lag. The lag is measured (and reported) even when the run
/// failed: that is when it grows.
pub async fn handler(service: &DrainService, event: LambdaEvent<Value>) -> Result<DrainSummary, DrainFailure> {
    let deadline = deadline(&event.context);
    let drained = service.drain.until_empty(deadline).await;
    let stopped = if Instant::now() < deadline { Stopped::Empty } else { Stopped::Deadline };
    let oldest = service.drain.consumer().oldest_unacknowledged_ms().await.unwrap_or_else(|e| {
        lambda_runtime::tracing::warn!(error = %e, "drain: the lag could not be measured");
        None
    });
    let lag = oldest.map(|ms| Duration::from_millis(now_ms().saturating_sub(ms)));
    service.metrics.set_lag(lag);
    let report = drained.inspect_err(|e| {
        lambda_runtime::tracing::error!(error = %e, "drain: a batch was not written; its entries stay pending");
    })?;
    service.metrics.record(&report);
    let summary = DrainSummary { report, stopped, lag_seconds: lag.map(|l| l.as_secs_f64()) };
    lambda_runtime::tracing::info!(
        written = summary.report.written,
        taken = summary.report.taken,
        stopped = ?summary.stopped,
        lag_seconds = summary.lag_seconds,
        "drained"
    );
    Ok(summary)
}

/// When the run starts no new round: the invocation's deadline (Unix
/// milliseconds) less [`DEADLINE_MARGIN`], as an instant of this clock.
pub fn deadline(context: &Context) -> Instant {
    let left = Duration::from_millis(context.deadline.saturating_sub(now_ms()));
    Instant::now() + left.saturating_sub(DEADLINE_MARGIN)
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_keeps_the_margin_and_a_past_one_is_now() {
        let mut context = Context::default();
        context.deadline = now_ms() + 60_000;
        let left = deadline(&context).saturating_duration_since(Instant::now());
        assert!(left <= Duration::from_secs(50) && left > Duration::from_secs(45), "{left:?}");
        context.deadline = now_ms() + 5_000;
        assert!(deadline(&context) <= Instant::now(), "within the margin: no round starts");
    }

    #[test]
    fn a_failure_is_reported_as_a_drain_failure_without_the_url() {
        let failure = DrainFailure(SinkError::Url("not a PostgreSQL URL".into()));
        assert!(!failure.credential_refused());
        let report: Diagnostic = failure.into();
        assert_eq!(report.error_type, FAILURE_TYPE);
        assert_eq!(report.error_message, "the database URL is invalid: not a PostgreSQL URL");
    }
}
