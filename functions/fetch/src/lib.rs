//! The fetch step's Lambda: [`ShopService::fetch`] behind `lambda_runtime`. It reads
//! the item's resource from the Admin API within the mall's bucket, leaves it in
//! Redis and answers its key (never the body: Step Functions' 256 KiB limit). The `Fetch`
//! state of `statemachine/pipeline.asl.json` invokes it through
//! `arn:aws:states:::lambda:invoke` as `${FetchFunction}`.
//!
//! `main` serves [`handler`] with `sluice_lambda::serve_step`, the shop service built
//! once from the environment (its variables are in `functions/README.md`).

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sluice_lambda::StepFailure;
use sluice_pipeline::{ShopService, call_json};
use sluice_redis::Connection;

/// What this function calls in AWS: what the service `main` starts
/// (`sluice_lambda::fetch_from_env`) calls. Its IAM policy in `infra/template.yaml`
/// must allow each (`tests/tests/template_iam.rs`).
pub const AWS_CALLS: &[sluice_lambda::AwsUse] = sluice_lambda::aws_calls::FETCH_CALLS;

/// One invocation: the payload is a [`FetchInput`], the answer a [`FetchOutput`].
/// Parsed here, not by the runtime, so a bad payload is a [`StepFailure`]
/// like any other (`Sluice.InvalidRequest`).
///
/// [`FetchInput`]: sluice_pipeline::step_io::FetchInput
/// [`FetchOutput`]: sluice_pipeline::step_io::FetchOutput
pub async fn handler(shop: &ShopService<Connection>, event: LambdaEvent<Value>) -> Result<Value, StepFailure> {
    call_json(event.payload, |input| shop.fetch(input)).await.map_err(StepFailure)
}
