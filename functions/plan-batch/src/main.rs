//! `bootstrap` of the plan step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("plan-batch", sluice_lambda::core_from_env, sluice_fn_plan_batch::handler).await
}
