//! The catch-up Lambda: [`CatchUpService::catch_up`] behind
//! `lambda_runtime`, with the SQS standard catch-up queue as its event
//! source (`ReportBatchItemFailures` on; batch size 1 is enough: each
//! request drains a whole mall for up to its run budget). A request
//! arrives when its `DelaySeconds` (the mall's bucket's wait) are over,
//! so no mall is ever polled; each run queues the next request itself
//! while the mall's dirty set is not empty (`sluice_redis::backlog`).
//!
//! A run that fails is reported in `batchItemFailures` and comes back
//! after the queue's visibility timeout (what it stored has left the set
//! already); after `maxReceiveCount` it moves to the catch-up
//! dead-letter queue, and the mall's next deferred webhook starts a new
//! chain once the old one's lease lapses. A body that is not a drain
//! request is a failure too (it ends in that queue, to be looked at).
//! A mall whose own grant Cafe24 refuses (`invalid_grant`) is parked, not
//! failed: the run ends (`next: Parked`) and `sluice tokens set` queues the
//! one that releases it (`sluice_pipeline::mall_park`). The app's own
//! credentials refused fail the invocation as `Sluice.CredentialRejected`
//! instead, so `serve_step` re-reads the secrets and tries once more.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use sluice_domain::{CatchUpRequest, ErrorKind};
use sluice_lambda::StepFailure;
use sluice_pipeline::CatchUpService;
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::catch_up_from_env`) calls. Its IAM policy in
/// `infra/template.yaml` must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::CATCH_UP_CALLS;

/// One invocation: every record's catch-up run, its failures reported by
/// message id.
pub async fn handler(
    drain: &CatchUpService<Connection>,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, StepFailure> {
    sluice_lambda::sqs_batch::each_record(event.payload, async |id, body| {
        let request = match CatchUpRequest::from_body(body) {
            Ok(request) => request,
            Err(e) => {
                lambda_runtime::tracing::error!(message_id = id, error = %e, "not a catch-up request");
                return Ok(false);
            }
        };
        let mall = request.mall_id.clone();
        match drain.catch_up(request).await {
            Ok(output) => {
                lambda_runtime::tracing::info!(
                    message_id = id,
                    mall,
                    stored = output.stored,
                    retried = output.retried,
                    left = output.left,
                    next = ?output.next,
                    "drained"
                );
                Ok(true)
            }
            Err(e) if e.kind == ErrorKind::CredentialRejected => Err(StepFailure(e)),
            Err(e) => {
                lambda_runtime::tracing::warn!(message_id = id, mall, kind = %e.kind, cause = e.cause, "catch-up run failed");
                Ok(false)
            }
        }
    })
    .await
}
