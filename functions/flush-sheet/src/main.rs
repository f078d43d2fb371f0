//! `bootstrap` of the flush-sheet Lambda: read the environment and connect once,
//! then answer invocations until Lambda discards the execution environment.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    sluice_lambda::serve_step("flush-sheet", sluice_lambda::sheet_from_env, sluice_fn_flush_sheet::handler).await
}
