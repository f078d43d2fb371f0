//! `bootstrap` of the ingest Lambda: read the environment, connect, serve
//! API Gateway events with the ingest router until the runtime stops us.

use sluice_fn_ingest::metrics::EmfReporter;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    // CloudWatch stamps every line itself; colours would show as escapes.
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .without_time()
        .with_ansi(false)
        .init();
    let ingest = match start().await {
        Ok(ingest) => ingest,
        Err(e) => return cannot_start(e).await,
    };
    // After each request, one EMF line with what it changed (CloudWatch metrics).
    // Its API keys are read once, at cold start: a key a sender presents
    // that is not among them is that sender's error, not a reason to call
    // Secrets Manager (which any caller could then make us do).
    let stage = match sluice_config::Serving::from_source(&sluice_config::EnvSource::from_process()) {
        Ok(serving) => serving.stage,
        Err(e) => return cannot_start(e).await,
    };
    let reporter = Arc::new(EmfReporter::new(ingest.counters(), stage));
    let router = ingest.router().layer(axum::middleware::map_response(move |response: axum::response::Response| {
        let reporter = reporter.clone();
        async move {
            if let Some(line) = reporter.take() {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
                println!("{}", line.render(now));
            }
            response
        }
    }));
    if let Err(e) = lambda_http::run(router).await {
        eprintln!("sluice-fn-ingest: the Lambda runtime stopped: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Init errors land in the function's log and the Runtime API's
/// `/init/error`, and fail the cold start.
async fn cannot_start(e: impl std::fmt::Display) -> ExitCode {
    let message = format!("sluice-fn-ingest cannot start: {e}");
    eprintln!("{message}");
    sluice_lambda::report_init_error(&message).await;
    ExitCode::FAILURE
}

async fn start() -> Result<sluice_ingest::Ingest, sluice_fn_ingest::StartError> {
    let env = sluice_fn_ingest::IngestSettings::from_source(&sluice_config::EnvSource::from_process())?;
    sluice_fn_ingest::start(&env).await
}
