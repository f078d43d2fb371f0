//! `bootstrap` of the fetch step's Lambda: read the environment and
//! connect once, then answer invocations until Lambda discards the
//! execution environment.

#[macro_use]
#[path = "../../step_main.rs"]
mod step_main;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    serve_step!("fetch", sluice_pipeline::PipelineEnv::steps_from_env(), sluice_fn_fetch::handler)
}
