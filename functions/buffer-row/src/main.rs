//! `bootstrap` of the buffer-row Lambda: read the environment and connect once,
//! then answer invocations until Lambda discards the execution environment.

#[path = "../../flush_queue_env.rs"]
mod flush_queue_env;
#[macro_use]
#[path = "../../step_main.rs"]
mod step_main;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    serve_step!("buffer-row", flush_queue_env::steps_with_flush_queue(), sluice_fn_buffer_row::handler)
}
