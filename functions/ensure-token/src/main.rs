//! `bootstrap` of the token step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

use lambda_runtime::{service_fn, tracing};
use sluice_pipeline::PipelineEnv;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // Honours the function's log level and JSON log format settings.
    tracing::init_default_subscriber();
    let steps = match PipelineEnv::steps_from_env().await {
        Ok(steps) => steps,
        Err(e) => {
            // The cold start fails; this line is in the function's log.
            tracing::error!("sluice-fn-ensure-token cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = lambda_runtime::run(service_fn(|event| sluice_fn_ensure_token::handler(&steps, event))).await {
        tracing::error!("sluice-fn-ensure-token: the Lambda runtime stopped: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
