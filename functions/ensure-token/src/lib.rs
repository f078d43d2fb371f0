//! The token step's Lambda: [`ShopService::ensure_token`] behind `lambda_runtime`. It
//! makes sure the item's mall has a usable Cafe24 token, refreshing it under
//! the mall's lock. The `EnsureToken` state of `statemachine/pipeline.asl.json`
//! invokes it through `arn:aws:states:::lambda:invoke` as
//! `${EnsureTokenFunction}`.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the shop service built
//! once from the environment (its variables are in `functions/README.md`).

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sluice_lambda::StepFailure;
use sluice_pipeline::{ShopService, call_json};
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::shop_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::CORE_CALLS;

/// One invocation: the payload is a [`TokenInput`], the answer a [`TokenOutput`].
/// Parsed here, not by the runtime, so a bad payload is a [`StepFailure`]
/// like any other (`Sluice.InvalidRequest`).
///
/// [`TokenInput`]: sluice_pipeline::step_io::TokenInput
/// [`TokenOutput`]: sluice_pipeline::step_io::TokenOutput
pub async fn handler(shop: &ShopService<Connection>, event: LambdaEvent<Value>) -> Result<Value, StepFailure> {
    call_json(event.payload, |input| shop.ensure_token(input)).await.map_err(StepFailure)
}
