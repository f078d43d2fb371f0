//! `bootstrap` of the catch-up Lambda: read the environment and connect
//! once, then answer invocations until Lambda discards the execution
//! environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("catch-up", sluice_lambda::catch_up_from_env, sluice_fn_catch_up::handler).await
}
