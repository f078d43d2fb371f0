//! `bootstrap` of the failure step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("record-failure", sluice_lambda::core_from_env, sluice_fn_record_failure::handler).await
}
