//! The `main` every step function shares, included by path
//! (`#[macro_use] #[path = "../../step_main.rs"] mod step_main;`) so there
//! is one copy: honour the function's log settings, build the steps once
//! per execution environment (a failure ends the cold start with a log line
//! naming the problem), then answer invocations with the handler and print
//! one EMF line of what each invocation counted.

/// `serve_step!("fetch", steps_future, handler)`: the body of an async
/// `main` returning `ExitCode`. `steps_future` resolves to a
/// `Result<Steps<_>, impl Display>`; `handler(&steps, event)` answers one
/// invocation.
macro_rules! serve_step {
    ($function:literal, $steps:expr, $handler:path) => {{
        // Honours the function's log level and JSON log format settings.
        lambda_runtime::tracing::init_default_subscriber();
        match $steps.await {
            Ok(steps) => {
                let served = lambda_runtime::run(lambda_runtime::service_fn(|event| async {
                    let answer = $handler(&steps, event).await;
                    steps.metrics().print_emf($function);
                    answer
                }))
                .await;
                match served {
                    Ok(()) => std::process::ExitCode::SUCCESS,
                    Err(e) => {
                        lambda_runtime::tracing::error!("sluice-fn-{}: the Lambda runtime stopped: {e}", $function);
                        std::process::ExitCode::FAILURE
                    }
                }
            }
            Err(e) => {
                // The cold start fails; this line is in the function's log.
                lambda_runtime::tracing::error!("sluice-fn-{} cannot start: {e}", $function);
                std::process::ExitCode::FAILURE
            }
        }
    }};
}
