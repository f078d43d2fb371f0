//! `bootstrap` of the token step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("ensure-token", sluice_lambda::shop_from_env, sluice_fn_ensure_token::handler).await
}
