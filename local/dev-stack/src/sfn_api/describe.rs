//! DescribeExecution, GetExecutionHistory and ListExecutions, for the
//! executions the endpoint remembers (`executions`). In AWS none
//! answers for an Express execution (its history goes to CloudWatch
//! Logs); locally they do, which is what they are here for: seeing what a
//! run did.

use super::error::ApiError;
use super::executions::{ExecutionRecord, Progress, status};
use super::history_events::{self, Context};
use super::page::{page, with_next};
use super::timestamp::epoch_seconds;
use super::wire::{self, required};
use super::{StepFunctionsApi, arn};
use serde_json::{Map, Value, json};
use sluice_asl::{EventDetails, EventType, HistoryEvent, Outcome};
use std::sync::Arc;

pub(super) fn describe_execution(api: &StepFunctionsApi, request: wire::DescribeExecution) -> Result<Value, ApiError> {
    let record = remembered(api, &required(request.execution_arn, "executionArn")?)?;
    let with_data = match request.included_data.as_deref() {
        None | Some("ALL_DATA") => true,
        Some("METADATA_ONLY") => false,
        Some(other) => {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{other}' at 'includedData' failed to satisfy constraint: \
                 Member must satisfy enum value set: [ALL_DATA, METADATA_ONLY]"
            )));
        }
    };
    Ok(Value::Object(summary(&record, &record.progress(), with_data)))
}

pub(super) fn get_execution_history(
    api: &StepFunctionsApi,
    request: wire::GetExecutionHistory,
) -> Result<Value, ApiError> {
    let record = remembered(api, &required(request.execution_arn, "executionArn")?)?;
    let mut events = match record.progress() {
        Progress::Ended { execution, .. } => execution.history.clone(),
        // The interpreter hands its history over at the end: until then,
        // the start is all there is to show.
        Progress::Running => vec![started_event(&record)],
    };
    if request.reverse_order {
        events.reverse();
    }
    let (events, next) = page(&events, request.max_results, request.next_token.as_deref())?;
    let role_arn = api.role_arn();
    let context =
        Context { region: &api.region, role_arn: &role_arn, with_data: request.include_execution_data.unwrap_or(true) };
    let events: Vec<Value> = events.iter().map(|e| history_events::event(e, context)).collect();
    Ok(with_next(json!({ "events": events }), next))
}

pub(super) fn list_executions(api: &StepFunctionsApi, request: wire::ListExecutions) -> Result<Value, ApiError> {
    let machine = api.machine(&required(request.state_machine_arn, "stateMachineArn")?)?;
    let listed: Vec<Map<String, Value>> = api
        .executions
        .newest_first()
        .iter()
        .filter(|record| record.machine_arn == machine.arn)
        .map(|record| summary(record, &record.progress(), false))
        .filter(|item| request.status_filter.as_deref().is_none_or(|status| item["status"] == status))
        .collect();
    let (page, next) = page(&listed, request.max_results, request.next_token.as_deref())?;
    let items: Vec<Value> = page
        .iter()
        .map(|item| {
            let keep = ["executionArn", "stateMachineArn", "name", "status", "startDate", "stopDate"];
            Value::Object(
                item.iter().filter(|(k, _)| keep.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
            )
        })
        .collect();
    Ok(with_next(json!({ "executions": items }), next))
}

/// The execution `arn` names, or the error saying why there is none.
fn remembered(api: &StepFunctionsApi, execution_arn: &str) -> Result<Arc<ExecutionRecord>, ApiError> {
    arn::execution(execution_arn)?;
    api.executions.get(execution_arn).ok_or_else(|| {
        ApiError::execution_does_not_exist(format!(
            "Execution Does Not Exist: '{execution_arn}' (sluice dev remembers its last {} executions)",
            api.executions.capacity()
        ))
    })
}

fn started_event(record: &ExecutionRecord) -> HistoryEvent {
    let input = serde_json::from_str(&record.input).ok();
    HistoryEvent {
        id: 1,
        previous_event_id: 0,
        timestamp: record.started,
        event_type: EventType::ExecutionStarted,
        details: EventDetails { input, ..EventDetails::default() },
    }
}

/// What DescribeExecution answers, and StartSyncExecution with it: the
/// execution's identity, status, times, and (`with_data`) its input and
/// output, or its error and cause.
pub(super) fn summary(record: &ExecutionRecord, progress: &Progress, with_data: bool) -> Map<String, Value> {
    let mut out = Map::new();
    let mut put = |member: &str, value: Value| {
        out.insert(member.to_owned(), value);
    };
    put("executionArn", record.arn.clone().into());
    put("stateMachineArn", record.machine_arn.clone().into());
    put("name", record.name.clone().into());
    put("startDate", epoch_seconds(record.started));
    put("inputDetails", json!({ "included": with_data }));
    if with_data {
        put("input", record.input.clone().into());
    }
    match progress {
        Progress::Running => put("status", "RUNNING".into()),
        Progress::Ended { execution, stopped } => {
            put("status", status(execution).into());
            put("stopDate", epoch_seconds(*stopped));
            match &execution.outcome {
                Outcome::Succeeded(output) => {
                    put("outputDetails", json!({ "included": with_data }));
                    if with_data {
                        put("output", output.to_string().into());
                    }
                }
                Outcome::Failed { error, cause } => {
                    put("error", error.clone().into());
                    if let Some(cause) = cause {
                        put("cause", cause.clone().into());
                    }
                }
            }
        }
    }
    out
}
