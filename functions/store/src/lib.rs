//! The store step's Lambda: [`ShopService::store`] behind `lambda_runtime`. It
//! moves the snapshot the fetch step left in Redis (by the key in its input) to
//! its mall's shard stream, once per event. The
//! `Store` state of `statemachine/pipeline.asl.json` invokes it through
//! `arn:aws:states:::lambda:invoke` as `${StoreFunction}`.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the shop service built
//! once from the environment (its variables are in `functions/README.md`).

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sluice_lambda::StepFailure;
use sluice_pipeline::{ShopService, call_json};
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::store_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::CORE_CALLS;

/// One invocation: the payload is a [`StoreInput`], the answer a [`StoreOutput`].
/// Parsed here, not by the runtime, so a bad payload is a [`StepFailure`]
/// like any other (`Sluice.InvalidRequest`).
///
/// [`StoreInput`]: sluice_pipeline::step_io::StoreInput
/// [`StoreOutput`]: sluice_pipeline::step_io::StoreOutput
pub async fn handler(shop: &ShopService<Connection>, event: LambdaEvent<Value>) -> Result<Value, StepFailure> {
    call_json(event.payload, |input| shop.store(input)).await.map_err(StepFailure)
}
