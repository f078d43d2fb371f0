//! A cold start that fails is reported as the Runtime API asks, before
//! the process exits: `POST /2018-06-01/runtime/init/error` with the
//! `{errorType, errorMessage}` document (`lambda_runtime` reports only its
//! own SnapStart failures there). Lambda then answers the invocation that
//! waited for this environment with that document, so the caller sees
//! which variable or endpoint was wrong, not only `Runtime.ExitError`.
//! The same message is also the function's one log line about it.

use std::time::Duration;

/// The error type of a failed cold start.
pub const INIT_ERROR_TYPE: &str = "Runtime.InitError";

/// How long the report may take: the process exits either way.
const REPORT_TIMEOUT: Duration = Duration::from_secs(2);

/// Posts `message` to the Runtime API named by `AWS_LAMBDA_RUNTIME_API`, if
/// it is set (a `bootstrap` started by hand has none). A report that
/// cannot be delivered changes nothing: the exit that follows fails the
/// cold start all the same.
pub async fn report_init_error(message: &str) {
    let Ok(api) = std::env::var("AWS_LAMBDA_RUNTIME_API") else { return };
    let Ok(client) = sluice_http::builder().timeout(REPORT_TIMEOUT).build() else { return };
    let document = serde_json::json!({"errorType": INIT_ERROR_TYPE, "errorMessage": message});
    let _ = client
        .post(format!("http://{api}/2018-06-01/runtime/init/error"))
        .header("Lambda-Runtime-Function-Error-Type", INIT_ERROR_TYPE)
        .json(&document)
        .send()
        .await;
}
