//! `bootstrap` of the store step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("store", sluice_lambda::store_from_env, sluice_fn_store::handler).await
}
