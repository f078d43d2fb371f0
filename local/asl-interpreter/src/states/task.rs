//! Task: InputPath → Parameters → the handler → ResultSelector →
//! ResultPath → OutputPath, with Retry, Catch and TimeoutSeconds.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html>.

use super::result_processing::ResultProcessing;
use super::task_call;
use crate::data_limit;
use crate::definition::MAX_TIMEOUT_SECONDS;
use crate::definition::state::StateParse;
use crate::executor::Visit;
use crate::failure::Failure;
use crate::history::Line;
use crate::lambda::{self, LAMBDA_INVOKE};
use crate::payload_template::{self, PayloadTemplate};
use crate::recovery::{Attempted, Recovery};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

#[derive(Debug)]
pub(crate) struct TaskState {
    pub(crate) resource: Resource,
    parameters: Option<PayloadTemplate>,
    result: ResultProcessing,
    timeout: Option<Duration>,
    pub(crate) recovery: Recovery,
}

/// What a Task calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    /// `arn:aws:states:::lambda:invoke`: the handler named by the
    /// `FunctionName` parameter gets the `Payload` parameter, and the
    /// result is the Invoke response.
    LambdaInvoke,
    /// A Lambda function ARN: the handler gets the parameters and its
    /// output is the result.
    LambdaFunction(String),
    /// Any other resource, served by the handler registered for it.
    Other(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LambdaInvoke => f.write_str(LAMBDA_INVOKE),
            Self::LambdaFunction(resource) | Self::Other(resource) => f.write_str(resource),
        }
    }
}

impl TaskState {
    pub(crate) fn parse(parse: &StateParse<'_>) -> Option<Self> {
        let fields = &parse.fields;
        let resource = fields.required_string("Resource").and_then(|text| {
            if text.ends_with(".waitForTaskToken") {
                fields
                    .problem("Resource", "not supported: the callback pattern (.waitForTaskToken) is not implemented");
                return None;
            }
            Some(match text {
                LAMBDA_INVOKE => Resource::LambdaInvoke,
                _ if lambda::is_function_arn(text) => Resource::LambdaFunction(text.to_owned()),
                _ => Resource::Other(text.to_owned()),
            })
        });
        let parameters = fields.template("Parameters");
        if resource == Some(Resource::LambdaInvoke) {
            let names_function = fields.object("Parameters").is_some_and(|p| {
                p.get("FunctionName").is_some_and(Value::is_string) || p.contains_key("FunctionName.$")
            });
            if !names_function {
                fields.problem("Parameters", "lambda:invoke needs Parameters with FunctionName (or FunctionName.$)");
            }
        }
        let timeout = fields.unsigned("TimeoutSeconds", MAX_TIMEOUT_SECONDS);
        if timeout == Some(0) {
            fields.problem("TimeoutSeconds", "must be a positive integer");
        }
        let recovery = Recovery::parse(parse);
        Some(Self {
            resource: resource?,
            parameters,
            result: ResultProcessing::parse(fields),
            timeout: timeout.map(Duration::from_secs),
            recovery: recovery?,
        })
    }

    /// `FunctionName` when it is written in the definition.
    pub(crate) fn literal_function_name(&self) -> Option<&str> {
        match self.parameters.as_ref()? {
            PayloadTemplate::Static(Value::Object(parameters)) => parameters.get("FunctionName")?.as_str(),
            PayloadTemplate::Object(fields) => fields.iter().find_map(|(name, template)| match template {
                PayloadTemplate::Static(Value::String(function)) if name == "FunctionName" => Some(function.as_str()),
                _ => None,
            }),
            _ => None,
        }
    }
}

impl Attempted for TaskState {
    fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    async fn attempt(
        &self,
        visit: Visit<'_>,
        raw: &Value,
        retry_count: u32,
        line: &mut Line,
    ) -> Result<Value, Failure> {
        let context = visit.context().with_retry_count(retry_count);
        let parameters = payload_template::apply(&self.parameters, visit.input(raw)?, &context)?;
        data_limit::check(&parameters, || data_limit::input_cause(&visit.state.name))?;
        let result = task_call::call(visit, &self.resource, parameters, self.timeout, line).await?;
        self.result.output(visit, raw, result, &context)
    }
}
