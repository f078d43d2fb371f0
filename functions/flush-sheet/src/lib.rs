//! The flush Lambda: [`SheetService::flush_sheet`] behind `lambda_runtime`, with
//! the SQS standard flush queue as its event source (batch size 1 is
//! enough: each request flushes a whole sheet; `ReportBatchItemFailures`
//! on). A request arrives when its `DelaySeconds` are over, so no sheet is
//! ever polled. A flush that fails is reported in `batchItemFailures` and
//! comes back after the queue's visibility timeout; after
//! `maxReceiveCount` it moves to the flush dead-letter queue. A body that
//! is not a flush request is a failure too (it ends in that queue, to be
//! looked at).

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use sluice_pipeline::SheetService;
use sluice_pipeline::sheet_io::FlushRequest;
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::sheet_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::SHEET_CALLS;

/// One invocation: every record's flush, its failures reported by message id.
pub async fn handler(
    sheet: &SheetService<Connection>,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    sluice_lambda::sqs_batch::each_record(event.payload, async |id, body| {
        let request = match serde_json::from_str::<FlushRequest>(body) {
            Ok(request) => request,
            Err(e) => {
                lambda_runtime::tracing::error!(message_id = id, error = %e, "not a flush request");
                return Ok(false);
            }
        };
        match sheet.flush_sheet(request).await {
            Ok(output) => {
                lambda_runtime::tracing::info!(
                    message_id = id,
                    rows = output.appended_rows,
                    calls = output.calls,
                    next = %output.next,
                    "flushed"
                );
                Ok(true)
            }
            Err(e) => {
                lambda_runtime::tracing::warn!(message_id = id, kind = %e.kind, cause = e.cause, "flush failed");
                Ok(false)
            }
        }
    })
    .await
}
