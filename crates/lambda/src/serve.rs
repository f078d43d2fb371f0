//! A step function's `main`: honour the function's log settings, build its
//! service (the shared core, the shop service or the sheet service) once
//! per execution environment, then answer invocations until Lambda
//! discards the environment.

use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use redis::aio::ConnectionManager;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sluice_pipeline::ServiceCore;
use std::fmt::{Debug, Display};
use std::process::ExitCode;

/// Serves the step function `function` (`"fetch"`: the name in its logs
/// and EMF lines). `steps` connects once; if it fails, the cold start ends
/// with a log line naming the problem. Each invocation is answered by
/// `handler`, then one EMF line prints what the core counted.
pub async fn serve_step<S, A, R, E>(
    function: &str,
    steps: impl Future<Output = Result<S, impl Display>>,
    handler: impl AsyncFn(&S, LambdaEvent<A>) -> Result<R, E>,
) -> ExitCode
where
    S: AsRef<ServiceCore<ConnectionManager>>,
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
    let stage = sluice_config::stage(&sluice_config::EnvSource::from_process());
    let served = lambda_runtime::run(service_fn(|event| async {
        let answer = handler(&steps, event).await;
        steps.as_ref().metrics().print_emf(&stage, function);
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
