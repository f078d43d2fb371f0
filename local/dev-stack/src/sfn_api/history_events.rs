//! The interpreter's history events in the shape of Step Functions'
//! `HistoryEvent` (GetExecutionHistory): `timestamp`, `type`, `id`,
//! `previousEventId`, and the one `…EventDetails` member its type carries,
//! with inputs and outputs as JSON text. The interpreter records the same
//! event types; what it does not record (a task's region and timeout, a
//! Lambda's request id) is left out, and Step Functions marks those
//! members optional.

use super::timestamp::epoch_seconds;
use serde_json::{Map, Value, json};
use sluice_asl::{EventDetails, EventType as T, HistoryEvent};

/// What the events are placed in.
#[derive(Debug, Clone, Copy)]
pub(super) struct Context<'a> {
    pub(super) region: &'a str,
    pub(super) role_arn: &'a str,
    /// `includeExecutionData`: false leaves inputs and outputs out.
    pub(super) with_data: bool,
}

/// One event in Step Functions' shape.
pub(super) fn event(event: &HistoryEvent, context: Context<'_>) -> Value {
    let mut out = json!({
        "timestamp": epoch_seconds(event.timestamp),
        "type": event.event_type.name(),
        "id": event.id,
        "previousEventId": event.previous_event_id,
    });
    if let Some((member, details)) = details(event.event_type, &event.details, context) {
        out[member] = Value::Object(details);
    }
    out
}

/// The details member of an event of type `kind`.
fn details(kind: T, d: &EventDetails, context: Context<'_>) -> Option<(&'static str, Map<String, Value>)> {
    let data = Data { details: d, with_data: context.with_data };
    let (member, fields) = match kind {
        T::ExecutionStarted => {
            ("executionStartedEventDetails", data.input().with("roleArn", Some(context.role_arn.into())))
        }
        T::ExecutionSucceeded => ("executionSucceededEventDetails", data.output()),
        T::ExecutionFailed => ("executionFailedEventDetails", data.failure()),
        T::ExecutionTimedOut => ("executionTimedOutEventDetails", data.failure()),
        T::PassStateEntered
        | T::TaskStateEntered
        | T::ChoiceStateEntered
        | T::WaitStateEntered
        | T::SucceedStateEntered
        | T::FailStateEntered
        | T::ParallelStateEntered
        | T::MapStateEntered => ("stateEnteredEventDetails", data.input().with("name", name(d))),
        T::PassStateExited
        | T::TaskStateExited
        | T::ChoiceStateExited
        | T::WaitStateExited
        | T::SucceedStateExited
        | T::ParallelStateExited
        | T::MapStateExited => ("stateExitedEventDetails", data.output().with("name", name(d))),
        T::TaskScheduled => {
            let parameters = d.input.as_ref().map(|p| Value::String(p.to_string()));
            let fields = task(d).with("region", Some(context.region.into()));
            ("taskScheduledEventDetails", fields.with("parameters", parameters))
        }
        T::TaskStarted => ("taskStartedEventDetails", task(d)),
        T::TaskSucceeded => ("taskSucceededEventDetails", task(d).merged(data.output())),
        T::TaskFailed => ("taskFailedEventDetails", task(d).merged(data.failure())),
        T::TaskTimedOut => ("taskTimedOutEventDetails", task(d).merged(data.failure())),
        T::LambdaFunctionScheduled => {
            let resource = d.resource.clone().map(Value::String);
            ("lambdaFunctionScheduledEventDetails", data.input().with("resource", resource))
        }
        T::LambdaFunctionSucceeded => ("lambdaFunctionSucceededEventDetails", data.output()),
        T::LambdaFunctionFailed => ("lambdaFunctionFailedEventDetails", data.failure()),
        T::LambdaFunctionTimedOut => ("lambdaFunctionTimedOutEventDetails", data.failure()),
        T::MapStateStarted => ("mapStateStartedEventDetails", Map::new().with("length", d.length.map(|n| json!(n)))),
        T::MapIterationStarted => ("mapIterationStartedEventDetails", iteration(d)),
        T::MapIterationSucceeded => ("mapIterationSucceededEventDetails", iteration(d)),
        T::MapIterationFailed => ("mapIterationFailedEventDetails", iteration(d)),
        // Step Functions gives these no details.
        T::LambdaFunctionStarted
        | T::ParallelStateStarted
        | T::ParallelStateSucceeded
        | T::ParallelStateFailed
        | T::MapStateSucceeded
        | T::MapStateFailed => return None,
    };
    Some((member, fields))
}

/// Inputs, outputs and failures of one event.
struct Data<'a> {
    details: &'a EventDetails,
    with_data: bool,
}

impl Data<'_> {
    fn input(&self) -> Map<String, Value> {
        self.payload("input", self.details.input.as_ref())
    }

    fn output(&self) -> Map<String, Value> {
        self.payload("output", self.details.output.as_ref())
    }

    /// `input`/`output` as JSON text with its `…Details` (never truncated
    /// here), or nothing without execution data.
    fn payload(&self, member: &str, value: Option<&Value>) -> Map<String, Value> {
        let Some(value) = value.filter(|_| self.with_data) else { return Map::new() };
        Map::new()
            .with(member, Some(Value::String(value.to_string())))
            .with(&format!("{member}Details"), Some(json!({ "truncated": false })))
    }

    fn failure(&self) -> Map<String, Value> {
        let text = |s: &Option<String>| s.clone().map(Value::String);
        Map::new().with("error", text(&self.details.error)).with("cause", text(&self.details.cause))
    }
}

fn name(d: &EventDetails) -> Option<Value> {
    d.name.clone().map(Value::String)
}

/// A Map iteration's `name` (the Map state) and `index`.
fn iteration(d: &EventDetails) -> Map<String, Value> {
    Map::new().with("name", name(d)).with("index", d.index.map(|i| json!(i)))
}

/// `resourceType` and `resource` of a Task event: an optimized integration
/// `arn:aws:states:::lambda:invoke` is type `lambda`, resource `invoke`.
fn task(d: &EventDetails) -> Map<String, Value> {
    let full = d.resource.as_deref().unwrap_or_default();
    let (kind, resource) = full
        .strip_prefix("arn:aws:states:::")
        .and_then(|integration| integration.split_once(':'))
        .unwrap_or(("unknown", full));
    Map::new().with("resourceType", Some(kind.into())).with("resource", Some(resource.into()))
}

/// Building a details object member by member, leaving absent ones out.
trait Members: Sized {
    fn with(self, member: &str, value: Option<Value>) -> Self;
    fn merged(self, other: Self) -> Self;
}

impl Members for Map<String, Value> {
    fn with(mut self, member: &str, value: Option<Value>) -> Self {
        if let Some(value) = value {
            self.insert(member.to_owned(), value);
        }
        self
    }

    fn merged(mut self, other: Self) -> Self {
        self.extend(other);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const CONTEXT: Context<'static> =
        Context { region: "us-east-1", role_arn: "arn:aws:iam::0:role/r", with_data: true };

    fn at(event_type: T, details: EventDetails) -> HistoryEvent {
        let timestamp = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        HistoryEvent { id: 2, previous_event_id: 1, timestamp, event_type, details }
    }

    #[test]
    fn a_lambda_invoke_task_is_shaped_as_step_functions_records_it() {
        let details = EventDetails {
            resource: Some("arn:aws:states:::lambda:invoke".into()),
            input: Some(json!({"FunctionName": "Fetch", "Payload": {"a": 1}})),
            ..EventDetails::default()
        };
        let shaped = event(&at(T::TaskScheduled, details), CONTEXT);
        assert_eq!(
            shaped,
            json!({
                "timestamp": 1_700_000_000.25, "type": "TaskScheduled", "id": 2, "previousEventId": 1,
                "taskScheduledEventDetails": {
                    "resourceType": "lambda", "resource": "invoke", "region": "us-east-1",
                    "parameters": "{\"FunctionName\":\"Fetch\",\"Payload\":{\"a\":1}}",
                },
            })
        );
    }

    #[test]
    fn states_carry_their_name_and_data_unless_left_out() {
        let details = EventDetails { name: Some("Store".into()), output: Some(json!([1])), ..EventDetails::default() };
        let shaped = event(&at(T::TaskStateExited, details.clone()), CONTEXT);
        assert_eq!(
            shaped["stateExitedEventDetails"],
            json!({"name": "Store", "output": "[1]", "outputDetails": {"truncated": false}})
        );
        let without = event(&at(T::TaskStateExited, details), Context { with_data: false, ..CONTEXT });
        assert_eq!(without["stateExitedEventDetails"], json!({"name": "Store"}));
    }

    #[test]
    fn failures_and_iterations_and_bare_events() {
        let failed = EventDetails { error: Some("States.Timeout".into()), ..EventDetails::default() };
        assert_eq!(
            event(&at(T::ExecutionTimedOut, failed), CONTEXT)["executionTimedOutEventDetails"],
            json!({"error": "States.Timeout"})
        );
        let iteration = EventDetails { name: Some("Map".into()), index: Some(3), ..EventDetails::default() };
        assert_eq!(
            event(&at(T::MapIterationStarted, iteration), CONTEXT)["mapIterationStartedEventDetails"],
            json!({"name": "Map", "index": 3})
        );
        let bare = event(&at(T::ParallelStateStarted, EventDetails::default()), CONTEXT);
        assert_eq!(bare.as_object().unwrap().len(), 4, "{bare}");
    }
}
