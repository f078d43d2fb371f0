//! `bootstrap` of the mall drain Lambda: read the environment and connect
//! once, then answer invocations until Lambda discards the execution
//! environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("mall-drain", sluice_lambda::mall_drain_from_env, sluice_fn_mall_drain::handler).await
}
