//! The Step Functions endpoint of `sluice dev`: the local interpreter's
//! executions over Step Functions' own wire protocol, AWS JSON 1.0 (`POST
//! /`, `X-Amz-Target: AWSStepFunctions.<Operation>`, `Content-Type:
//! application/x-amz-json-1.0`), so `aws-sdk-sfn` (the local pipe,
//! `sluice redrive`), boto3 and the AWS CLI start executions with only an
//! endpoint override. It mirrors the SQS endpoint of the embedded queue
//! (`sluice_sqs_emulator::sqs_api`).
//!
//! Operations: StartExecution, StartSyncExecution, DescribeExecution,
//! GetExecutionHistory, ListExecutions, ListStateMachines,
//! DescribeStateMachine. Any other is answered `UnknownOperationException`,
//! naming it. Errors carry Step Functions' codes
//! (`StateMachineDoesNotExist`, `ExecutionDoesNotExist`, `InvalidArn`,
//! `InvalidName`, `InvalidExecutionInput`, `ExecutionAlreadyExists`,
//! `InvalidToken`, `ValidationException` for a missing member).
//!
//! The state machines are the deployed definitions (type EXPRESS, as
//! `infra/template.yaml` declares them) with their local substitutions,
//! under `arn:aws:states:<region>:000000000000:stateMachine:<name>`.
//! Executions are `…:execution:<machine>:<name>` (AWS hands out an Express
//! execution as `…:express:<machine>:<name>:<id>`; the standard form lets
//! DescribeExecution and GetExecutionHistory find it, which AWS does not
//! offer for Express executions, nor ListExecutions, and which is what
//! they are here for).
//! The endpoint remembers the last [`DEFAULT_KEPT_EXECUTIONS`] executions
//! within about [`DEFAULT_KEPT_BYTES`] of memory (`executions`). Requests are not authenticated: it listens on
//! 127.0.0.1 for development.
//!
//! # Layout
//!
//! - `start`: StartExecution, StartSyncExecution.
//! - `describe`: DescribeExecution, GetExecutionHistory, ListExecutions.
//! - `machines`: ListStateMachines, DescribeStateMachine.
//! - `executions`: the remembered executions; `history_events`: their
//!   events in Step Functions' shape.
//! - `arn`: ARNs and execution names; `page`: `maxResults`/`nextToken`.
//! - `totals`: counts over every execution run, for what it would cost.
//! - `wire`: the request shapes; `error`: Step Functions' error shape
//!   and codes; `timestamp`: times as the protocol carries them.

mod arn;
mod describe;
mod error;
mod executions;
mod history_events;
mod machines;
mod page;
mod start;
mod timestamp;
mod totals;
mod wire;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::Response;
use error::ApiError;
use executions::ExecutionStore;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sluice_asl::Executor;
use sluice_sqs_emulator::aws_json::{self, TargetError};
use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;
pub use totals::{ExecutionCounts, ExecutionTotals};

/// The region in ARNs: the SQS endpoint's.
pub const REGION: &str = sluice_sqs_emulator::sqs_api::REGION;
/// Executions `sluice dev` remembers. A pipeline execution of a full batch
/// (10 shop events) records some 190 to 335 events, about 0.4 to 0.65 MB as
/// GetExecutionHistory answers them, and several times that in memory as
/// JSON values: 100 of them took sluice dev's RSS past 600 MB in the abuse
/// run (`crates/sluice/tests/abuse.rs`), hence the byte budget below too.
pub const DEFAULT_KEPT_EXECUTIONS: usize = 100;
/// About how much memory the remembered executions may take; beyond it the
/// oldest are forgotten (the newest is kept whatever its size).
pub const DEFAULT_KEPT_BYTES: usize = 64 * 1024 * 1024;

/// The endpoint's state: its state machines and the executions it remembers.
#[derive(Debug)]
pub struct StepFunctionsApi {
    region: String,
    machines: Vec<LocalStateMachine>,
    executions: Arc<ExecutionStore>,
    /// The executions StartExecution left running, waited for at shutdown.
    running: TaskTracker,
}

/// One state machine served.
#[derive(Debug)]
struct LocalStateMachine {
    name: String,
    arn: String,
    /// The definition as deployed, with the local substitutions.
    definition: String,
    executor: Executor,
    created: SystemTime,
}

impl LocalStateMachine {
    /// Every machine sluice deploys is an Express one (`infra/template.yaml`).
    const TYPE: &'static str = "EXPRESS";
}

impl StepFunctionsApi {
    /// An endpoint with no state machine yet, remembering the last
    /// `kept_executions` executions within [`DEFAULT_KEPT_BYTES`].
    pub fn new(kept_executions: usize) -> Self {
        Self {
            region: REGION.to_owned(),
            machines: Vec::new(),
            executions: Arc::new(ExecutionStore::new(kept_executions, DEFAULT_KEPT_BYTES)),
            running: TaskTracker::new(),
        }
    }

    /// Serves state machine `name`: `definition` (the text, for
    /// DescribeStateMachine) run by `executor`.
    pub fn with_state_machine(mut self, name: &str, definition: impl Into<String>, executor: Executor) -> Self {
        let (arn, definition, created) = (self.state_machine_arn(name), definition.into(), SystemTime::now());
        self.machines.push(LocalStateMachine { name: name.to_owned(), arn, definition, executor, created });
        self
    }

    /// Counts over every execution this endpoint runs, from now on.
    pub fn totals(&self) -> Arc<ExecutionTotals> {
        self.executions.totals.clone()
    }

    /// The ARN of state machine `name`.
    pub fn state_machine_arn(&self, name: &str) -> String {
        sluice_asl::arn::state_machine_arn(&self.region, name)
    }

    /// The machine a state machine ARN names.
    fn machine(&self, state_machine_arn: &str) -> Result<&LocalStateMachine, ApiError> {
        arn::state_machine(state_machine_arn)?;
        self.machines.iter().find(|m| m.arn == state_machine_arn).ok_or_else(|| {
            ApiError::state_machine_does_not_exist(format!("State Machine Does Not Exist: '{state_machine_arn}'"))
        })
    }

    /// The role the machines run as: named for the answers that carry one;
    /// nothing local assumes it.
    fn role_arn(&self) -> String {
        format!("arn:aws:iam::{}:role/sluice-local-state-machine", sluice_asl::arn::LOCAL_ACCOUNT)
    }
}

/// The endpoint as an axum router: every request is a `POST` carrying its
/// operation in `X-Amz-Target`.
pub fn router(api: Arc<StepFunctionsApi>) -> Router {
    Router::new().fallback(handle).with_state(api)
}

/// Serves `api` on `listener` until `shutdown` completes, then finishes the
/// requests in progress (StartSyncExecution's executions included) and
/// waits for the executions StartExecution left running.
pub async fn serve(
    listener: TcpListener,
    api: StepFunctionsApi,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let api = Arc::new(api);
    let served = axum::serve(listener, router(api.clone())).with_graceful_shutdown(shutdown).await;
    api.running.close();
    api.running.wait().await;
    served
}

async fn handle(
    State(api): State<Arc<StepFunctionsApi>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    aws_json::answer(body, |body| async move { dispatch(&api, &headers, &body).await }).await
}

async fn dispatch(api: &StepFunctionsApi, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let operation = aws_json::operation(headers, "AWSStepFunctions").map_err(|e| match e {
        TargetError::Missing => ApiError::unknown_operation(
            "No X-Amz-Target header: this endpoint speaks Step Functions' AWS JSON 1.0 protocol (X-Amz-Target: \
             AWSStepFunctions.<Operation>)",
        ),
        TargetError::OtherService(target) => ApiError::unknown_operation(format!(
            "X-Amz-Target {target:?} is not a Step Functions operation (AWSStepFunctions.<Operation>)"
        )),
    })?;
    match operation {
        "StartExecution" => start::start_execution(api, parse(body)?),
        "StartSyncExecution" => start::start_sync_execution(api, parse(body)?).await,
        "DescribeExecution" => describe::describe_execution(api, parse(body)?),
        "GetExecutionHistory" => describe::get_execution_history(api, parse(body)?),
        "ListExecutions" => describe::list_executions(api, parse(body)?),
        "ListStateMachines" => machines::list_state_machines(api, parse(body)?),
        "DescribeStateMachine" => machines::describe_state_machine(api, parse(body)?),
        other => Err(ApiError::unknown_operation(format!(
            "{other} is not supported by sluice's local Step Functions endpoint (it serves StartExecution, \
             StartSyncExecution, DescribeExecution, GetExecutionHistory, ListExecutions, ListStateMachines, \
             DescribeStateMachine)"
        ))),
    }
}

/// Parses a request body; an empty body is an empty request.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    aws_json::parse(body)
}
