//! The Lambda Runtime API (version 2018-06-01) of one execution
//! environment, on its own port of 127.0.0.1, as Lambda gives each
//! environment its own endpoint (`AWS_LAMBDA_RUNTIME_API`):
//!
//! - `GET /runtime/invocation/next` hands out the next invocation with the
//!   headers Lambda sends (`Lambda-Runtime-Aws-Request-Id`,
//!   `-Deadline-Ms`, `-Invoked-Function-Arn`, `-Trace-Id`), and, like
//!   Lambda, holds the request while there is none. The first call ends
//!   the environment's init phase.
//! - `POST /runtime/invocation/{id}/response` and `…/{id}/error` answer it.
//! - `POST /runtime/init/error` reports a failed init; the runtime then exits.
//!
//! See <https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>.

use crate::function_error::{FunctionError, kinds};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// The most a synchronous invocation may answer (Lambda's 6 MB).
pub(crate) const MAX_RESPONSE_BYTES: usize = 6 * 1024 * 1024;

/// One invocation on its way to the function.
#[derive(Debug)]
pub(crate) struct Invocation {
    pub(crate) request_id: String,
    pub(crate) payload: Bytes,
    /// How long the function has, from when it takes the invocation.
    pub(crate) timeout: Duration,
    pub(crate) reply: oneshot::Sender<Result<Bytes, FunctionError>>,
}

type Replies = Arc<Mutex<HashMap<String, oneshot::Sender<Result<Bytes, FunctionError>>>>>;

#[derive(Debug, Clone)]
struct ApiState {
    function_arn: Arc<str>,
    invocations: Arc<tokio::sync::Mutex<mpsc::Receiver<Invocation>>>,
    in_flight: Replies,
    initialized: Arc<AtomicBool>,
    init_error: Arc<Mutex<Option<FunctionError>>>,
}

/// A running Runtime API; stopped when dropped.
#[derive(Debug)]
pub(crate) struct RuntimeApi {
    pub(crate) addr: SocketAddr,
    /// What the server's handlers share.
    state: ApiState,
    server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    /// Serves the environment of `function_arn` on a free port; invocations
    /// sent on the returned channel are handed out by `/next`.
    pub(crate) async fn start(function_arn: &str) -> std::io::Result<(Self, mpsc::Sender<Invocation>)> {
        let (sender, receiver) = mpsc::channel(1);
        let state = ApiState {
            function_arn: function_arn.into(),
            invocations: Arc::new(tokio::sync::Mutex::new(receiver)),
            in_flight: Arc::default(),
            initialized: Arc::default(),
            init_error: Arc::default(),
        };
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            // Sizes are checked by the handlers, which answer as Lambda does.
            .layer(DefaultBodyLimit::disable())
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "a local Lambda Runtime API stopped");
            }
        });
        Ok((Self { addr, state, server }, sender))
    }

    /// Whether the runtime has asked for its first invocation (its init is over).
    pub(crate) fn initialized(&self) -> bool {
        self.state.initialized.load(Ordering::SeqCst)
    }

    /// What the runtime reported to `/init/error`, if it did.
    pub(crate) fn init_error(&self) -> Option<FunctionError> {
        self.state.init_error.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Fails every invocation handed out and not answered with `error`.
    pub(crate) fn fail_in_flight(&self, error: &FunctionError) {
        let replies: Vec<_> = self.state.in_flight.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for (_, reply) in replies {
            let _ = reply.send(Err(error.clone()));
        }
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn next(State(state): State<ApiState>) -> Response {
    state.initialized.store(true, Ordering::SeqCst);
    let Some(invocation) = state.invocations.lock().await.recv().await else {
        // The environment is being shut down: hold the request, as Lambda
        // holds a frozen environment's, until the process is stopped.
        return std::future::pending().await;
    };
    let deadline = SystemTime::now() + invocation.timeout;
    let deadline_ms = deadline.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    state
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(invocation.request_id.clone(), invocation.reply);
    let trace = format!("Root=1-{:08x}-{}", deadline_ms / 1000, &invocation.request_id.replace('-', "")[..24]);
    let headers = [
        ("lambda-runtime-aws-request-id", invocation.request_id),
        ("lambda-runtime-deadline-ms", deadline_ms.to_string()),
        ("lambda-runtime-invoked-function-arn", state.function_arn.to_string()),
        ("lambda-runtime-trace-id", format!("{trace};Parent=0000000000000000;Sampled=0")),
        ("content-type", "application/json".to_owned()),
    ];
    (headers, invocation.payload).into_response()
}

fn take(state: &ApiState, id: &str) -> Option<oneshot::Sender<Result<Bytes, FunctionError>>> {
    state.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
}

fn unknown_request(id: &str) -> Response {
    let body = json!({"errorType": "InvalidRequestID", "errorMessage": format!("no invocation {id} is in flight")});
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

fn accepted() -> Response {
    (StatusCode::ACCEPTED, axum::Json(json!({"status": "OK"}))).into_response()
}

async fn response(State(state): State<ApiState>, Path(id): Path<String>, body: Bytes) -> Response {
    let Some(reply) = take(&state, &id) else { return unknown_request(&id) };
    if body.len() > MAX_RESPONSE_BYTES {
        let message = format!(
            "Response payload size ({} bytes) exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes).",
            body.len()
        );
        let _ = reply.send(Err(FunctionError::new(kinds::RESPONSE_TOO_LARGE, message)));
        return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(json!({"errorType": kinds::RESPONSE_TOO_LARGE})))
            .into_response();
    }
    let _ = reply.send(Ok(body));
    accepted()
}

fn error_type_header(headers: &HeaderMap) -> Option<&str> {
    headers.get("lambda-runtime-function-error-type").and_then(|v| v.to_str().ok())
}

async fn error(State(state): State<ApiState>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(reply) = take(&state, &id) else { return unknown_request(&id) };
    let _ = reply.send(Err(FunctionError::from_report(&body, error_type_header(&headers))));
    accepted()
}

async fn init_error(State(state): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    let report = FunctionError::from_report(&body, error_type_header(&headers));
    *state.init_error.lock().unwrap_or_else(PoisonError::into_inner) = Some(report);
    accepted()
}
