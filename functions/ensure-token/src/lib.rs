//! The token step's Lambda: [`Steps::ensure_token`] behind `lambda_runtime`. It
//! makes sure the item's mall has a usable Cafe24 token, refreshing it under
//! the mall's lock. The `EnsureToken` state of `statemachine/pipeline.asl.json`
//! invokes it through `arn:aws:states:::lambda:invoke` as
//! `${EnsureTokenFunction}`.
//!
//! `main` reads the environment and connects once per execution
//! environment ([`PipelineEnv::steps_from_env`]; the variables are listed
//! in `functions/README.md`), then answers every invocation with
//! [`handler`].
//!
//! [`PipelineEnv::steps_from_env`]: sluice_pipeline::PipelineEnv::steps_from_env

use lambda_runtime::{Diagnostic, LambdaEvent};
use redis::aio::ConnectionManager;
use serde_json::Value;
use sluice_pipeline::{Steps, call_json};

/// One invocation: the payload is a [`TokenInput`], the answer a [`TokenOutput`].
///
/// The payload arrives as JSON and is parsed here rather than by the
/// runtime, so a bad one is reported as `Sluice.InvalidRequest`. Every
/// failure is reported with its kind's name as the error type: Step
/// Functions makes a function's `errorType` the task's `Error`, the name
/// the state's Retry and Catch match.
///
/// [`TokenInput`]: sluice_pipeline::step_io::TokenInput
/// [`TokenOutput`]: sluice_pipeline::step_io::TokenOutput
pub async fn handler(steps: &Steps<ConnectionManager>, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
    call_json(event.payload, |input| steps.ensure_token(input))
        .await
        .map_err(|e| Diagnostic { error_type: e.kind.name().to_owned(), error_message: e.cause })
}
