//! The buffer step's Lambda: [`SheetService::buffer_row`] behind `lambda_runtime`.
//! A sheet row joins its sheet's Redis buffer and the sheet's flush is
//! asked for on the flush queue. The `BufferRow` state of
//! `statemachine/pipeline.asl.json` invokes it through
//! `arn:aws:states:::lambda:invoke` as `${BufferRowFunction}`.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the sheet service built
//! once from the environment with the flush queue (`SLUICE_FLUSH_QUEUE_URL`
//! and the variables in `functions/README.md`).

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sluice_lambda::StepFailure;
use sluice_pipeline::{SheetService, call_json};
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::sheet_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::SHEET_CALLS;

/// One invocation: the payload is a [`BufferInput`], the answer a
/// [`BufferOutput`]; a failure, a [`StepFailure`], is named by its kind.
///
/// [`BufferInput`]: sluice_pipeline::sheet_io::BufferInput
/// [`BufferOutput`]: sluice_pipeline::sheet_io::BufferOutput
pub async fn handler(sheet: &SheetService<Connection>, event: LambdaEvent<Value>) -> Result<Value, StepFailure> {
    call_json(event.payload, |input| sheet.buffer_row(input)).await.map_err(StepFailure)
}
