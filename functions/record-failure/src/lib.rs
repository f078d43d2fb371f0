//! The failure step's Lambda: [`ServiceCore::record_failure`] behind
//! `lambda_runtime`. It records why an item failed and whether it will be
//! redelivered or dead-lettered (moved to the dead-letter queue); a shop
//! event dead-lettered is also appended to its mall's snapshot stream as an
//! `outcome` entry, so the drain records it in PostgreSQL's event log. The
//! `RecordFailure` state of `statemachine/pipeline.asl.json` invokes it through
//! `arn:aws:states:::lambda:invoke` as `${RecordFailureFunction}`.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the shared core built
//! once from the environment (its variables are in `functions/README.md`).

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sluice_lambda::StepFailure;
use sluice_pipeline::{ServiceCore, call_json};
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::core_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::CORE_CALLS;

/// One invocation: the payload is a [`FailureInput`], the answer `null`.
/// Parsed here, not by the runtime, so a bad payload is a [`StepFailure`]
/// like any other (`Sluice.InvalidRequest`).
///
/// [`FailureInput`]: sluice_pipeline::step_io::FailureInput
pub async fn handler(core: &ServiceCore<Connection>, event: LambdaEvent<Value>) -> Result<Value, StepFailure> {
    call_json(event.payload, |input| core.record_failure(input)).await.map_err(StepFailure)
}
