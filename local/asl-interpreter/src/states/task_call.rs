//! One call of a Task's handler, with its history events (Task* events,
//! or LambdaFunction* events for a Lambda ARN resource) and its timeout.

use super::task::Resource;
use crate::data_limit;
use crate::error_name;
use crate::executor::Visit;
use crate::failure::Failure;
use crate::history::{EventDetails, EventType, Line};
use crate::lambda;
use crate::task_registry::{TaskError, TaskHandler};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The events of one kind of call: scheduled, started, succeeded, failed,
/// timed out.
struct CallEvents([EventType; 5]);

const TASK_EVENTS: CallEvents = CallEvents([
    EventType::TaskScheduled,
    EventType::TaskStarted,
    EventType::TaskSucceeded,
    EventType::TaskFailed,
    EventType::TaskTimedOut,
]);

const LAMBDA_EVENTS: CallEvents = CallEvents([
    EventType::LambdaFunctionScheduled,
    EventType::LambdaFunctionStarted,
    EventType::LambdaFunctionSucceeded,
    EventType::LambdaFunctionFailed,
    EventType::LambdaFunctionTimedOut,
]);

pub(super) async fn call(
    visit: Visit<'_>,
    resource: &Resource,
    parameters: Value,
    timeout: Option<Duration>,
    line: &mut Line,
) -> Result<Value, Failure> {
    let registry = visit.run.registry;
    let missing = |key: &str| Failure::runtime(format!("no task handler is registered for {key:?}"));
    let events = if matches!(resource, Resource::LambdaFunction(_)) { &LAMBDA_EVENTS } else { &TASK_EVENTS };
    let call = Call { visit, events, resource, timeout };
    match resource {
        Resource::LambdaInvoke => {
            let Value::Object(mut parameters) = parameters else {
                return Err(Failure::runtime(format!(
                    "lambda:invoke Parameters must be an object, found {parameters}"
                )));
            };
            let Some(function) = parameters.get("FunctionName").and_then(Value::as_str).map(str::to_owned) else {
                return Err(Failure::runtime("lambda:invoke Parameters must have a FunctionName string"));
            };
            let handler = registry.resolve(&function).ok_or_else(|| missing(&function))?.clone();
            let scheduled = Value::Object(parameters.clone());
            let payload = parameters.remove("Payload").unwrap_or_else(|| Value::Object(Map::new()));
            let request_id = uuid::Uuid::new_v4().to_string();
            let shape = |output| lambda::invoke_result(output, &request_id);
            call.invoke(handler, &scheduled, payload, line, shape).await.map_err(lambda_failure)
        }
        Resource::LambdaFunction(arn) => {
            let handler = registry.resolve(arn).ok_or_else(|| missing(arn))?.clone();
            call.invoke(handler, &parameters, parameters.clone(), line, |output| output).await.map_err(lambda_failure)
        }
        Resource::Other(key) => {
            let handler = registry.resolve(key).ok_or_else(|| missing(key))?.clone();
            call.invoke(handler, &parameters, parameters.clone(), line, |output| output).await.map_err(|e| match e {
                // A handler that gives no cause reports none (as a Fail
                // state without Cause does).
                CallError::Handler(e) => Failure { cause: (!e.cause.is_empty()).then_some(e.cause), error: e.error },
                CallError::TimedOut => Failure::without_cause(error_name::TIMEOUT),
                CallError::DataLimit(failure) => failure,
            })
        }
    }
}

enum CallError {
    Handler(TaskError),
    TimedOut,
    /// The resource's result is over the payload quota: raised by Step
    /// Functions, not the function, so it is not wrapped as a Lambda error.
    DataLimit(Failure),
}

/// A failed Lambda function: its error type, and Lambda's error document
/// as the cause.
fn lambda_failure(error: CallError) -> Failure {
    match error {
        CallError::Handler(e) => Failure::new(e.error.clone(), lambda::failure_cause(&e)),
        CallError::TimedOut => Failure::without_cause(error_name::TIMEOUT),
        CallError::DataLimit(failure) => failure,
    }
}

/// One call's fixed parts.
struct Call<'a> {
    visit: Visit<'a>,
    events: &'a CallEvents,
    resource: &'a Resource,
    timeout: Option<Duration>,
}

impl Call<'_> {
    /// Calls the handler under the timeout, recording the events; `shape`
    /// turns the handler's output into the task's result.
    async fn invoke(
        &self,
        handler: Arc<dyn TaskHandler>,
        scheduled_input: &Value,
        input: Value,
        line: &mut Line,
        shape: impl FnOnce(Value) -> Value,
    ) -> Result<Value, CallError> {
        let [scheduled, started, succeeded, failed, timed_out] = self.events.0;
        let details = || EventDetails { resource: Some(self.resource.to_string()), ..EventDetails::default() };
        self.visit.record(line, scheduled, details().input(scheduled_input));
        self.visit.record(line, started, details());
        let result = crate::clock::within(self.visit.run.clock, self.timeout, handler.call(input)).await;
        match result {
            Some(Ok(output)) => {
                let output = shape(output);
                // The connector's output over the quota fails the task
                // (Step Functions records TaskFailed, with the resource as
                // the "state/task" of its cause).
                let resource = match self.resource {
                    Resource::LambdaInvoke => "lambda".to_owned(),
                    other => other.to_string(),
                };
                if let Err(failure) = data_limit::check(&output, || data_limit::result_cause(&resource)) {
                    self.visit.record(line, failed, details().failure(&failure.error, failure.cause.as_deref()));
                    return Err(CallError::DataLimit(failure));
                }
                self.visit.record(line, succeeded, details().output(&output));
                Ok(output)
            }
            Some(Err(e)) => {
                self.visit.record(line, failed, details().failure(&e.error, Some(&e.cause)));
                Err(CallError::Handler(e))
            }
            None => {
                self.visit.record(line, timed_out, details().failure(error_name::TIMEOUT, None));
                Err(CallError::TimedOut)
            }
        }
    }
}
