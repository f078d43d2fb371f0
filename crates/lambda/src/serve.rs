//! A step function's `main`: honour the function's log settings, build the
//! steps once per execution environment, then answer invocations until
//! Lambda discards the environment.

use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use redis::aio::ConnectionManager;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_pipeline::Steps;
use std::fmt::{Debug, Display};
use std::process::ExitCode;

/// Serves the step function `function` (`"fetch"`: the name in its logs
/// and EMF lines). `steps` connects once; if it fails, the cold start ends
/// with a log line naming the problem. Each invocation is answered by
/// `handler`, then one EMF line prints what it counted.
pub async fn serve_step<A, R, E>(
    function: &str,
    steps: impl Future<Output = Result<Steps<ConnectionManager>, impl Display>>,
    handler: impl AsyncFn(&Steps<ConnectionManager>, LambdaEvent<A>) -> Result<R, E>,
) -> ExitCode
where
    A: DeserializeOwned,
    R: Serialize,
    E: Into<Diagnostic> + Debug,
{
    // Honours the function's log level and JSON log format settings.
    lambda_runtime::tracing::init_default_subscriber();
    let steps = match steps.await {
        Ok(steps) => steps,
        Err(e) => {
            lambda_runtime::tracing::error!("sluice-fn-{function} cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = lambda_runtime::run(service_fn(|event| async {
        let answer = handler(&steps, event).await;
        steps.metrics().print_emf(function);
        answer
    }))
    .await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            lambda_runtime::tracing::error!("sluice-fn-{function}: the Lambda runtime stopped: {e}");
            ExitCode::FAILURE
        }
    }
}
