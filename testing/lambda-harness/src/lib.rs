//! Test support shared by the step Lambdas' tests (a dev-dependency of
//! each crate in `functions/` that serves a step).
//!
//! - [`Harness`]: the services built the way every `main` builds them,
//!   from environment variables (`sluice_config`), over a real Redis
//!   (`sluice-testkit`) and the sandbox Cafe24 (`sluice-sandbox`).
//! - [`item`], [`event`], [`diagnostic`], [`sqs_event`]: a work item as the state machine
//!   passes it, a `LambdaEvent` around a payload, a failed answer's report,
//!   an SQS event source's batch.
//! - [`RuntimeApi`] / [`Harness::invoke_bootstrap`]: a function's real
//!   `bootstrap` binary, run against a stand-in for Lambda's Runtime API
//!   (the one part that is AWS itself), speaking its documented wire
//!   format: what the function sends back there is what Step Functions
//!   reads as the task's result or `Error`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use serde_json::Value;
use sluice_config::{EnvSource, SheetSettings, ShopSettings};
use sluice_domain::ResourceKind;
use sluice_pipeline::step_io::ItemPlan;
use sluice_pipeline::{ServiceCore, SheetService, ShopService};
use sluice_redis::Connection;
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig};
use sluice_testkit::pipeline::{NoFlushQueue, sandbox_token};
use sluice_testkit::{TestRedis, now_ms};
use std::collections::{HashMap, VecDeque};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Longest a test waits for a bootstrap to answer (a cold debug build
/// connecting to Redis takes well under a second).
pub const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(30);

/// A test's Redis, sandbox Cafe24, the function's environment and the
/// services built from it (the sheet service without a flush queue).
#[derive(Debug)]
pub struct Harness {
    pub redis: TestRedis,
    pub sandbox: Cafe24Sandbox,
    /// The `SLUICE_*` variables the services were built from.
    pub vars: HashMap<&'static str, String>,
    pub core: ServiceCore<Connection>,
    pub shop: ShopService<Connection>,
    pub sheet: SheetService<Connection>,
}

impl Harness {
    pub async fn start(test: &str, malls: &[&str]) -> Self {
        let redis = TestRedis::new(test);
        let config = Cafe24SandboxConfig { malls: malls.iter().map(|m| m.to_string()).collect(), ..Default::default() };
        let (client_id, client_secret) = (config.client_id.clone(), config.client_secret.expose().to_owned());
        let sandbox = Cafe24Sandbox::start(config).await.unwrap();
        let vars = HashMap::from([
            ("SLUICE_REDIS_URL", redis.url()),
            ("SLUICE_KEY_PREFIX", redis.keyspace().prefix().to_owned()),
            ("SLUICE_CAFE24_CLIENT_ID", client_id),
            ("SLUICE_CAFE24_CLIENT_SECRET", client_secret),
            ("SLUICE_CAFE24_BASE_URL", sandbox.base_url_template()),
        ]);
        let source = EnvSource::from_pairs(vars.clone());
        let shop_settings = ShopSettings::from_source(&source).unwrap();
        let core = sluice_lambda::start::core(&shop_settings.step).await.unwrap();
        let shop = sluice_lambda::start::shop(&shop_settings, core.clone()).await.unwrap();
        // The sheet service as `main` builds it, but for the flush queue
        // (a test stand-in that records nothing).
        let with_queue = EnvSource::from_pairs(
            vars.iter()
                .map(|(k, v)| (*k, v.clone()))
                .chain([("SLUICE_FLUSH_QUEUE_URL", "http://127.0.0.1:1/000000000000/flushes".to_owned())]),
        );
        let sheet_settings = SheetSettings::from_source(&with_queue).unwrap();
        let sheet = sluice_lambda::start::sheet(&sheet_settings, core.clone(), Arc::new(NoFlushQueue)).await.unwrap();
        Self { redis, sandbox, vars, core, shop, sheet }
    }

    /// Stores a token pair the sandbox issued for `mall`; returns its
    /// access token.
    /// A new token pair for `mall` from the sandbox, not stored (a person
    /// about to run `sluice tokens set`).
    pub fn fresh_token(&self, mall: &str) -> sluice_redis::StoredToken {
        sandbox_token(&self.sandbox, mall)
    }

    pub async fn seed_token(&self, mall: &str) -> String {
        let token = sandbox_token(&self.sandbox, mall);
        self.shop.set_token(mall, &token).await.unwrap();
        token.access_token
    }

    /// A new product in `mall`'s sandbox store: its id and version.
    pub async fn product(&self, mall: &str) -> (String, u64) {
        let created = self.sandbox.create(mall, ResourceKind::Product, serde_json::Map::new()).await.unwrap();
        (created.id, created.version)
    }

    /// The stages recorded in an event's trace, in order.
    pub async fn stages(&self, event_id: &str) -> Vec<String> {
        self.core.traces().read(event_id).await.unwrap().into_iter().map(|e| e.stage).collect()
    }

    /// Runs the function's `bootstrap` (`bin`, from `env!("CARGO_BIN_EXE_…")`)
    /// with this environment against a stand-in Runtime API, hands it one
    /// invocation of `payload` and returns what it sent back.
    pub async fn invoke_bootstrap(&self, bin: &str, payload: Value) -> Reply {
        let mut api = RuntimeApi::start(vec![payload]).await;
        let _bootstrap = Bootstrap::spawn(bin, &api.lambda_env(), &self.vars);
        tokio::time::timeout(BOOTSTRAP_TIMEOUT, api.replies.recv())
            .await
            .unwrap_or_else(|_| panic!("{bin} did not answer within {BOOTSTRAP_TIMEOUT:?}"))
            .unwrap()
    }

    pub async fn stop(self) {
        self.sandbox.stop().await;
    }
}

/// The work item every step test passes, shared with the pipeline's tests.
pub use sluice_testkit::pipeline::item_plan;

/// [`item_plan`] as JSON.
pub fn item(mall: &str, id: &str, delivery: &str) -> Value {
    serde_json::to_value(item_plan(mall, id, delivery, 1)).unwrap()
}

/// The event id of an item built by [`item`].
pub fn event_id(item: &Value) -> String {
    let plan: ItemPlan = serde_json::from_value(item.clone()).unwrap();
    plan.trace_id()
}

/// An invocation as `lambda_runtime` hands it to the handler.
pub fn event(payload: Value) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, Context::default())
}

/// An SQS event of `records` (message id, body) from the standard queue
/// `queue`, as an event source mapping hands it to its function.
pub fn sqs_event<T: serde::de::DeserializeOwned>(queue: &str, records: &[(&str, &str)]) -> LambdaEvent<T> {
    let records: Vec<_> = records
        .iter()
        .map(|(id, body)| {
            serde_json::json!({"messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1773120600000"},
            "messageAttributes": {}, "eventSource": "aws:sqs",
            "eventSourceARN": format!("arn:aws:sqs:ap-northeast-2:123456789012:{queue}"), "awsRegion": "ap-northeast-2"})
        })
        .collect();
    LambdaEvent::new(serde_json::from_value(serde_json::json!({ "Records": records })).unwrap(), Context::default())
}

/// The report of a failed invocation, as the runtime sends it, checked to
/// carry `error_type`.
pub fn diagnostic<E: Into<Diagnostic>>(answer: Result<Value, E>, error_type: &str) -> Diagnostic {
    let report: Diagnostic = answer.expect_err("the invocation should have failed").into();
    assert_eq!(report.error_type, error_type, "{report:?}");
    report
}

/// What a bootstrap sent back for an invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `POST /runtime/invocation/{id}/response`: the function's result.
    Response { request_id: String, body: Value },
    /// `POST /runtime/invocation/{id}/error`: the error report, whose
    /// `errorType` Step Functions surfaces as the task's `Error` (and the
    /// whole document, `raw`, as its `Cause`).
    Error { request_id: String, body: Value, raw: String },
}

/// A stand-in for the Lambda Runtime API, version 2018-06-01, on
/// 127.0.0.1: `GET …/invocation/next` hands out the queued payloads with
/// the headers Lambda sends (and, like Lambda, blocks when there are
/// none); responses and errors are recorded.
#[derive(Debug)]
pub struct RuntimeApi {
    addr: std::net::SocketAddr,
    pub replies: mpsc::UnboundedReceiver<Reply>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct ApiState {
    pending: Arc<Mutex<VecDeque<(String, Value)>>>,
    replies: mpsc::UnboundedSender<Reply>,
}

impl RuntimeApi {
    pub async fn start(payloads: Vec<Value>) -> Self {
        let pending = payloads.into_iter().enumerate().map(|(i, p)| (format!("req-{i}"), p)).collect();
        let (tx, replies) = mpsc::unbounded_channel();
        let state = ApiState { pending: Arc::new(Mutex::new(pending)), replies: tx };
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, replies, server }
    }

    /// The variables Lambda sets for every function.
    pub fn lambda_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_LAMBDA_RUNTIME_API", self.addr.to_string()),
            ("AWS_LAMBDA_FUNCTION_NAME", "sluice-step".into()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128".into()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ]
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn next(State(state): State<ApiState>) -> Response {
    let Some((id, payload)) = state.pending.lock().unwrap().pop_front() else {
        // Lambda freezes the environment here until the next invocation.
        return std::future::pending().await;
    };
    let deadline = (now_ms() + 60_000).to_string();
    let headers = [
        ("lambda-runtime-aws-request-id", id),
        ("lambda-runtime-deadline-ms", deadline),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:ap-northeast-2:123456789012:function:sluice-step".into(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1".into(),
        ),
        ("content-type", "application/json".into()),
    ];
    (headers, payload.to_string()).into_response()
}

async fn response(State(state): State<ApiState>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let body = serde_json::from_slice(&body).expect("a response body must be JSON");
    state.replies.send(Reply::Response { request_id: id, body }).unwrap();
    StatusCode::ACCEPTED
}

async fn error(State(state): State<ApiState>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let raw = String::from_utf8(body.to_vec()).expect("an error body must be UTF-8");
    let body = serde_json::from_str(&raw).expect("an error body must be JSON");
    state.replies.send(Reply::Error { request_id: id, body, raw }).unwrap();
    StatusCode::ACCEPTED
}

/// A running bootstrap, killed when dropped (Lambda freezes and later
/// discards an environment; it never asks the process to exit).
#[derive(Debug)]
pub struct Bootstrap(Child);

impl Bootstrap {
    pub fn spawn(bin: &str, lambda: &[(&'static str, String)], vars: &HashMap<&'static str, String>) -> Self {
        let child = Command::new(bin)
            .env_clear()
            .envs(lambda.iter().map(|(k, v)| (*k, v.as_str())))
            .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e}"));
        Self(child)
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `bin` with `vars` only (no Runtime API needed: it must stop
/// before serving) and asserts that it failed, without a panic, with one
/// error line, which says `says`. Returns everything it printed.
pub fn assert_refuses_to_start(bin: &str, vars: &[(&str, &str)], says: &str) -> String {
    let output = Command::new(bin)
        .env_clear()
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{bin}: {e}"));
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(!output.status.success(), "{printed}");
    assert!(!printed.contains("panicked"), "a panic is not a refusal: {printed}");
    let errors: Vec<&str> = printed.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "one error line: {printed}");
    assert!(errors[0].contains(says), "{printed}");
    printed
}
