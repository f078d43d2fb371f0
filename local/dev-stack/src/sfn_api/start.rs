//! StartExecution (answers at once; the execution runs on in the
//! background) and StartSyncExecution (answers when the execution has
//! ended, 200 even when it failed or timed out, with its status, error and
//! cause, as Step Functions does for an Express machine).
//!
//! Names: a caller's name must follow Step Functions' rules, and no
//! remembered execution of the machine may have it (`ExecutionAlreadyExists`),
//! except that StartExecution of a running execution's name with the same
//! input answers that execution again (Step Functions' idempotent start).
//! Without a name, each execution gets a UUID.
//!
//! An input that is not JSON is `InvalidExecutionInput`. One over 256 KiB
//! starts, and fails at once with `States.DataLimitExceeded` (the
//! interpreter's rule, which the pipe's batch limit is sized by).

use super::describe::summary;
use super::error::ApiError;
use super::executions::{ExecutionRecord, Progress};
use super::timestamp::epoch_seconds;
use super::wire::{self, required};
use super::{LocalStateMachine, StepFunctionsApi, arn};
use serde_json::{Value, json};
use sluice_asl::{Execution, ExecutionOptions};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn start_execution(api: &StepFunctionsApi, request: wire::StartExecution) -> Result<Value, ApiError> {
    let record = match begin(api, request, true)? {
        Begun::New { record, run } => {
            api.running.spawn(run);
            record
        }
        Begun::AlreadyRunning(record) => record,
    };
    Ok(json!({ "executionArn": record.arn, "startDate": epoch_seconds(record.started) }))
}

pub(super) async fn start_sync_execution(
    api: &StepFunctionsApi,
    request: wire::StartExecution,
) -> Result<Value, ApiError> {
    let Begun::New { record, run } = begin(api, request, false)? else {
        return Err(ApiError::internal("a synchronous start found a running execution to answer"));
    };
    run.await;
    let progress = record.progress();
    let mut answer = summary(&record, &progress, true);
    if let Progress::Ended { stopped, .. } = progress {
        // Express bills duration in 100 ms steps, memory in 64 MB ones.
        let ran = stopped.duration_since(record.started).unwrap_or(Duration::ZERO).as_millis() as u64;
        let billed = ran.div_ceil(100).max(1) * 100;
        answer.insert(
            "billingDetails".into(),
            json!({ "billedMemoryUsedInMB": 64, "billedDurationInMilliseconds": billed }),
        );
    }
    Ok(Value::Object(answer))
}

/// A checked start.
enum Begun<R> {
    /// A new execution, remembered, and the run that ends it.
    New { record: Arc<ExecutionRecord>, run: R },
    /// StartExecution's idempotent case: the running one, again.
    AlreadyRunning(Arc<ExecutionRecord>),
}

fn begin(
    api: &StepFunctionsApi,
    request: wire::StartExecution,
    idempotent: bool,
) -> Result<Begun<impl Future<Output = ()> + Send + 'static>, ApiError> {
    let machine = api.machine(&required(request.state_machine_arn, "stateMachineArn")?)?;
    let name = match request.name {
        Some(name) => {
            arn::check_name(&name)?;
            name
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    let text = request.input.unwrap_or_else(|| "{}".to_owned());
    let input: Value = serde_json::from_str(&text)
        .map_err(|e| ApiError::invalid_execution_input(format!("Invalid State Machine Execution Input: '{e}'")))?;
    let execution_arn = sluice_asl::arn::execution_arn(&api.region, &machine.name, &name);
    let record = ExecutionRecord::new(execution_arn, name, machine.arn.clone(), text);
    match api.executions.insert(record) {
        Ok(record) => {
            let run = execute(api, machine, record.clone(), input);
            Ok(Begun::New { record, run })
        }
        Err((existing, refused)) if idempotent && is_running_with(&existing, &refused.input) => {
            Ok(Begun::AlreadyRunning(existing))
        }
        Err((existing, _)) => {
            Err(ApiError::execution_already_exists(format!("Execution Already Exists: '{}'", existing.arn)))
        }
    }
}

fn is_running_with(record: &ExecutionRecord, input: &str) -> bool {
    matches!(record.progress(), Progress::Running) && record.input == input
}

/// The run of one execution, owning all it needs, so that StartExecution
/// can leave it running after answering.
fn execute(
    api: &StepFunctionsApi,
    machine: &LocalStateMachine,
    record: Arc<ExecutionRecord>,
    input: Value,
) -> impl Future<Output = ()> + Send + 'static {
    let executor = machine.executor.clone();
    let executions = api.executions.clone();
    let options = ExecutionOptions {
        name: Some(record.name.clone()),
        state_machine_name: Some(machine.name.clone()),
        region: Some(api.region.clone()),
        ..ExecutionOptions::default()
    };
    async move {
        let execution: Execution = executor.run(input, options).await;
        executions.end(&record, execution);
    }
}
