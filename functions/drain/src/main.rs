//! `bootstrap` of the drain Lambda: read the environment, connect to Redis
//! and PostgreSQL and apply the migrations once, then drain at each
//! scheduled invocation until Lambda discards the execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("drain", sluice_fn_drain::start::drain_from_env, sluice_fn_drain::handler).await
}
