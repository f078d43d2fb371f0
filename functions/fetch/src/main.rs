//! `bootstrap` of the fetch step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("fetch", sluice_lambda::fetch_from_env, sluice_fn_fetch::handler).await
}
